//! MCP server definitions: Claude Code `.mcp.json` and Agent Plugins `mcp.json`.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::RuntimeError;
use crate::expand::expand_roots;
use crate::manifest::Format;
use crate::pystr::lax_bool;
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
    let value: Value = match crate::json::parse(&text) {
        Ok(value) => expand_value(value, &root.exposed().to_string_lossy()),
        Err(why) => {
            warn(format!("{why}; no MCP servers loaded from it"));
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
        // `auth` in a `.mcp.json` is FastMCP's string form, which the SDK's own model
        // refuses (the SDK then drops the whole file); berth drops that server.
        let result = match server.get("auth") {
            Some(auth) if !auth.is_null() => Err(
                "`auth` is not supported in `.mcp.json` (the OpenHands SDK refuses it); put the credential in `headers`, e.g. `\"Authorization\": \"Bearer ${TOKEN}\"`".to_owned(),
            ),
            _ => claude_server(&server),
        };
        match result {
            Ok(server) => out.push((name, server)),
            Err(why) => warn(format!("MCP server `{name}` ignored: {why}")),
        }
    }
    Ok(out)
}

/// The servers of a sub-agent's `mcp_servers` (or `mcp_config`) front matter, read as the
/// SDK's `coerce_mcp_config` reads them (a `{"mcpServers": {...}}` wrapper is accepted);
/// plugin-root variables are expanded as in `.mcp.json`. One invalid server fails the
/// whole map, as it fails the SDK's agent.
pub(crate) fn agent_servers(value: &Value, root: &str) -> Result<Vec<(String, McpServer)>, String> {
    let servers = match value {
        Value::Object(map) => match map.get("mcpServers") {
            Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Object(inner)) => inner,
            Some(_) => return Err("`mcpServers` must be a mapping".into()),
            None => map,
        },
        _ => return Err("`mcp_servers` must be a mapping of server names to configs".into()),
    };
    servers
        .iter()
        .map(|(name, server)| {
            claude_server(&expand_value(server.clone(), root))
                .map(|s| (name.clone(), s))
                .map_err(|why| format!("MCP server `{name}`: {why}"))
        })
        .collect()
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
    let headers = secret_map(string_map(map.get("headers"), "headers")?.into_iter());
    let auth = match map.get("auth") {
        None | Some(Value::Null) => None,
        Some(Value::Object(auth)) => {
            let strategy = auth.get("strategy").and_then(Value::as_str).unwrap_or("");
            if !AUTH_STRATEGIES.contains(&strategy) {
                return Err(format!(
                    "`auth.strategy` must be one of {}",
                    AUTH_STRATEGIES.join(", ")
                ));
            }
            if headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization"))
            {
                return Err("`auth` cannot be combined with an `Authorization` header".into());
            }
            Some(clean_auth(auth.clone()))
        }
        Some(_) => return Err("`auth` must be an object with a `strategy`".into()),
    };
    Ok(McpServer {
        args: string_list(map.get("args"), "args")?,
        env: secret_map(string_map(map.get("env"), "env")?.into_iter()),
        cwd: any_string(map, "cwd")?,
        headers,
        description: any_string(map, "description")?,
        icon: any_string(map, "icon")?,
        timeout: lax_float(map, "timeout")?,
        sse_read_timeout: lax_float(map, "sse_read_timeout")?,
        keep_alive: optional_bool(map, "keep_alive")?,
        auth,
        enabled: match map.get("enabled") {
            None => true,
            Some(v) => lax_bool(v).ok_or("`enabled` must be true or false")?,
        },
        command,
        url,
        ..McpServer::new(transport)
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
    let document = match crate::json::parse_allowing_bom(&text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            warn("must hold a JSON object; MCP disabled for this plugin".into());
            return Ok(Vec::new());
        }
        Err(why) => {
            warn(format!("{why}; MCP disabled for this plugin"));
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
        root: root.exposed(),
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
            command: Some(command),
            args,
            env: secret_map(env.into_iter()),
            cwd: Some(cwd.to_string_lossy().into_owned()),
            literal: true,
            ..McpServer::new("stdio".into())
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
                url: Some(url),
                headers: secret_map(headers.into_iter()),
                literal: true,
                ..McpServer::new("streamable-http".into())
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
