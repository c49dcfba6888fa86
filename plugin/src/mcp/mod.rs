//! MCP server definitions as the OpenHands SDK reads them, per input format: the Claude
//! Code layout's `.mcp.json` (and the servers of a marketplace entry and of a sub-agent's
//! front matter, read the same way) in `claude_layout.rs`, Agent Plugins' `mcp.json` in
//! `agent_plugins_layout.rs`.

mod agent_plugins_layout;
mod claude_layout;

pub use crate::model::AGENT_PLUGINS_MCP_SCHEMA;
pub use claude_layout::{UNWRAPPED, agent_servers, entry_servers, unwrapped_servers};

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::PluginError;
use crate::manifest::Format;
use crate::model::{Reader, layout};
use crate::pystr::lax_bool;

/// One MCP server, with every field the OpenHands SDK's `MCPServer` keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// `stdio`, `http`, `streamable-http` or `sse`.
    pub transport: String,
    /// The program (stdio).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment; empty values are dropped, as the SDK drops empty secrets.
    pub env: Map<String, Value>,
    /// Its working folder.
    pub cwd: Option<String>,
    /// The endpoint (remote transports).
    pub url: Option<String>,
    /// Request headers (remote transports); empty values are dropped like `env`'s.
    pub headers: Map<String, Value>,
    /// `description`.
    pub description: Option<String>,
    /// `icon`.
    pub icon: Option<String>,
    /// `timeout`, in seconds.
    pub timeout: Option<f64>,
    /// `sse_read_timeout`, in seconds.
    pub sse_read_timeout: Option<f64>,
    /// `keep_alive`.
    pub keep_alive: Option<bool>,
    /// `auth`: the SDK's credential object (`{"strategy": ...}`), from agent definitions.
    pub auth: Option<Map<String, Value>>,
    /// `enabled` (default true): a disabled server stays in the set but the agent must
    /// not start it.
    pub enabled: bool,
    /// Agent Plugins servers are literal: the agent must not expand `${VAR}`s in them.
    pub literal: bool,
}

/// The credential strategies the SDK's `auth` field takes.
const AUTH_STRATEGIES: [&str; 6] = ["none", "api_key", "bearer", "basic", "header", "oauth2"];

impl McpServer {
    fn new(transport: String) -> Self {
        Self {
            transport,
            command: None,
            args: Vec::new(),
            env: Map::new(),
            cwd: None,
            url: None,
            headers: Map::new(),
            description: None,
            icon: None,
            timeout: None,
            sse_read_timeout: None,
            keep_alive: None,
            auth: None,
            enabled: true,
            literal: false,
        }
    }

    /// The server with `${NAME}` and `${NAME:-default}` filled in the way the OpenHands SDK
    /// does when a conversation starts (`expand_mcp_servers`): from `lookup` (its secrets,
    /// then its environment), else the default, else left as written. An `env` or header
    /// value left empty is then dropped, as the SDK drops empty secrets. Literal (Agent
    /// Plugins) servers are returned unchanged. berth's plugin set leaves these variables
    /// in place, since secrets belong to the agent, not to the lock.
    pub fn with_variables(&self, lookup: impl Fn(&str) -> Option<String>) -> McpServer {
        if self.literal {
            return self.clone();
        }
        let fill = |text: &str| fill_variables(text, &lookup);
        let fill_value = |v: &Value| fill_json(v, &fill);
        let fill_map = |map: &Map<String, Value>| -> Map<String, Value> {
            secret_map(map.iter().map(|(k, v)| (k.clone(), fill_value(v))))
        };
        McpServer {
            transport: self.transport.clone(),
            command: self.command.as_deref().map(fill),
            args: self.args.iter().map(|a| fill(a)).collect(),
            env: fill_map(&self.env),
            cwd: self.cwd.as_deref().map(fill),
            url: self.url.as_deref().map(fill),
            headers: fill_map(&self.headers),
            description: self.description.as_deref().map(fill),
            icon: self.icon.as_deref().map(fill),
            timeout: self.timeout,
            sse_read_timeout: self.sse_read_timeout,
            keep_alive: self.keep_alive,
            auth: self.auth.as_ref().map(|auth| {
                let filled = fill_json(&Value::Object(auth.clone()), &fill);
                clean_auth(filled.as_object().cloned().unwrap_or_default())
            }),
            enabled: self.enabled,
            literal: false,
        }
    }

    /// The server as the plugin set writes it (`mcp_servers.<name>`, without `plugin`).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "url": self.url,
            "type": self.transport,
            "cwd": self.cwd,
            "headers": self.headers,
            "description": self.description,
            "icon": self.icon,
            "timeout": self.timeout,
            "sse_read_timeout": self.sse_read_timeout,
            "keep_alive": self.keep_alive,
            "auth": self.auth,
            "enabled": self.enabled,
            "literal": self.literal,
        })
    }

    /// A server read back from the plugin set's JSON (what [`McpServer::to_json`] wrote),
    /// for an agent that fills its variables from the set.
    pub fn from_json(value: &Value) -> Result<McpServer, String> {
        let map = value.as_object().ok_or("an MCP server must be an object")?;
        let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
        let strings = |key: &str| -> Vec<String> {
            map.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let object = |key: &str| map.get(key).and_then(Value::as_object).cloned();
        Ok(McpServer {
            transport: text("type").ok_or("an MCP server needs a `type`")?,
            command: text("command"),
            args: strings("args"),
            env: object("env").unwrap_or_default(),
            cwd: text("cwd"),
            url: text("url"),
            headers: object("headers").unwrap_or_default(),
            description: text("description"),
            icon: text("icon"),
            timeout: map.get("timeout").and_then(Value::as_f64),
            sse_read_timeout: map.get("sse_read_timeout").and_then(Value::as_f64),
            keep_alive: map.get("keep_alive").and_then(Value::as_bool),
            auth: object("auth"),
            enabled: map.get("enabled").and_then(Value::as_bool).unwrap_or(true),
            literal: map.get("literal").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// Whether the SDK keeps a secret value (`env`, `headers`, credentials): not empty, not
/// only whitespace, not its redaction placeholder.
fn kept_secret(value: &str) -> bool {
    !value.trim().is_empty() && value != "**********"
}

/// A map of secret strings without the values the SDK drops.
fn secret_map(entries: impl Iterator<Item = (String, Value)>) -> Map<String, Value> {
    entries
        .filter(|(_, v)| v.as_str().is_none_or(kept_secret))
        .collect()
}

/// A credential object without the secrets the SDK drops.
fn clean_auth(mut auth: Map<String, Value>) -> Map<String, Value> {
    for key in ["value", "password"] {
        if auth
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|v| !kept_secret(v))
        {
            auth.remove(key);
        }
    }
    if let Some(Value::Object(headers)) = auth.get("headers") {
        let kept = secret_map(headers.clone().into_iter());
        auth.insert("headers".into(), Value::Object(kept));
    }
    auth
}

fn fill_json(value: &Value, fill: &impl Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(fill(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill_json(v, fill)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill_json(v, fill)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `${NAME}` and `${NAME:-default}` in `text` resolved through `lookup`.
fn fill_variables(text: &str, lookup: &impl Fn(&str) -> Option<String>) -> String {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        regex::Regex::new(r"\$\{([a-zA-Z_][a-zA-Z0-9_]*)(?::-([^}]*))?\}").expect("valid regex")
    });
    pattern
        .replace_all(text, |caps: &regex::Captures<'_>| {
            lookup(&caps[1])
                .or_else(|| caps.get(2).map(|d| d.as_str().to_owned()))
                .unwrap_or_else(|| caps[0].to_owned())
        })
        .into_owned()
}

/// Loads the MCP servers of the plugin's layout (`format`), in file order, read through
/// `reader`. `data_dir` is the plugin's writable data folder (`${PLUGIN_DATA}`). Invalid
/// servers are dropped one by one with a warning.
pub fn load_mcp(
    reader: &mut Reader<'_>,
    format: Format,
    data_dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, McpServer)>, PluginError> {
    let file = layout(format).mcp;
    let Some(read) = reader.json_utf8(file)? else {
        return Ok(Vec::new());
    };
    let root = reader.root();
    match format {
        Format::ClaudeCode => Ok(claude_layout::claude_code(root, file, &read, warnings)),
        Format::AgentPlugins => Ok(agent_plugins_layout::agent_plugins(
            root, file, &read, data_dir, warnings,
        )),
    }
}

fn string_list(value: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or(format!("`{key}` must hold strings only"))
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be a list of strings")),
    }
}

fn string_map(value: Option<&Value>, key: &str) -> Result<Map<String, Value>, String> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => {
            if let Some((k, _)) = map.iter().find(|(_, v)| !v.is_string()) {
                return Err(format!("`{key}.{k}` must be a string"));
            }
            Ok(map.clone())
        }
        Some(_) => Err(format!("`{key}` must be an object of strings")),
    }
}

fn optional_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Err(format!("`{key}` is empty")),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// A string field that may be empty (pydantic's plain `str`).
fn any_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// Pydantic's lax float: numbers, booleans and numeric strings. A value JSON cannot
/// write (infinite, NaN) is taken as unset, as the SDK's JSON dump writes it.
fn lax_float(map: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    let number = match map.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::Bool(b)) => Some(if *b { 1.0 } else { 0.0 }),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(_) => None,
    };
    match number {
        Some(n) if n.is_finite() => Ok(Some(n)),
        Some(_) => Ok(None),
        None => Err(format!("`{key}` must be a number of seconds")),
    }
}

fn optional_bool(map: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => lax_bool(v)
            .map(Some)
            .ok_or(format!("`{key}` must be true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::McpServer;
    use super::agent_plugins_layout::check_remote_url;
    use super::claude_layout::claude_server;

    #[test]
    fn claude_servers_are_checked_one_by_one() {
        let ok =
            claude_server(&serde_json::json!({"type": "http", "url": "https://x"})).expect("valid");
        assert_eq!(ok.transport, "http");
        let untyped =
            claude_server(&serde_json::json!({"command": "node", "args": ["a"]})).expect("valid");
        assert_eq!(untyped.transport, "stdio");
        assert!(claude_server(&serde_json::json!({"type": "stdio"})).is_err());
        assert!(claude_server(&serde_json::json!({"command": "x", "args": [1, 2]})).is_err());
        assert!(claude_server(&serde_json::json!({"command": "x", "env": {"A": 1}})).is_err());
        assert!(
            claude_server(&serde_json::json!({"type": "websocket", "url": "wss://x"})).is_err()
        );
    }

    #[test]
    fn variables_fill_from_lookup_then_default() {
        let server = claude_server(&serde_json::json!({
            "command": "node",
            "args": ["${A:-a-default}", "${B}", "${C:-c}", "$D"],
            "env": {"T": "${B}"}
        }))
        .expect("valid");
        let filled = server.with_variables(|name| (name == "C").then(|| "from-secret".to_owned()));
        assert_eq!(filled.args, ["a-default", "${B}", "from-secret", "$D"]);
        assert_eq!(filled.env["T"], "${B}");
    }

    #[test]
    fn every_sdk_field_is_kept_and_empty_secrets_dropped() {
        let server = claude_server(&serde_json::json!({
            "command": "node",
            "env": {"KEEP": "x", "EMPTY": "", "BLANK": " ", "LATER": "${UNSET:-}"},
            "timeout": "20", "sse_read_timeout": 1, "keep_alive": "yes",
            "description": "d", "icon": "i", "enabled": "off", "cwd": "",
            "unknown": 1
        }))
        .expect("valid");
        assert_eq!(server.timeout, Some(20.0));
        assert_eq!(server.sse_read_timeout, Some(1.0));
        assert_eq!(server.keep_alive, Some(true));
        assert!(!server.enabled);
        assert_eq!(server.cwd.as_deref(), Some(""));
        assert_eq!(server.env.keys().collect::<Vec<_>>(), ["KEEP", "LATER"]);
        let filled = server.with_variables(|_| None);
        assert_eq!(filled.env.keys().collect::<Vec<_>>(), ["KEEP"]);
        assert_eq!(
            McpServer::from_json(&server.to_json()).expect("back"),
            server
        );
        assert!(claude_server(&serde_json::json!({"command": "x", "enabled": null})).is_err());
        assert!(claude_server(&serde_json::json!({"command": "x", "keep_alive": 2})).is_err());
        assert!(claude_server(&serde_json::json!({"command": "x", "description": 5})).is_err());
        let authed = claude_server(&serde_json::json!({
            "url": "https://x", "auth": {"strategy": "bearer", "value": ""}
        }))
        .expect("valid");
        assert_eq!(
            authed.auth,
            serde_json::json!({"strategy": "bearer"})
                .as_object()
                .cloned()
        );
        assert!(
            claude_server(&serde_json::json!({"url": "https://x", "auth": {"strategy": "x"}}))
                .is_err()
        );
    }

    #[test]
    fn remote_urls() {
        assert!(check_remote_url("https://mcp.example.com/x").is_ok());
        assert!(check_remote_url("http://localhost:8080/x").is_ok());
        assert!(check_remote_url("http://127.0.0.1/x").is_ok());
        assert!(check_remote_url("http://mcp.example.com/plain").is_err());
        assert!(check_remote_url("https://u:p@h/x").is_err());
        assert!(check_remote_url("https://h/x#f").is_err());
    }
}
