//! One JSON-RPC conversation with a remote MCP server over its HTTP transport
//! ("streamable HTTP"): each message is a POST, a request's answer comes back as JSON or
//! as a server-sent event stream, and the session id the server hands out goes with every
//! later message. What berth asks a remote server when it records what it offers.

use std::time::Duration;

use serde_json::Value;

/// A remote MCP server's endpoint and the headers every message carries.
pub struct McpHttp {
    client: reqwest::blocking::Client,
    url: String,
    headers: Vec<(String, String)>,
    session: Option<String>,
}

impl std::fmt::Debug for McpHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold credentials: only their names.
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("McpHttp")
            .field("url", &self.url)
            .field("headers", &names)
            .finish_non_exhaustive()
    }
}

impl McpHttp {
    /// The endpoint `url`, with `headers` on every message, each exchange bounded by
    /// `timeout`.
    pub fn new(
        url: &str,
        headers: Vec<(String, String)>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let client = crate::http::client_builder()
            .timeout(timeout)
            .build()
            .map_err(|e| format!("could not make an HTTP client: {e}"))?;
        Ok(Self {
            client,
            url: url.to_owned(),
            headers,
            session: None,
        })
    }

    /// As [`McpHttp::new`], under a server's source policy: `http` or `https` only, the
    /// host's addresses checked as a fetch's are (no internal address unless the policy
    /// allows local sources), and no redirect followed. What `berth serve` asks a remote
    /// server through: the URL is a plugin's word, not the operator's.
    pub fn guarded(
        url: &str,
        headers: Vec<(String, String)>,
        timeout: Duration,
        policy: &std::sync::Arc<crate::policy::FetchPolicy>,
    ) -> Result<Self, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "`{}:` is not a scheme an MCP server is asked over",
                parsed.scheme()
            ));
        }
        let host = parsed.host_str().unwrap_or_default();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
            policy.check_address(bare, ip).map_err(|e| e.to_string())?;
        }
        let client = crate::http::client_builder()
            .timeout(timeout)
            .dns_resolver(policy.resolver())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("could not make an HTTP client: {e}"))?;
        Ok(Self {
            client,
            url: url.to_owned(),
            headers,
            session: None,
        })
    }

    /// Sends one message; for a request (one with an `id`), returns the server's answer
    /// to it, else `None`.
    pub fn send(&mut self, message: &Value) -> Result<Option<Value>, String> {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        let response = request.send().map_err(|e| {
            let error = &e as &(dyn std::error::Error + 'static);
            // A policy's refusal (an internal address) before what the network said.
            crate::policy::refusal_in(error)
                .map(|refused| refused.to_string())
                .or_else(|| crate::http::unreachable_reason([error]))
                .unwrap_or_else(|| e.without_url().to_string())
        })?;
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.session = Some(session.to_owned());
        }
        let status = response.status();
        if !status.is_success() {
            return Err(format!("it answered {status}"));
        }
        let Some(id) = message.get("id") else {
            return Ok(None);
        };
        let stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let body = response
            .text()
            .map_err(|e| format!("its answer broke off: {}", e.without_url()))?;
        let messages: Vec<Value> = if stream {
            events(&body)
        } else {
            match serde_json::from_str::<Value>(&body) {
                Ok(Value::Array(all)) => all,
                Ok(one) => vec![one],
                Err(e) => return Err(format!("its answer is not JSON: {e}")),
            }
        };
        messages
            .into_iter()
            .find(|m| m.get("id") == Some(id) && m.get("method").is_none())
            .map(Some)
            .ok_or_else(|| "it sent no answer to the request".to_owned())
    }
}

/// The JSON messages of a server-sent event stream (each event's `data:` lines joined).
fn events(body: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut data = String::new();
    for line in body.lines().chain(std::iter::once("")) {
        if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        } else if line.is_empty() && !data.is_empty() {
            if let Ok(value) = serde_json::from_str(&data) {
                found.push(value);
            }
            data.clear();
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::policy::FetchPolicy;

    /// Under a server's policy, a plugin's URL cannot reach an internal address, nor speak
    /// another scheme; with local sources allowed, loopback is fine.
    #[test]
    fn a_guarded_client_refuses_internal_addresses() {
        let guarded = |url: &str, policy: &Arc<FetchPolicy>| {
            super::McpHttp::guarded(url, Vec::new(), Duration::from_secs(1), policy)
        };
        let strict = Arc::new(FetchPolicy::new(Vec::new(), false));
        for url in [
            "http://127.0.0.1:9/mcp",
            "http://[::1]:9/mcp",
            "http://169.254.169.254/",
        ] {
            let refused = guarded(url, &strict).expect_err(url);
            assert!(refused.contains("internal address"), "{url}: {refused}");
        }
        let mut via_name =
            guarded("http://localhost:9/mcp", &strict).expect("a name is checked when it resolves");
        let refused = via_name
            .send(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
            .expect_err("localhost resolves to loopback");
        assert!(refused.contains("internal address"), "{refused}");
        assert!(guarded("file:///etc/passwd", &strict).is_err());
        let local = Arc::new(FetchPolicy::new(Vec::new(), true));
        assert!(guarded("http://127.0.0.1:9/mcp", &local).is_ok());
    }

    #[test]
    fn events_are_read_from_a_stream() {
        let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n: ping\n\ndata: {\"a\":\ndata: 1}\n\n";
        let found = super::events(body);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0]["id"], 1);
        assert_eq!(found[1]["a"], 1);
    }
}
