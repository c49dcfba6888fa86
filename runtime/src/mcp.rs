//! MCP server definitions: Claude Code `.mcp.json` and Agent Plugins `mcp.json`.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::RuntimeError;
use crate::expand::expand_roots;
use crate::manifest::Format;
use crate::root::PluginRoot;

/// The `$schema` an Agent Plugins `mcp.json` must name.
pub const AGENT_PLUGINS_MCP_SCHEMA: &str =
    "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// Headers the MCP client sets itself; a plugin may not configure them.
const CLIENT_HEADERS: [&str; 15] = [
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "keep-alive",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authorization",
];

/// One MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// `stdio`, `http`, `streamable-http` or `sse`.
    pub transport: String,
    /// The program (stdio).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment.
    pub env: Map<String, Value>,
    /// Its working folder.
    pub cwd: Option<String>,
    /// The endpoint (remote transports).
    pub url: Option<String>,
    /// Request headers (remote transports).
    pub headers: Map<String, Value>,
    /// Agent Plugins servers are literal: the agent must not expand `${VAR}`s in them.
    pub literal: bool,
}

impl McpServer {
    /// The server with `${NAME}` and `${NAME:-default}` filled in the way the OpenHands SDK
    /// does when a conversation starts (`expand_mcp_servers`): from `lookup` (its secrets,
    /// then its environment), else the default, else left as written. Literal (Agent
    /// Plugins) servers are returned unchanged. berth's plugin set leaves these variables
    /// in place, since secrets belong to the agent, not to the lock.
    pub fn with_variables(&self, lookup: impl Fn(&str) -> Option<String>) -> McpServer {
        if self.literal {
            return self.clone();
        }
        let fill = |text: &str| fill_variables(text, &lookup);
        let fill_map = |map: &Map<String, Value>| -> Map<String, Value> {
            map.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str()
                            .map_or_else(|| v.clone(), |t| Value::String(fill(t))),
                    )
                })
                .collect()
        };
        McpServer {
            transport: self.transport.clone(),
            command: self.command.as_deref().map(fill),
            args: self.args.iter().map(|a| fill(a)).collect(),
            env: fill_map(&self.env),
            cwd: self.cwd.as_deref().map(fill),
            url: self.url.as_deref().map(fill),
            headers: fill_map(&self.headers),
            literal: false,
        }
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

/// Loads the plugin's MCP servers, in file order. `data_dir` is the plugin's writable data
/// folder (`${PLUGIN_DATA}`). Invalid servers are dropped one by one with a warning.
pub fn load_mcp(
    root: &PluginRoot,
    format: Format,
    data_dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, McpServer)>, RuntimeError> {
    match format {
        Format::ClaudeCode => claude_code(root, warnings),
        Format::AgentPlugins => agent_plugins(root, data_dir, warnings),
    }
}

fn claude_code(
    root: &PluginRoot,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, McpServer)>, RuntimeError> {
    let file = ".mcp.json";
    let Some(text) = root.read_text(file)? else {
        return Ok(Vec::new());
    };
    let plugin = root.plugin();
    let mut warn =
        |message: String| warnings.push(format!("plugin `{plugin}`: `{file}`: {message}"));
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => expand_value(value, &root.path().to_string_lossy()),
        Err(e) => {
            warn(format!("invalid JSON ({e}); no MCP servers loaded from it"));
            return Ok(Vec::new());
        }
    };
    let servers = match value.get("mcpServers") {
        Some(Value::Object(servers)) => servers.clone(),
        Some(_) => {
            warn("`mcpServers` must be an object; no MCP servers loaded".into());
            return Ok(Vec::new());
        }
        None => {
            if value.as_object().is_some_and(|m| !m.is_empty()) {
                warn("has no `mcpServers` object; no MCP servers loaded (wrap the servers in `{\"mcpServers\": {...}}`)".into());
            }
            return Ok(Vec::new());
        }
    };
    let mut out = Vec::new();
    for (name, server) in servers {
        match claude_server(&server) {
            Ok(server) => out.push((name, server)),
            Err(why) => warn(format!("MCP server `{name}` ignored: {why}")),
        }
    }
    Ok(out)
}

fn expand_value(value: Value, root: &str) -> Value {
    match value {
        Value::String(s) => Value::String(expand_roots(&s, root)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| expand_value(v, root)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (expand_roots(&k, root), expand_value(v, root)))
                .collect(),
        ),
        other => other,
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

fn claude_server(server: &Value) -> Result<McpServer, String> {
    let Value::Object(map) = server else {
        return Err("must be an object".into());
    };
    let explicit = match (map.get("transport"), map.get("type")) {
        (Some(Value::String(t)), _) | (None, Some(Value::String(t))) => Some(t.as_str()),
        (None, None) | (Some(Value::Null), _) | (None, Some(Value::Null)) => None,
        _ => return Err("`type` must be a string".into()),
    };
    let explicit = explicit.map(|t| if t == "shttp" { "http" } else { t });
    if let Some(t) = explicit
        && !["stdio", "http", "streamable-http", "sse"].contains(&t)
    {
        return Err(format!(
            "unknown transport `{t}` (use stdio, http, streamable-http or sse)"
        ));
    }
    let command = optional_string(map, "command")?;
    let url = optional_string(map, "url")?;
    let transport = match (explicit, &command, &url) {
        (Some(t), _, _) => t.to_owned(),
        (None, Some(_), _) => "stdio".to_owned(),
        (None, None, Some(url)) => {
            let path = url.split(['?', '#']).next().unwrap_or(url);
            if path.trim_end_matches('/').ends_with("/sse") {
                "sse"
            } else {
                "http"
            }
            .to_owned()
        }
        (None, None, None) => return Err("needs a `command` (stdio) or a `url` (remote)".into()),
    };
    if transport == "stdio" && command.is_none() {
        return Err("a stdio server needs a `command`".into());
    }
    if transport != "stdio" && url.is_none() {
        return Err(format!("a {transport} server needs a `url`"));
    }
    Ok(McpServer {
        args: string_list(map.get("args"), "args")?,
        env: string_map(map.get("env"), "env")?,
        cwd: optional_string(map, "cwd")?,
        headers: string_map(map.get("headers"), "headers")?,
        transport,
        command,
        url,
        literal: false,
    })
}

fn agent_plugins(
    root: &PluginRoot,
    data_dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, McpServer)>, RuntimeError> {
    let file = "mcp.json";
    let Some(text) = root.read_text(file)? else {
        return Ok(Vec::new());
    };
    let plugin = root.plugin();
    let mut warn =
        |message: String| warnings.push(format!("plugin `{plugin}`: `{file}`: {message}"));
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let document = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            warn("must hold a JSON object; MCP disabled for this plugin".into());
            return Ok(Vec::new());
        }
        Err(e) => {
            warn(format!("invalid JSON ({e}); MCP disabled for this plugin"));
            return Ok(Vec::new());
        }
    };
    if document.get("$schema").and_then(Value::as_str) != Some(AGENT_PLUGINS_MCP_SCHEMA) {
        warn(format!(
            "`$schema` must be `{AGENT_PLUGINS_MCP_SCHEMA}`; MCP disabled for this plugin"
        ));
        return Ok(Vec::new());
    }
    if let Some(extra) = document
        .keys()
        .find(|k| *k != "$schema" && *k != "mcpServers")
    {
        warn(format!(
            "unknown top-level field `{extra}`; MCP disabled for this plugin"
        ));
        return Ok(Vec::new());
    }
    let Some(Value::Object(servers)) = document.get("mcpServers") else {
        warn("`mcpServers` must be an object; MCP disabled for this plugin".into());
        return Ok(Vec::new());
    };
    let ctx = ApContext {
        root: root.path(),
        data: data_dir,
    };
    let mut out = Vec::new();
    for (name, server) in servers {
        match ctx.server(server) {
            Ok((server, dropped_headers)) => {
                if !dropped_headers.is_empty() {
                    warn(format!(
                        "MCP server `{name}`: ignoring client-generated header(s) {}",
                        dropped_headers.join(", ")
                    ));
                }
                out.push((name.clone(), server));
            }
            Err(why) => warn(format!("MCP server `{name}` ignored: {why}")),
        }
    }
    Ok(out)
}

struct ApContext<'a> {
    root: &'a Path,
    data: &'a Path,
}

impl ApContext<'_> {
    fn expand(&self, text: &str) -> String {
        expand_roots(text, &self.root.to_string_lossy())
            .replace("${PLUGIN_DATA}", &self.data.to_string_lossy())
    }

    fn server(&self, server: &Value) -> Result<(McpServer, Vec<String>), String> {
        let Value::Object(map) = server else {
            return Err("must be an object".into());
        };
        let transport = match map.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(_) => return Err("`type` must be a string".into()),
            None => return Err("`type` is required (stdio or streamable-http)".into()),
        };
        let allowed: &[&str] = match transport.as_str() {
            "stdio" => &["type", "command", "args", "env", "cwd"],
            "streamable-http" => &["type", "url", "headers"],
            "sse" => return Err("unsupported transport `sse`".into()),
            other => {
                return Err(format!(
                    "unknown transport `{other}` (use stdio or streamable-http)"
                ));
            }
        };
        if let Some(extra) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!("unknown field `{extra}` for a {transport} server"));
        }
        if transport == "stdio" {
            return self.stdio(map).map(|s| (s, Vec::new()));
        }
        self.remote(map)
    }

    fn stdio(&self, map: &Map<String, Value>) -> Result<McpServer, String> {
        let command = optional_string(map, "command")?.ok_or("a stdio server needs a `command`")?;
        let command = if let Some(rel) = command.strip_prefix("./") {
            let resolved = lexical_join(self.root, rel);
            if !resolved.starts_with(self.root) {
                return Err(format!("command `{command}` escapes the plugin folder"));
            }
            resolved.to_string_lossy().into_owned()
        } else if command.contains(['/', '\\']) {
            return Err(format!(
                "command `{command}` must be a bare executable name or a plugin-relative path beginning with `./`"
            ));
        } else {
            command
        };
        let args = string_list(map.get("args"), "args")?
            .iter()
            .map(|a| self.expand(a))
            .collect();
        let mut env: Map<String, Value> = string_map(map.get("env"), "env")?
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    Value::String(self.expand(v.as_str().unwrap_or_default())),
                )
            })
            .collect();
        for reserved in ["PLUGIN_ROOT", "PLUGIN_DATA"] {
            if env.contains_key(reserved) {
                return Err(format!("`env` may not set `{reserved}`; berth sets it"));
            }
        }
        env.insert(
            "PLUGIN_ROOT".into(),
            Value::String(self.root.to_string_lossy().into_owned()),
        );
        env.insert(
            "PLUGIN_DATA".into(),
            Value::String(self.data.to_string_lossy().into_owned()),
        );
        let cwd = match optional_string(map, "cwd")? {
            None => self.root.to_path_buf(),
            Some(cwd) => {
                let (base, rest) = if let Some(rest) = cwd.strip_prefix("./") {
                    (self.root, rest)
                } else if let Some(rest) = strip_var(&cwd, "${PLUGIN_ROOT}") {
                    (self.root, rest)
                } else if let Some(rest) = strip_var(&cwd, "${PLUGIN_DATA}") {
                    (self.data, rest)
                } else {
                    return Err(format!(
                        "`cwd` `{cwd}` must start with `./`, `${{PLUGIN_ROOT}}` or `${{PLUGIN_DATA}}`"
                    ));
                };
                let resolved = lexical_join(base, rest);
                if !resolved.starts_with(base) {
                    return Err(format!("`cwd` `{cwd}` escapes its folder"));
                }
                resolved
            }
        };
        Ok(McpServer {
            transport: "stdio".into(),
            command: Some(command),
            args,
            env,
            cwd: Some(cwd.to_string_lossy().into_owned()),
            url: None,
            headers: Map::new(),
            literal: true,
        })
    }

    fn remote(&self, map: &Map<String, Value>) -> Result<(McpServer, Vec<String>), String> {
        let url = optional_string(map, "url")?.ok_or("a remote server needs a `url`")?;
        check_remote_url(&url)?;
        let mut headers = Map::new();
        let mut dropped = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for (name, value) in string_map(map.get("headers"), "headers")? {
            let valid_name = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c));
            if !valid_name {
                return Err(format!("header name `{name}` is not a valid HTTP token"));
            }
            let value_text = value.as_str().unwrap_or_default();
            if !value_text
                .chars()
                .all(|c| c == '\t' || (' '..='~').contains(&c))
            {
                return Err(format!(
                    "header `{name}` has characters that are not printable ASCII"
                ));
            }
            let lower = name.to_ascii_lowercase();
            if seen.contains(&lower) {
                return Err(format!("header `{name}` is given twice"));
            }
            seen.push(lower.clone());
            if CLIENT_HEADERS.contains(&lower.as_str()) {
                dropped.push(format!("`{name}`"));
                continue;
            }
            headers.insert(name, value);
        }
        Ok((
            McpServer {
                transport: "streamable-http".into(),
                command: None,
                args: Vec::new(),
                env: Map::new(),
                cwd: None,
                url: Some(url),
                headers,
                literal: true,
            },
            dropped,
        ))
    }
}

fn strip_var<'a>(text: &'a str, var: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(var)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// `base/rel` with `.` and `..` resolved without touching the filesystem.
fn lexical_join(base: &Path, rel: &str) -> PathBuf {
    let mut out = base.to_path_buf();
    for part in Path::new(rel).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    out
}

/// An absolute https URL (http only to this machine), without credentials or a fragment.
fn check_remote_url(url: &str) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or(format!("url `{url}` is not absolute"))?;
    if url.contains('#') {
        return Err(format!("url `{url}` must not have a fragment"));
    }
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(format!("url `{url}` must not hold credentials"));
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    if host.is_empty() {
        return Err(format!("url `{url}` has no host"));
    }
    match scheme {
        "https" => Ok(()),
        "http" if host == "localhost" || host == "::1" || host.starts_with("127.") => Ok(()),
        "http" => Err(format!("url `{url}` must use https: {host} is remote")),
        other => Err(format!(
            "url `{url}`: scheme `{other}` is not http or https"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn remote_urls() {
        assert!(check_remote_url("https://mcp.example.com/x").is_ok());
        assert!(check_remote_url("http://localhost:8080/x").is_ok());
        assert!(check_remote_url("http://127.0.0.1/x").is_ok());
        assert!(check_remote_url("http://mcp.example.com/plain").is_err());
        assert!(check_remote_url("https://u:p@h/x").is_err());
        assert!(check_remote_url("https://h/x#f").is_err());
    }
}
