//! Which `Host` headers a server without an API key answers (DNS rebinding).
//!
//! A web page can point a name it controls at 127.0.0.1 and then call this server from the
//! browser as its own origin, so the same-origin rule no longer protects it. The name the
//! page used still arrives in the `Host` header: without an API key, the server answers
//! only requests whose `Host` names it (its bound address, `localhost`, `127.0.0.1`,
//! `[::1]`, or a name the operator gave with `--allowed-host-header`). With an API key the
//! key protects every route, and the header is not checked.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::header;
use axum::http::uri::Authority;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::AppError;

/// The `Host` values a server without an API key answers.
#[derive(Debug, Clone)]
pub(crate) struct HostRule {
    /// The address the server listens on, when known (not in handler tests).
    bound: Option<SocketAddr>,
    /// `--allowed-host-header` names, lower case: `name` (any port) or `name:port`.
    names: Vec<String>,
}

/// The names that always mean this machine, on any port.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The longest `Host` value repeated back in an error message.
const MAX_ECHOED: usize = 255;

impl HostRule {
    pub(crate) fn new(bound: Option<SocketAddr>, names: &[String]) -> Self {
        Self {
            bound,
            names: names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether a request whose `Host` (or HTTP/2 `:authority`) is `host` is for this server.
    pub(crate) fn allows(&self, host: &str) -> bool {
        // A `Host` is `name[:port]`; userinfo has no place in it.
        if host.contains('@') {
            return false;
        }
        let Ok(authority) = host.parse::<Authority>() else {
            return false;
        };
        let name = authority.host().to_ascii_lowercase();
        let port = authority.port_u16();
        if LOOPBACK_NAMES.contains(&name.as_str()) {
            return true;
        }
        if let Some(bound) = self.bound {
            let bound_name = match bound {
                SocketAddr::V4(v4) => v4.ip().to_string(),
                SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
            };
            // A browser leaves out the port when it is the scheme's default.
            if name == bound_name && port.unwrap_or(80) == bound.port() {
                return true;
            }
        }
        self.names.iter().any(|allowed| {
            match allowed.parse::<Authority>() {
                // `name:port` names that port only; `name` any port.
                Ok(a) if a.port_u16().is_some() => a.host() == name && a.port_u16() == port,
                _ => *allowed == name,
            }
        })
    }
}

/// Answers 421 to a request whose `Host` does not name this server.
pub(crate) async fn check_host(rule: Arc<HostRule>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(ToString::to_string));
    match host {
        Some(host) if rule.allows(&host) => next.run(request).await,
        Some(host) => {
            tracing::warn!("refused a request for host {host:?} (DNS rebinding?)");
            let shown = if host.len() <= MAX_ECHOED {
                format!(" `{host}`")
            } else {
                String::new()
            };
            AppError::misdirected(format!(
                "this server does not answer to the host{shown}; its operator can name it with `--allowed-host-header`, or set an API key"
            ))
            .into_response()
        }
        None => AppError::misdirected(
            "the request has no `Host` header naming this server (such as `localhost`)",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::HostRule;

    #[test]
    fn loopback_names_the_bound_address_and_allowed_names_pass() {
        let rule = HostRule::new(
            Some("127.0.0.1:8000".parse().expect("addr")),
            &["Berth.Internal".to_owned(), "proxy.example:443".to_owned()],
        );
        for host in [
            "localhost",
            "localhost:8000",
            "LOCALHOST:9",
            "127.0.0.1",
            "127.0.0.1:8000",
            "[::1]",
            "[::1]:8000",
            "berth.internal",
            "berth.internal:8000",
            "proxy.example:443",
        ] {
            assert!(rule.allows(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8000",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "proxy.example",
            "proxy.example:8000",
            "user@localhost",
            "",
            "127.0.0.2:8000",
        ] {
            assert!(!rule.allows(host), "{host}");
        }
    }

    #[test]
    fn the_bound_address_is_named_with_its_port() {
        let rule = HostRule::new(Some("192.0.2.7:8000".parse().expect("addr")), &[]);
        assert!(rule.allows("192.0.2.7:8000"));
        assert!(!rule.allows("192.0.2.7:8001"));
        assert!(!rule.allows("192.0.2.7"));
        let v6 = HostRule::new(Some("[2001:db8::1]:80".parse().expect("addr")), &[]);
        assert!(v6.allows("[2001:db8::1]"));
        assert!(v6.allows("[2001:db8::1]:80"));
        assert!(!v6.allows("[2001:db8::2]:80"));
    }
}
