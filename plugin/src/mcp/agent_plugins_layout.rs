//! Agent Plugins 1.0 `mcp.json`: a strict schema, literal values, `./` commands and
//! `${PLUGIN_ROOT}`/`${PLUGIN_DATA}` resolved here, https-only remote URLs.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use super::{McpServer, optional_string, secret_map, string_list, string_map};
use crate::expand::expand_roots;
use crate::model::{AGENT_PLUGINS_MCP_SCHEMA, JsonFile};
use crate::root::PluginRoot;

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

/// The servers of the layout's `mcp.json` (`file`, as read), with its strict schema.
pub(super) fn agent_plugins(
    root: &PluginRoot,
    file: &str,
    read: &JsonFile,
    data_dir: &Path,
    warnings: &mut Vec<String>,
) -> Vec<(String, McpServer)> {
    let plugin = root.plugin();
    let mut warn =
        |message: String| warnings.push(format!("plugin `{plugin}`: `{file}`: {message}"));
    let document = match read.lenient() {
        Some(Ok(Value::Object(map))) => map,
        Some(Ok(_)) => {
            warn("must hold a JSON object; MCP disabled for this plugin".into());
            return Vec::new();
        }
        Some(Err(why)) => {
            warn(format!("{why}; MCP disabled for this plugin"));
            return Vec::new();
        }
        None => return Vec::new(),
    };
    if document.get("$schema").and_then(Value::as_str) != Some(AGENT_PLUGINS_MCP_SCHEMA) {
        warn(format!(
            "`$schema` must be `{AGENT_PLUGINS_MCP_SCHEMA}`; MCP disabled for this plugin"
        ));
        return Vec::new();
    }
    if let Some(extra) = document
        .keys()
        .find(|k| *k != "$schema" && *k != "mcpServers")
    {
        warn(format!(
            "unknown top-level field `{extra}`; MCP disabled for this plugin"
        ));
        return Vec::new();
    }
    let Some(Value::Object(servers)) = document.get("mcpServers") else {
        warn("`mcpServers` must be an object; MCP disabled for this plugin".into());
        return Vec::new();
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
    out
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

pub(super) fn strip_var<'a>(text: &'a str, var: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(var)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// `base/rel` with `.` and `..` resolved without touching the filesystem.
pub(super) fn lexical_join(base: &Path, rel: &str) -> PathBuf {
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
pub(super) fn check_remote_url(url: &str) -> Result<(), String> {
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
