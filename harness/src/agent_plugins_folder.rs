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

use super::agent_plugins_schema::{MCP as SCHEMA_MCP, PLUGIN as SCHEMA_PLUGIN, violations};
use super::entry::{copy_of, files_in};
use super::files::{marked, pretty, stdio_fields};
use super::guard::is_component;
use super::own::own;
use super::plan::{MARK, Plan, Planned};
use super::{Destination, Harness};
use berth_plugin::error::PluginError;
use berth_plugin::hooks::{matchers_to_json, pascal_case};
use berth_plugin::mcp::McpServer;
use berth_plugin::skills::Skill;
use berth_runtime::set::{PluginInfo, PluginSet};

const PLUGIN_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
const MCP_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// `server` as Agent Plugins 1.0 spells a server of the plugin (the set holds its paths
/// expanded to the plugin's folder): a command in the plugin as `./PATH` (Agent Plugins
/// runs only a bare program name or such a path), the plugin's folder in arguments,
/// environment values and `cwd` as `${PLUGIN_ROOT}`; or why it cannot be.
fn in_plugin_terms(server: &McpServer, info: &PluginInfo) -> Result<McpServer, String> {
    let roots: Vec<String> = [&info.root, &info.path]
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let replace = |text: &str| -> String {
        roots.iter().fold(text.to_owned(), |t, root| {
            t.replace(root.as_str(), "${PLUGIN_ROOT}")
        })
    };
    let mut out = server.clone();
    if server.transport != "stdio" {
        return Ok(out);
    }
    if let Some(command) = &server.command {
        let inside = roots
            .iter()
            .find_map(|root| command.strip_prefix(root.as_str())?.strip_prefix('/'));
        out.command = Some(match inside {
            Some(rest) => format!("./{rest}"),
            None if command.contains('/') || command.contains('\\') => {
                return Err(format!(
                    "its command `{command}` is a path outside the plugin, and Agent Plugins runs only a program's name or a `./` path in the plugin"
                ));
            }
            None => command.clone(),
        });
    }
    out.args = server.args.iter().map(|a| replace(a)).collect();
    for value in out.env.values_mut() {
        if let Value::String(text) = value {
            *text = replace(text);
        }
    }
    out.cwd = server.cwd.as_deref().map(|cwd| {
        let cwd = replace(cwd);
        match cwd.strip_prefix("${PLUGIN_ROOT}/") {
            Some(rest) => format!("./{rest}"),
            None => cwd,
        }
    });
    Ok(out)
}

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

/// A server as an Agent Plugins 1.0 `mcp.json` holds it (`mcp-1.0.0.schema.json`, which
/// the SDK validates against: `stdio` with a command, `streamable-http` or `sse` with a
/// URL, string values, a plugin-relative `cwd`, no other field), or why it cannot be.
fn server_json(server: &McpServer, info: &PluginInfo) -> Result<Value, String> {
    let server = &in_plugin_terms(server, info)?;
    if !server.enabled {
        return Err("it is disabled, and Agent Plugins servers cannot be".into());
    }
    let strings = |map: &Map<String, Value>, what: &str| -> Result<(), String> {
        match map.iter().find(|(_, v)| !v.is_string()) {
            Some((key, _)) => Err(format!("its {what} `{key}` is not a string")),
            None => Ok(()),
        }
    };
    let mut out = Map::new();
    match server.transport.as_str() {
        "stdio" => {
            if server.command.as_deref().unwrap_or_default().is_empty() {
                return Err("it has no command".into());
            }
            strings(&server.env, "environment variable")?;
            if let Some(key) = ["PLUGIN_ROOT", "PLUGIN_DATA"]
                .into_iter()
                .find(|k| server.env.contains_key(*k))
            {
                return Err(format!("it sets `{key}`, which Agent Plugins reserves"));
            }
            if let Some(cwd) = &server.cwd
                && !["./", "${PLUGIN_ROOT}", "${PLUGIN_DATA}"]
                    .iter()
                    .any(|p| cwd.starts_with(p))
            {
                return Err(format!(
                    "its `cwd` `{cwd}` is not under `./`, `${{PLUGIN_ROOT}}` or `${{PLUGIN_DATA}}`"
                ));
            }
            out.insert("type".into(), json!("stdio"));
            stdio_fields(server, &mut out);
        }
        transport @ ("http" | "streamable-http" | "sse") => {
            let url = server.url.as_deref().unwrap_or_default();
            if url.is_empty() {
                return Err("it has no URL".into());
            }
            strings(&server.headers, "header")?;
            let kind = if transport == "sse" {
                "sse"
            } else {
                "streamable-http"
            };
            out.insert("type".into(), json!(kind));
            out.insert("url".into(), json!(url));
            if !server.headers.is_empty() {
                out.insert("headers".into(), Value::Object(server.headers.clone()));
            }
        }
        other => {
            return Err(format!(
                "its transport `{other}` is not one Agent Plugins has"
            ));
        }
    }
    Ok(Value::Object(out))
}

/// What is said of a plugin whose marketplace entry defines some of it: written as Claude
/// Code installs it, while the SDK loading it from its marketplace reads the folder only.
fn entry_defines(info: &PluginInfo) -> Option<String> {
    let definition = info.locked.definition.as_ref()?;
    let mut keys: Vec<String> = definition
        .components
        .keys()
        .map(|k| format!("`{k}`"))
        .collect();
    if !definition.strict {
        keys.insert(0, "`strict: false`".to_owned());
    }
    Some(format!(
        "plugin `{}`: written with what its marketplace entry defines ({}), as Claude Code installs it; the OpenHands SDK loading it from its marketplace itself reads only the plugin's folder",
        info.locked.name,
        keys.join(", ")
    ))
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

    fn writes_the_sets_reading(&self) -> bool {
        true
    }

    fn cannot_express(&self, set: &PluginSet, info: &PluginInfo) -> Vec<String> {
        let name = info.locked.name.as_str();
        let mut out = Vec::new();
        let own = own(set, info);
        out.extend(entry_defines(info));
        out.extend(own.unpinned_warnings(name));
        for skill in &own.skills {
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
        for (server_name, server) in &own.servers {
            match server_json(server, info) {
                Err(why) => out.push(format!(
                    "plugin `{name}`: MCP server `{server_name}` is not written: {why}"
                )),
                Ok(_) if server.transport == "sse" => out.push(format!(
                    "plugin `{name}`: MCP server `{server_name}` uses `sse`, which Agent Plugins 1.0 leaves optional and the OpenHands SDK skips; written as it is"
                )),
                Ok(json)
                    if !server.literal
                        && json
                            .to_string()
                            .replace("${PLUGIN_ROOT}", "")
                            .replace("${PLUGIN_DATA}", "")
                            .contains("${") =>
                {
                    out.push(format!(
                        "plugin `{name}`: MCP server `{server_name}` holds `${{VAR}}` placeholders, which Agent Plugins servers do not fill; written as it is"
                    ));
                }
                Ok(_) => {}
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
    ) -> Result<Vec<(PathBuf, Plan)>, PluginError> {
        let mut plan = Plan {
            owned: marked(to.root, Path::new(""), MARK),
            ..Plan::default()
        };
        // Each plugin's folder is planned on its own (listing its skills' folders in the
        // store), a few plugins at once.
        let folders = berth_runtime::parallel::try_map(plugins, 1, |info| {
            let mut folder = Plan::default();
            plugin_folder(set, info, &mut folder)?;
            Ok::<_, PluginError>(folder)
        })?;
        plan.absorb(folders);
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
fn plugin_folder(set: &PluginSet, info: &PluginInfo, plan: &mut Plan) -> Result<(), PluginError> {
    let name = info.locked.name.as_str();
    let dir = PathBuf::from(name);
    let mut manifest = json!({
        "$schema": PLUGIN_SCHEMA,
        "name": name,
        "version": info.manifest.version,
    });
    if !info.manifest.description.is_empty() {
        manifest["description"] = json!(info.manifest.description);
    }
    // What the OpenHands SDK would refuse (`plugin-1.0.0.schema.json`) is not written.
    let wrong = violations(SCHEMA_PLUGIN, &manifest);
    if !wrong.is_empty() {
        plan.warnings.push(format!(
            "plugin `{name}` is not written: its `plugin.json` would not be valid Agent Plugins 1.0, which the OpenHands SDK refuses ({})",
            wrong.join("; ")
        ));
        plan.refused.push(name.to_owned());
        return Ok(());
    }
    plan.own(dir.clone(), "agent-plugins");
    plan.files
        .insert(dir.join("plugin.json"), Planned::File(pretty(&manifest)));
    let own = own(set, info);
    for skill in &own.skills {
        skill_files(info, skill, &dir, plan)?;
    }
    for (agent, _) in set.agents.iter().filter(|(_, p)| p == name) {
        let file = agent.source.rsplit('/').next().unwrap_or(&agent.source);
        plan.files.insert(
            dir.join("dev.openhands/agents").join(file),
            copy_of(info, Path::new(&agent.source)),
        );
    }
    let servers: Map<String, Value> = own
        .servers
        .iter()
        .filter_map(|(n, server)| {
            server_json(server, info)
                .ok()
                .map(|json| (n.to_string(), json))
        })
        .collect();
    if !servers.is_empty() {
        let mcp = json!({"$schema": MCP_SCHEMA, "mcpServers": servers});
        let wrong = violations(SCHEMA_MCP, &mcp);
        if wrong.is_empty() {
            plan.files
                .insert(dir.join("mcp.json"), Planned::File(pretty(&mcp)));
        } else {
            plan.warnings.push(format!(
                "plugin `{name}`: its `mcp.json` is not written: it would not be valid Agent Plugins 1.0 ({})",
                wrong.join("; ")
            ));
        }
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
) -> Result<(), PluginError> {
    match written_as(skill, &info.locked.name) {
        Written::Folder => {
            let folder = Path::new(&skill.source).parent().unwrap_or(Path::new(""));
            for rel in files_in(info, folder)? {
                plan.files.insert(
                    dir.join("skills").join(&skill.name).join(&rel),
                    copy_of(info, &folder.join(&rel)),
                );
            }
        }
        Written::Command(command) => {
            plan.files.insert(
                dir.join("dev.openhands/commands")
                    .join(format!("{command}.md")),
                copy_of(info, Path::new(&skill.source)),
            );
        }
        Written::Flat => {
            plan.files.insert(
                dir.join(&skill.source),
                copy_of(info, Path::new(&skill.source)),
            );
        }
        Written::Nowhere | Written::NotAName => {}
    }
    Ok(())
}
