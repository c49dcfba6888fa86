//! Claude Code's `.mcp.json` (FastMCP's shape, read as the SDK's `MCPServer` reads it), and
//! the servers of a sub-agent's front matter, which the SDK reads the same way.

use serde_json::Value;

use super::{
    AUTH_STRATEGIES, McpServer, any_string, clean_auth, lax_float, optional_bool, optional_string,
    secret_map, string_list, string_map,
};
use crate::error::PluginError;
use crate::expand::expand_roots;
use crate::model::{EntryValue, JsonFile, Kind, Reader};
use crate::pystr::lax_bool;
use crate::root::PluginRoot;

/// What the set says of a `.mcp.json` whose servers are not in an `mcpServers` object.
pub const UNWRAPPED: &str = "has no `mcpServers` object; no MCP servers loaded (wrap the servers in `{\"mcpServers\": {...}}`)";

/// The servers of a `.mcp.json` (`file`, as read) that holds them without the
/// `mcpServers` wrapper, as Claude Code reads such a file (the SDK, and so the set, reads
/// none of them); empty for any other file.
pub fn unwrapped_servers(
    root: &PluginRoot,
    file: &str,
    read: &JsonFile,
    warnings: &mut Vec<String>,
) -> Vec<(String, McpServer)> {
    let plugin = root.plugin();
    let mut warn =
        |message: String| warnings.push(format!("plugin `{plugin}`: `{file}`: {message}"));
    match read.strict() {
        Some(Ok(Value::Object(map))) if !map.contains_key("mcpServers") => {
            match expand_value(Value::Object(map), &root.exposed().to_string_lossy()) {
                Value::Object(servers) => servers_of(servers, &mut warn),
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// The servers of the layout's `.mcp.json` (`file`, as read): only in its `mcpServers`
/// object, as the SDK reads it.
pub(super) fn claude_code(
    root: &PluginRoot,
    file: &str,
    read: &JsonFile,
    warnings: &mut Vec<String>,
) -> Vec<(String, McpServer)> {
    let plugin = root.plugin();
    let mut warn =
        |message: String| warnings.push(format!("plugin `{plugin}`: `{file}`: {message}"));
    let value: Value = match read.strict() {
        Some(Ok(value)) => expand_value(value, &root.exposed().to_string_lossy()),
        Some(Err(why)) => {
            warn(format!("{why}; no MCP servers loaded from it"));
            return Vec::new();
        }
        None => return Vec::new(),
    };
    let servers = match value.get("mcpServers") {
        Some(Value::Object(servers)) => servers.clone(),
        Some(_) => {
            warn("`mcpServers` must be an object; no MCP servers loaded".into());
            return Vec::new();
        }
        None => {
            if value.as_object().is_some_and(|m| !m.is_empty()) {
                warn(UNWRAPPED.into());
            }
            return Vec::new();
        }
    };
    servers_of(servers, &mut warn)
}

/// The servers of a `{name: server}` map, each read as `.mcp.json`'s; an invalid one is
/// dropped with a message to `warn`.
fn servers_of(
    servers: serde_json::Map<String, Value>,
    warn: &mut dyn FnMut(String),
) -> Vec<(String, McpServer)> {
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
    out
}

/// The servers a marketplace entry's `mcpServers` gives: a `{name: server}` object (or a
/// `{"mcpServers": {...}}` one), a path to such a file in the plugin, or a list of those;
/// plugin-root variables expanded as in `.mcp.json`.
pub fn entry_servers(
    reader: &mut Reader<'_>,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, McpServer)>, PluginError> {
    let root = reader.root();
    let plugin = root.plugin().to_owned();
    let mut out = Vec::new();
    for value in reader.entry_values(Kind::Mcp)? {
        let (label, object) = match value {
            EntryValue::Value(label, value) => (label, value),
            EntryValue::Missing(path) => {
                warnings.push(format!(
                    "plugin `{plugin}`: its marketplace entry names MCP servers in `{path}`, which is not a file of the plugin"
                ));
                continue;
            }
            EntryValue::Invalid(path, why) => {
                warnings.push(format!(
                    "plugin `{plugin}`: `{path}`: {why}; no MCP servers loaded from it"
                ));
                continue;
            }
        };
        let object = expand_value(object, &root.exposed().to_string_lossy());
        let servers = match object.get("mcpServers") {
            Some(Value::Object(servers)) => servers.clone(),
            _ => match object {
                Value::Object(servers) => servers,
                _ => continue,
            },
        };
        let mut warn =
            |message: String| warnings.push(format!("plugin `{plugin}`: {label}: {message}"));
        out.extend(servers_of(servers, &mut warn));
    }
    Ok(out)
}

/// The servers of a sub-agent's `mcp_servers` (or `mcp_config`) front matter, read as the
/// SDK's `coerce_mcp_config` reads them (a `{"mcpServers": {...}}` wrapper is accepted);
/// plugin-root variables are expanded as in `.mcp.json`. One invalid server fails the
/// whole map, as it fails the SDK's agent.
pub fn agent_servers(value: &Value, root: &str) -> Result<Vec<(String, McpServer)>, String> {
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

pub(super) fn expand_value(value: Value, root: &str) -> Value {
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

pub(super) fn claude_server(server: &Value) -> Result<McpServer, String> {
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
