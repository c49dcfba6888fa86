//! What a plugin defines, as a harness that keeps each plugin apart sees it, including
//! what the set's merge gave to another plugin: a skill or an MCP
//! server whose name a later plugin also uses. The set keeps one per name (the later), as
//! the SDK does; a harness that keeps each plugin apart (a Gemini extension, an Agent
//! Plugins folder) has both, so the targets that write per plugin take the earlier one
//! from the plugin's own reading, re-read from the model the set kept.

use std::borrow::Cow;

use berth_lockfile_schema::plugin_manifest::Format;
use berth_lockfile_schema::runner::parse_runner;

use super::files::string_or_list;
use berth_plugin::agents::{Agent, load_agents};
use berth_plugin::components::load_components;
use berth_plugin::mcp::{McpServer, unwrapped_servers};
use berth_plugin::model::Reader;
use berth_plugin::root::PluginRoot;
use berth_plugin::skills::Skill;
use berth_runtime::set::{PluginInfo, PluginSet};

/// A plugin's skills and MCP servers as a harness that keeps each plugin apart sees them:
/// the set's of it, and what it lost to a later plugin of the set.
#[derive(Debug, Default)]
pub(super) struct Own<'a> {
    /// Its skills and commands (commands never clash, being named after their plugin):
    /// the set's borrowed, those read again owned.
    pub(super) skills: Vec<Cow<'a, Skill>>,
    /// Its MCP servers, borrowed from the set or read again.
    pub(super) servers: Vec<(Cow<'a, str>, Cow<'a, McpServer>)>,
    /// Its MCP servers whose runner line (`npx`, `uvx`) the lock did not pin, being
    /// another plugin's name in the set: left out, for nothing floating to be written.
    pub(super) unpinned: Vec<String>,
}

/// `info`'s skills and servers: the set's (pinned as the set runs them), then those the
/// set holds under another plugin's name, re-read from the model the set kept (none for a
/// set built without its models).
pub(super) fn own<'a>(set: &'a PluginSet, info: &PluginInfo) -> Own<'a> {
    let name = info.locked.name.as_str();
    let taken_skill = |s: &str| set.skills.iter().any(|(k, p)| k.name == s && p != name);
    let taken_server = |s: &str| set.mcp_servers.iter().any(|(n, _, p)| n == s && p != name);
    let mut out = Own {
        skills: set
            .skills
            .iter()
            .filter(|(_, p)| p == name)
            .map(|(s, _)| Cow::Borrowed(s))
            .collect(),
        servers: set
            .mcp_servers
            .iter()
            .filter(|(_, _, p)| p == name)
            .map(|(n, s, _)| (Cow::Borrowed(n.as_str()), Cow::Borrowed(s)))
            .collect(),
        unpinned: Vec::new(),
    };
    // Only a plugin that lost something to a later one has more than the set's.
    if !set.overridden.iter().any(|p| p == name) {
        return out;
    }
    let Some(components) = own_components(info) else {
        return out;
    };
    out.skills.extend(
        components
            .skills
            .into_iter()
            .filter(|s| taken_skill(&s.name))
            .map(Cow::Owned),
    );
    for (server, config) in components.servers {
        if !taken_server(&server) {
            continue;
        }
        let runs_a_runner = config
            .command
            .as_deref()
            .is_some_and(|c| matches!(parse_runner(c, &config.args), Ok(Some(_))));
        if runs_a_runner {
            out.unpinned.push(server);
        } else {
            out.servers.push((Cow::Owned(server), Cow::Owned(config)));
        }
    }
    out
}

/// `info`'s skills and servers as Claude Code reads its folder, for a harness whose
/// reference is Claude Code's install (Gemini CLI has no install of Claude Code plugins of
/// its own): [`own`]'s, and what Claude Code reads beyond the set (which reads as the
/// SDK): the skills `.claude-plugin/plugin.json` names (`"skills": ["./extra/"]`), the
/// `skills/` folder of a `strict: false` entry with a `skills` list below its
/// marketplace's root, and the servers of a `.mcp.json` without its `mcpServers` wrapper.
/// The plugin is read again only when it has one of those.
pub(super) fn as_claude_reads<'a>(set: &'a PluginSet, info: &PluginInfo) -> Own<'a> {
    let mut out = own(set, info);
    let manifest = read_json(info, ".claude-plugin/plugin.json");
    let paths: Vec<String> = manifest
        .as_ref()
        .and_then(|m| m.get("skills"))
        .map(string_or_list)
        .unwrap_or_default()
        .iter()
        .map(|p| p.trim_start_matches("./").trim_end_matches('/').to_owned())
        .collect();
    // A `strict: false` entry's `skills` list replaces the plugin's `skills/` folder only
    // for a plugin at its marketplace's root; below it Claude Code reads the folder too.
    let folder_too = info
        .locked
        .definition
        .as_ref()
        .is_some_and(|d| !d.strict && d.components.contains_key("skills"))
        && !info.path.join(".claude-plugin/marketplace.json").is_file();
    let unwrapped = read_json(info, ".mcp.json")
        .is_some_and(|v| v.as_object().is_some_and(|m| !m.contains_key("mcpServers")));
    if paths.is_empty() && !folder_too && !unwrapped {
        return out;
    }
    let Some(mut model) = info.model.as_deref().cloned() else {
        return out;
    };
    let Ok(root) = PluginRoot::canonical(&info.locked.name, info.path.clone()) else {
        return out;
    };
    let root = root.exposed_at(info.root.clone());
    let mut reader = Reader::new(&root, info.locked.definition.as_ref(), &mut model);
    let mut warnings = Vec::new();
    let mut skills = berth_plugin::skills::load_skill_paths(&mut reader, &paths, &mut warnings)
        .unwrap_or_default();
    if folder_too {
        skills.extend(
            berth_plugin::skills::load_skills(&mut reader, &mut warnings).unwrap_or_default(),
        );
    }
    for skill in skills {
        if !out.skills.iter().any(|s| s.name == skill.name) {
            out.skills.push(Cow::Owned(skill));
        }
    }
    if unwrapped && let Ok(Some(file)) = reader.json(".mcp.json") {
        for (name, server) in unwrapped_servers(&root, ".mcp.json", &file, &mut warnings) {
            if !out.servers.iter().any(|(n, _)| *n == name) {
                out.servers.push((Cow::Owned(name), Cow::Owned(server)));
            }
        }
    }
    out
}

/// The JSON value of the plugin's file `rel` (reached without a link), if it holds one.
fn read_json(info: &PluginInfo, rel: &str) -> Option<serde_json::Value> {
    let bytes = super::guard::read_entry_file(&info.path, std::path::Path::new(rel))?;
    serde_json::from_slice(&bytes).ok()
}

impl Own<'_> {
    /// What is said of the servers left out for their runner line ([`Own::unpinned`]).
    pub(super) fn unpinned_warnings(&self, plugin: &str) -> Vec<String> {
        self.unpinned
            .iter()
            .map(|server| format!(
                "plugin `{plugin}`: MCP server `{server}` is not written: a later plugin's server has its name, so the lock pinned that one's package, not this one's"
            ))
            .collect()
    }
}

/// The plugin's own components, read again from the model the set kept, with its root
/// where the set's commands see it.
fn own_components(info: &PluginInfo) -> Option<berth_plugin::components::Components> {
    let mut model = (*info.model.clone()?).clone();
    let root = PluginRoot::canonical(&info.locked.name, info.path.clone())
        .ok()?
        .exposed_at(info.root.clone());
    let mut reader = Reader::new(&root, info.locked.definition.as_ref(), &mut model);
    let (manifest, _) = reader.manifest().ok()?;
    let mut warnings = Vec::new();
    load_components(
        &mut reader,
        &manifest,
        &info.data_dir,
        &mut warnings,
        &|| Ok(()),
    )
    .ok()
}

/// `info`'s agents as Claude Code reads them: the set's, and for an Agent Plugins plugin
/// (whose agents the set reads from `dev.openhands/agents/`) those of its `agents/`
/// folder, which Claude Code reads whatever manifest the plugin has.
pub(super) fn agents_as_claude_reads<'a>(
    set: &'a PluginSet,
    info: &PluginInfo,
) -> Vec<Cow<'a, Agent>> {
    let mut out: Vec<Cow<'a, Agent>> = set
        .agents
        .iter()
        .filter(|(_, p)| *p == info.locked.name)
        .map(|(agent, _)| Cow::Borrowed(agent))
        .collect();
    if info.manifest.format != Format::AgentPlugins {
        return out;
    }
    let Some(mut model) = info.model.as_deref().cloned() else {
        return out;
    };
    let Ok(root) = PluginRoot::canonical(&info.locked.name, info.path.clone()) else {
        return out;
    };
    let root = root.exposed_at(info.root.clone());
    let mut reader = Reader::new(&root, info.locked.definition.as_ref(), &mut model);
    let read = load_agents(&mut reader, Format::ClaudeCode, &mut Vec::new()).unwrap_or_default();
    for agent in read {
        if !out.iter().any(|a| a.name == agent.name) {
            out.push(Cow::Owned(agent));
        }
    }
    out
}
