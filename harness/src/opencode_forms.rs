//! A plugin's agents and MCP servers in OpenCode's terms: an agent file's front matter
//! (OpenCode refuses to start on a Claude Code `tools` string or a colour name), and a
//! server as `opencode.json`'s `mcp` holds it (`{env:VAR}` for Claude Code's `${VAR}`).

use serde_json::{Map, Value, json};

use std::path::Path;

use berth_plugin::agents::Agent;
use berth_plugin::mcp::McpServer;
use berth_runtime::set::PluginInfo;

use super::entry::files_in;
use super::guard::read_entry_file;

/// The agent as an OpenCode sub-agent file: its description, `mode: subagent` (a plugin's
/// agents are Claude Code's sub-agents) and its prompt. Its model, tools and colour are
/// left out ([`agent_warnings`] says what that loses).
pub(super) fn agent_file(agent: &Agent) -> String {
    let mut text = String::from("---\n");
    if !agent.description.is_empty() {
        // A JSON string is a YAML string.
        text.push_str(&format!("description: {}\n", json!(agent.description)));
    }
    text.push_str("mode: subagent\n---\n");
    text.push_str(&agent.content);
    text.push('\n');
    text
}

/// What of `agent` (of `plugin`) its OpenCode file leaves out, one line each.
pub(super) fn agent_warnings(plugin: &str, agent: &Agent) -> Vec<String> {
    let mut out = Vec::new();
    if !agent.tools.is_empty() {
        out.push(format!(
            "plugin `{plugin}`: agent `{}`: its tools ({}) are not written: OpenCode names its tools otherwise, so the agent has OpenCode's default tools",
            agent.name,
            agent.tools.join(", ")
        ));
    }
    if !agent.model.is_empty() && agent.model != "inherit" {
        out.push(format!(
            "plugin `{plugin}`: agent `{}`: its model `{}` is not written: OpenCode names a model `provider/model`, so the agent uses the session's",
            agent.name, agent.model
        ));
    }
    out
}

/// `text` with each `${VAR}` as OpenCode's `{env:VAR}`, or why it cannot be (a default,
/// `${VAR:-x}`, which OpenCode has no form for).
fn env_form(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find('}') else {
            break;
        };
        let var = &rest[at + 2..at + end];
        if !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || var.is_empty() {
            return Err(format!(
                "it uses `${{{var}}}`, which OpenCode has no form for"
            ));
        }
        out.push_str(&format!("{{env:{var}}}"));
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A map of strings with each value in OpenCode's form.
fn env_map(map: &Map<String, Value>) -> Result<Value, String> {
    let mut out = Map::new();
    for (key, value) in map {
        let value = match value {
            Value::String(s) => json!(env_form(s)?),
            other => other.clone(),
        };
        out.insert(key.clone(), value);
    }
    Ok(Value::Object(out))
}

/// A server as OpenCode's `mcp` takes it, or why it cannot be.
pub(super) fn server_json(server: &McpServer) -> Result<Value, String> {
    let mut out = Map::new();
    match server.transport.as_str() {
        "stdio" => {
            let command = server.command.as_ref().ok_or("it has no command")?;
            if server.cwd.is_some() {
                return Err(
                    "it sets a working folder (`cwd`), which OpenCode's local servers do not take"
                        .into(),
                );
            }
            let line = std::iter::once(command)
                .chain(&server.args)
                .map(|a| env_form(a))
                .collect::<Result<Vec<_>, _>>()?;
            out.insert("type".into(), json!("local"));
            out.insert("command".into(), json!(line));
            if !server.env.is_empty() {
                out.insert("environment".into(), env_map(&server.env)?);
            }
        }
        _ => {
            let url = server.url.as_ref().ok_or("it has no URL")?;
            out.insert("type".into(), json!("remote"));
            out.insert("url".into(), json!(env_form(url)?));
            if !server.headers.is_empty() {
                out.insert("headers".into(), env_map(&server.headers)?);
            }
        }
    }
    if !server.enabled {
        out.insert("enabled".into(), json!(false));
    }
    if let Some(timeout) = server.timeout {
        out.insert("timeout".into(), json!((timeout * 1000.0).round() as u64));
    }
    Ok(Value::Object(out))
}

/// The skills in the folder `folder` of `info`'s entry that holds a skill (below its own
/// `SKILL.md`): OpenCode looks for `SKILL.md` through the whole folder it is given, Claude
/// Code one level down only. Each as its path under `folder` and the name OpenCode gives it
/// (its front matter's `name`, else its folder's). Links are not followed; at most 8
/// levels down. From the entry's listing the store's check made ([`files_in`]), so the
/// folder is not walked again.
pub(super) fn nested_skills(info: &PluginInfo, folder: &Path) -> Vec<(String, String)> {
    let Ok(files) = files_in(info, folder) else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> = files
        .iter()
        .filter(|rel| rel.file_name().is_some_and(|n| n == "SKILL.md"))
        .filter(|rel| (2..=9).contains(&rel.components().count()))
        .map(|rel| {
            let folder_name = rel
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = read_entry_file(&info.path, &folder.join(rel))
                .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok())
                .and_then(|text| berth_plugin::frontmatter::parse_lenient(&text).ok())
                .and_then(|doc| {
                    doc.meta
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .filter(|n| !n.is_empty())
                .unwrap_or(folder_name);
            (rel.display().to_string(), name)
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::env_form;

    #[test]
    fn variables_take_opencodes_form_and_a_default_has_none() {
        assert_eq!(
            env_form("Bearer ${TOKEN} and $HOME").as_deref(),
            Ok("Bearer {env:TOKEN} and $HOME")
        );
        assert!(env_form("${PORT:-8080}").is_err());
        assert_eq!(env_form("no variable").as_deref(), Ok("no variable"));
    }
}
