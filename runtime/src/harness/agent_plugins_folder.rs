//! Agent Plugins 1.0: one folder per locked plugin in the layout Cursor, VS Code and the
//! OpenHands SDK read (`plugin.json` with `$schema`, `skills/`, `mcp.json`,
//! `dev.openhands/{commands,agents,hooks}`), every skill, command and agent a read-only
//! copy of the verified store entry's files (the SDK does not follow links out of a
//! plugin), the JSON files written from the set (plugin roots filled in).
//!
//! berth owns each plugin's folder (marked by a `.berth` file, so a plugin that left the
//! lock is removed too); anything else in `DIR` is left alone.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::files::{marked, pretty, regular_files, stdio_fields};
use super::guard::is_component;
use super::plan::{Plan, Planned};
use super::{Destination, Harness};
use crate::error::RuntimeError;
use crate::hooks::{matchers_to_json, pascal_case};
use crate::mcp::McpServer;
use crate::set::{PluginInfo, PluginSet};
use crate::skills::Skill;

const MARKER: &str = ".berth";
const PLUGIN_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
const MCP_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// `value` without its `null` fields, recursively.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// A server as an Agent Plugins `mcp.json` holds it.
fn server_json(server: &McpServer) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(server.transport));
    stdio_fields(server, &mut out);
    if let Some(url) = &server.url {
        out.insert("url".into(), json!(url));
    }
    if !server.headers.is_empty() {
        out.insert("headers".into(), Value::Object(server.headers.clone()));
    }
    Value::Object(out)
}

/// A folder of Agent Plugins 1.0 plugins, one per locked plugin.
#[derive(Debug, Clone, Copy)]
pub struct AgentPluginsFolder;

impl Harness for AgentPluginsFolder {
    fn id(&self) -> &'static str {
        "agent-plugins"
    }

    fn display_name(&self) -> &'static str {
        "Agent Plugins"
    }

    fn folder(&self) -> &'static str {
        "A folder of Agent Plugins 1.0 plugins, one per locked plugin (Cursor, VS Code, the OpenHands SDK)"
    }

    fn cannot_express(&self, set: &PluginSet, info: &PluginInfo) -> Vec<String> {
        let name = info.locked.name.as_str();
        let mut out = Vec::new();
        for (skill, _) in set.skills.iter().filter(|(_, p)| p == name) {
            match written_as(skill, name) {
                Written::Nowhere => out.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is neither a skill folder nor `skills/NAME.md`, so it is not written",
                    skill.name, skill.source
                )),
                Written::NotAName => out.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is not written: its name is not one plain file name",
                    skill.name.escape_debug(),
                    skill.source
                )),
                Written::Folder | Written::Command(_) | Written::Flat => {}
            }
        }
        for (server_name, server, _) in set.mcp_servers.iter().filter(|(_, _, p)| p == name) {
            if !server.literal && server_json(server).to_string().contains("${") {
                out.push(format!(
                    "plugin `{name}`: MCP server `{server_name}` holds `${{VAR}}` placeholders, which Agent Plugins servers do not fill; written as it is"
                ));
            }
        }
        if set.lsp_servers.iter().any(|(_, _, p)| p == name) {
            out.push(format!(
                "plugin `{name}`: its LSP servers are not written: Agent Plugins 1.0 has none"
            ));
        }
        out
    }

    fn plan(
        &self,
        set: &PluginSet,
        plugins: &[&PluginInfo],
        to: Destination<'_>,
    ) -> Result<Vec<(PathBuf, Plan)>, RuntimeError> {
        let mut plan = Plan {
            owned: marked(to.root, Path::new(""), MARKER),
            mark: Some(MARKER),
            ..Plan::default()
        };
        for info in plugins {
            plugin_folder(set, info, &mut plan)?;
        }
        Ok(vec![(to.root.to_path_buf(), plan)])
    }
}

/// How a skill of the set is written in a plugin folder.
enum Written<'a> {
    /// Its folder copied to `skills/NAME/` (a `SKILL.md` skill).
    Folder,
    /// As the command `NAME` (`dev.openhands/commands/NAME.md`).
    Command(&'a str),
    /// As it is: a flat `skills/NAME.md`, which Agent Plugins readers take too.
    Flat,
    /// Not at all.
    Nowhere,
    /// Not at all: the name it would be written under is not one plain file name.
    NotAName,
}

fn written_as<'a>(skill: &'a Skill, plugin: &str) -> Written<'a> {
    let file = skill.source.rsplit('/').next().unwrap_or(&skill.source);
    if file.eq_ignore_ascii_case("skill.md") {
        if is_component(&skill.name) {
            Written::Folder
        } else {
            Written::NotAName
        }
    } else if let Some(command) = skill.name.strip_prefix(&format!("{plugin}:")) {
        if is_component(command) {
            Written::Command(command)
        } else {
            Written::NotAName
        }
    } else if skill.source.starts_with("skills/") && !skill.source[7..].contains('/') {
        Written::Flat
    } else {
        Written::Nowhere
    }
}

/// Plans one plugin's folder.
fn plugin_folder(set: &PluginSet, info: &PluginInfo, plan: &mut Plan) -> Result<(), RuntimeError> {
    let name = info.locked.name.as_str();
    let dir = PathBuf::from(name);
    if !plan.owned.contains(&dir) {
        plan.owned.push(dir.clone());
    }
    plan.files.insert(
        dir.join(MARKER),
        Planned::File(
            b"Written by `berth materialize agent-plugins`; replaced by the next run.\n".to_vec(),
        ),
    );
    let mut manifest = json!({
        "$schema": PLUGIN_SCHEMA,
        "name": name,
        "version": info.manifest.version,
    });
    if !info.manifest.description.is_empty() {
        manifest["description"] = json!(info.manifest.description);
    }
    plan.files
        .insert(dir.join("plugin.json"), Planned::File(pretty(&manifest)));
    for (skill, _) in set.skills.iter().filter(|(_, p)| p == name) {
        skill_files(info, skill, &dir, plan)?;
    }
    for (agent, _) in set.agents.iter().filter(|(_, p)| p == name) {
        let file = agent.source.rsplit('/').next().unwrap_or(&agent.source);
        plan.files.insert(
            dir.join("dev.openhands/agents").join(file),
            Planned::Copy(info.path.join(&agent.source)),
        );
    }
    let servers: Map<String, Value> = set
        .mcp_servers
        .iter()
        .filter(|(_, _, p)| p == name)
        .map(|(n, server, _)| (n.clone(), server_json(server)))
        .collect();
    if !servers.is_empty() {
        let mcp = json!({"$schema": MCP_SCHEMA, "mcpServers": servers});
        plan.files
            .insert(dir.join("mcp.json"), Planned::File(pretty(&mcp)));
    }
    let mut hooks = Map::new();
    for (event, matchers) in &set.hooks {
        let mine: Vec<_> = matchers.iter().filter(|(_, p)| p == name).collect();
        if !mine.is_empty() {
            let list = matchers_to_json(mine.iter().map(|(m, _)| (m, None)));
            hooks.insert(pascal_case(event), without_nulls(list));
        }
    }
    if !hooks.is_empty() {
        plan.files.insert(
            dir.join("dev.openhands/hooks/hooks.json"),
            Planned::File(pretty(&json!({ "hooks": hooks }))),
        );
    }
    Ok(())
}

/// Plans the files of one skill of the plugin in its folder `dir`.
fn skill_files(
    info: &PluginInfo,
    skill: &Skill,
    dir: &Path,
    plan: &mut Plan,
) -> Result<(), RuntimeError> {
    match written_as(skill, &info.locked.name) {
        Written::Folder => {
            let folder = Path::new(&skill.source).parent().unwrap_or(Path::new(""));
            let mut files = Vec::new();
            regular_files(&info.path.join(folder), Path::new(""), &mut files)?;
            for rel in files {
                plan.files.insert(
                    dir.join("skills").join(&skill.name).join(&rel),
                    Planned::Copy(info.path.join(folder).join(&rel)),
                );
            }
        }
        Written::Command(command) => {
            plan.files.insert(
                dir.join("dev.openhands/commands")
                    .join(format!("{command}.md")),
                Planned::Copy(info.path.join(&skill.source)),
            );
        }
        Written::Flat => {
            plan.files.insert(
                dir.join(&skill.source),
                Planned::Copy(info.path.join(&skill.source)),
            );
        }
        Written::Nowhere | Written::NotAName => {}
    }
    Ok(())
}
