//! Gemini CLI: extensions in a Gemini home folder (`~/.gemini`), one per locked plugin,
//! as `gemini extensions list` reads them: `extensions/NAME/gemini-extension.json` (name,
//! version, description, MCP servers), `skills/SKILL` (a link to the skill's folder in
//! the store) and `commands/NAME.toml` (a Claude Code command as a Gemini prompt).
//!
//! berth owns each plugin's `extensions/NAME/` (marked by a `.berth` file, so a plugin that
//! left the lock is removed too); other extensions are left alone.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use berth_lockfile_schema::toml_string;

use super::files::{Plan, Planned, marked, one_per_name, pretty, stdio_fields};
use crate::error::RuntimeError;
use crate::mcp::McpServer;
use crate::set::PluginSet;

/// The file that marks an extension folder as berth's.
const MARKER: &str = ".berth";

/// A server as Gemini CLI's `mcpServers` takes it, or why it cannot be.
fn server_json(server: &McpServer) -> Result<Value, String> {
    if !server.enabled {
        return Err("it is disabled, and Gemini CLI has no disabled servers".into());
    }
    let mut out = Map::new();
    match server.transport.as_str() {
        "stdio" => {
            server.command.as_ref().ok_or("it has no command")?;
            stdio_fields(server, &mut out);
        }
        transport => {
            let url = server.url.clone().ok_or("it has no URL")?;
            let key = if transport == "sse" { "url" } else { "httpUrl" };
            out.insert(key.into(), json!(url));
            if !server.headers.is_empty() {
                out.insert("headers".into(), Value::Object(server.headers.clone()));
            }
        }
    }
    if let Some(timeout) = server.timeout {
        out.insert("timeout".into(), json!((timeout * 1000.0).round() as u64));
    }
    if let Some(description) = &server.description {
        out.insert("description".into(), json!(description));
    }
    Ok(Value::Object(out))
}

/// The layout of `set` in the Gemini home folder `root` (absolute).
pub fn plan(set: &PluginSet, root: &Path) -> Result<Plan, RuntimeError> {
    let mut plan = Plan {
        owned: marked(root, Path::new("extensions"), MARKER),
        ..Plan::default()
    };
    for info in one_per_name(set, "Gemini CLI", &mut plan.warnings) {
        let name = info.locked.name.as_str();
        let dir = PathBuf::from("extensions").join(name);
        if !plan.owned.contains(&dir) {
            plan.owned.push(dir.clone());
        }
        plan.files.insert(
            dir.join(MARKER),
            Planned::File(
                b"Written by `berth materialize gemini`; replaced by the next run.\n".to_vec(),
            ),
        );
        let prefix = format!("{name}:");
        for (skill, _) in set.skills.iter().filter(|(_, p)| p == name) {
            let is_folder = skill
                .source
                .rsplit('/')
                .next()
                .is_some_and(|f| f.eq_ignore_ascii_case("skill.md"));
            if is_folder {
                let folder = Path::new(&skill.source).parent().unwrap_or(Path::new(""));
                plan.files.insert(
                    dir.join("skills").join(&skill.name),
                    Planned::Link(info.path.join(folder)),
                );
            } else if let Some(command) = skill.name.strip_prefix(&prefix) {
                let mut toml = String::new();
                if let Some(description) = &skill.description {
                    toml.push_str(&format!("description = {}\n", toml_string(description)));
                }
                // The command's own text (the set's skill wraps it in a heading).
                let body = std::fs::read_to_string(info.path.join(&skill.source))
                    .ok()
                    .and_then(|text| crate::frontmatter::parse(&text).ok())
                    .map_or_else(|| skill.content.clone(), |doc| doc.content);
                let prompt = body.replace("$ARGUMENTS", "{{args}}");
                toml.push_str(&format!("prompt = {}\n", toml_string(&prompt)));
                plan.files.insert(
                    dir.join("commands").join(format!("{command}.toml")),
                    Planned::File(toml.into_bytes()),
                );
            } else {
                plan.warnings.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is not a skill folder; Gemini CLI reads `skills/NAME/SKILL.md` only, so it is not written",
                    skill.name, skill.source
                ));
            }
        }
        let mut servers = Map::new();
        for (server_name, server, _) in set.mcp_servers.iter().filter(|(_, _, p)| p == name) {
            match server_json(server) {
                Ok(json) => {
                    servers.insert(server_name.clone(), json);
                }
                Err(why) => plan.warnings.push(format!(
                    "plugin `{name}`: MCP server `{server_name}` is not written: {why}"
                )),
            }
        }
        let hooks: usize = set
            .hooks
            .iter()
            .map(|(_, matchers)| matchers.iter().filter(|(_, p)| p == name).count())
            .sum();
        if hooks > 0 {
            plan.warnings.push(format!(
                "plugin `{name}`: its {hooks} hook matcher(s) are not written: Gemini CLI's extension hooks use other events and payloads"
            ));
        }
        let agents = set.agents.iter().filter(|(_, p)| p == name).count();
        if agents > 0 {
            plan.warnings.push(format!(
                "plugin `{name}`: its {agents} agent(s) are not written: Gemini CLI extensions have no sub-agents"
            ));
        }
        if set.lsp_servers.iter().any(|(_, _, p)| p == name) {
            plan.warnings.push(format!(
                "plugin `{name}`: its LSP servers are not written: Gemini CLI has none"
            ));
        }
        let mut manifest = json!({
            "name": name,
            "version": info.manifest.version,
        });
        if !info.manifest.description.is_empty() {
            manifest["description"] = json!(info.manifest.description);
        }
        if !servers.is_empty() {
            manifest["mcpServers"] = Value::Object(servers);
        }
        plan.files.insert(
            dir.join("gemini-extension.json"),
            Planned::File(pretty(&manifest)),
        );
    }
    Ok(plan)
}
