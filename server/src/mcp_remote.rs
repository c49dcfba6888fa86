//! Asking a remote MCP server what it offers: `berth plugins observe --remote` records its
//! first answer (its code is not pinned: trust on first use), and `berth serve` under a
//! policy's `tools = "pinned"` asks again at each conversation start. The HTTP transport
//! is the transport crate's; what is asked is the runtime's, as for a stdio server.

use berth_review::observe::{Exchange, ObserveError, ask, manifest_of};
use std::sync::Arc;

use berth_transport::mcp_http::McpHttp;
use berth_transport::policy::FetchPolicy;
use serde_json::{Value, json};

/// What the server at `url` offers, as a canonical manifest, or why it could not be asked.
/// `${VAR}` in `headers` is filled from the environment only with `env`; without it, a
/// header that holds one is left out (a credential is never sent unasked). Under a
/// server's source policy (`guard`), its address is checked and no redirect is followed.
pub fn observe(
    url: &str,
    headers: &[(String, String)],
    env: bool,
    guard: Option<&Arc<FetchPolicy>>,
) -> Result<Value, String> {
    let headers: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(name, value)| match (value.contains("${"), env) {
            (false, _) => Some((name.clone(), value.clone())),
            (true, true) => expand(value).map(|v| (name.clone(), v)),
            (true, false) => None,
        })
        .collect();
    let timeout = berth_review::observe::timeout();
    let http = match guard {
        Some(policy) => McpHttp::guarded(url, headers, timeout, policy)?,
        None => McpHttp::new(url, headers, timeout)?,
    };
    let mut server = Remote { http, next_id: 1 };
    let answers = ask(&mut server).map_err(|e| e.to_string())?;
    Ok(manifest_of(&answers))
}

/// `${VAR}` filled from the environment; `None` when one is unset.
fn expand(value: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}')? + start;
        out.push_str(&std::env::var(&rest[start + 2..end]).ok()?);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

struct Remote {
    http: McpHttp,
    next_id: u64,
}

impl Exchange for Remote {
    fn call(&mut self, method: &str, params: Option<Value>) -> Result<Option<Value>, ObserveError> {
        let Some(params) = params else {
            self.http
                .send(&json!({"jsonrpc": "2.0", "method": method}))
                .map_err(ObserveError::Protocol)?;
            return Ok(None);
        };
        let id = self.next_id;
        self.next_id += 1;
        let answer = self
            .http
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .map_err(ObserveError::Protocol)?
            .unwrap_or(Value::Null);
        if let Some(error) = answer.get("error") {
            return Err(ObserveError::Protocol(format!(
                "`{method}` failed: {}",
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
            )));
        }
        Ok(Some(answer.get("result").cloned().unwrap_or(Value::Null)))
    }
}
