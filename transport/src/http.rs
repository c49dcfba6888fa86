//! HTTP: the one client configuration every download uses, and what an upstream said when
//! it failed, with credentials removed.

use std::time::Duration;

use crate::url::SourceUrl;

/// A client builder with berth's user agent and connect time-out; no overall time-out, so a
/// large download is bounded by its size limit and the caller's cancel flag instead.
pub fn client_builder() -> reqwest::blocking::ClientBuilder {
    reqwest::blocking::Client::builder()
        .user_agent(concat!("berth/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30))
        .timeout(None)
}

/// What a library that talks to an upstream (gix, reqwest, uv) said, with every credential
/// removed. The library's own error is deliberately not kept as a source: its text and its
/// causes can carry the URL's user, password or an expanded `${VAR}`. Only the kind of a
/// local I/O error among its causes is kept (as a bare `io::Error`, its source), so a full
/// disk while a pack is written is still a full disk to the caller.
#[derive(Debug, Clone)]
pub struct Upstream {
    text: String,
    io: Option<std::sync::Arc<std::io::Error>>,
}

impl Upstream {
    /// `text` (a library's message) scrubbed of `url`'s credentials and secrets.
    pub fn new(text: &str, url: &SourceUrl) -> Self {
        Self {
            text: url.scrub(text),
            io: None,
        }
    }

    /// `text` with the kind of the first I/O error among `causes` kept.
    pub fn with_causes<'a>(
        text: &str,
        url: &SourceUrl,
        causes: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>,
    ) -> Self {
        let io = causes
            .into_iter()
            .find_map(|e| e.downcast_ref::<std::io::Error>())
            .map(|io| std::sync::Arc::new(std::io::Error::from(io.kind())));
        Self {
            io,
            ..Self::new(text, url)
        }
    }

    /// A message that carries no URL (a client that could not be built, say), with any
    /// URL credentials in it removed all the same.
    pub fn from_text(text: String) -> Self {
        Self {
            text: crate::url::scrub(&text, &[]),
            io: None,
        }
    }

    /// The kind of the local I/O error among the causes, if there was one.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.io.as_ref().map(|io| io.kind())
    }
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Upstream {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io
            .as_deref()
            .map(|io| io as &(dyn std::error::Error + 'static))
    }
}

/// Why a host could not be reached, in a few words, when an error or its causes say so:
/// a connection refused or reset, a host name that does not resolve, a TLS certificate
/// that is not trusted, a network that is down. `None`: some other failure (the host
/// answered, or the problem is not the network's).
pub fn unreachable_reason<'a>(
    causes: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> Option<String> {
    use std::io::ErrorKind;
    for error in causes {
        let mut current = Some(error);
        while let Some(e) = current {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                let why = match io.kind() {
                    ErrorKind::ConnectionRefused => Some("the connection was refused"),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
                        Some("the connection was reset")
                    }
                    ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => {
                        Some("the network is unreachable")
                    }
                    ErrorKind::NetworkDown => Some("the network is down"),
                    _ => None,
                };
                if let Some(why) = why {
                    return Some(why.to_owned());
                }
            }
            let text = e.to_string();
            if text.contains("dns error") || text.contains("failed to lookup address") {
                return Some("its host name does not resolve".to_owned());
            }
            if let Some((_, detail)) = text.split_once("invalid peer certificate: ") {
                return Some(format!("its TLS certificate is not trusted ({detail})"));
            }
            if text.contains("tcp connect error") && text.contains("Connection refused") {
                return Some("the connection was refused".to_owned());
            }
            current = e.source();
        }
    }
    None
}

/// Whether an error's causes include an I/O time-out.
pub fn is_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        current = e.source();
    }
    false
}
