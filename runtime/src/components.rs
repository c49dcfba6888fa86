//! A plugin's components as the runtime loads them: from its folder's conventional places
//! and, when its marketplace entry defines it (the lock's `definition`), from what the
//! entry gives, as Claude Code 2.1 installs it: what the entry gives adds to the folder's,
//! except a `strict: false` entry's `skills`, which replace the folder's.

use std::path::Path;

use berth_lockfile_schema::EntryDefinition;
use serde_json::Value;

use crate::agents::{Agent, load_agent_paths, load_agents};
use crate::commands::{Command, load_command_paths, load_commands};
use crate::error::RuntimeError;
use crate::hooks::{HookMatcher, hooks_from_value, load_hooks};
use crate::manifest::Format;
use crate::mcp::{McpServer, entry_servers, load_mcp};
use crate::root::PluginRoot;
use crate::skills::{Skill, load_skill_paths, load_skills};

/// Hook matchers by event.
pub(crate) type Hooks = Vec<(&'static str, Vec<HookMatcher>)>;

/// What one plugin brings to the set.
pub(crate) struct Components {
    pub(crate) skills: Vec<Skill>,
    pub(crate) commands: Vec<Command>,
    pub(crate) hooks: Hooks,
    pub(crate) servers: Vec<(String, McpServer)>,
    pub(crate) agents: Vec<Agent>,
    /// LSP servers by name, plugin-root variables filled in.
    pub(crate) lsp: Vec<(String, Value)>,
}

/// Loads a plugin's components. `go_on` is asked between kinds (a caller's cancel flag).
pub(crate) fn load_components(
    root: &PluginRoot,
    format: Format,
    data_dir: &Path,
    manifest_file: Option<&str>,
    definition: Option<&EntryDefinition>,
    warnings: &mut Vec<String>,
    go_on: &dyn Fn() -> Result<(), RuntimeError>,
) -> Result<Components, RuntimeError> {
    // What the folder's conventional places give, kind by kind. Claude Code 2.1 reads
    // every kind from its usual place and adds what the entry gives, except `skills`: a
    // `strict: false` entry's list replaces the folder's `skills/` (as `anthropics/skills`
    // lists 4 of its 17 skills as `document-skills`). Checked against the real Claude Code
    // by tests/materialize.rs.
    let from_folder = |key: &str| {
        definition.is_none_or(|d| d.strict || key != "skills" || !d.components.contains_key(key))
    };
    let mut c = Components {
        skills: Vec::new(),
        commands: Vec::new(),
        hooks: Vec::new(),
        servers: Vec::new(),
        agents: Vec::new(),
        lsp: Vec::new(),
    };
    if from_folder("skills") {
        c.skills = load_skills(root, warnings)?;
    }
    go_on()?;
    if from_folder("commands") {
        c.commands = load_commands(root, format, warnings)?;
    }
    go_on()?;
    if from_folder("hooks") {
        c.hooks = load_hooks(root, format, warnings)?;
    }
    if from_folder("mcpServers") {
        c.servers = load_mcp(root, format, data_dir, warnings)?;
    }
    go_on()?;
    if from_folder("agents") {
        c.agents = load_agents(root, format, warnings)?;
    }
    let exposed = root.exposed().to_string_lossy().into_owned();
    c.lsp = crate::lsp::lsp_servers(root, manifest_file, definition, warnings)?
        .into_iter()
        .map(|(name, server)| (name, crate::lsp::expand_roots_in(server, &exposed)))
        .collect();
    let Some(def) = definition else {
        return Ok(c);
    };
    for skill in load_skill_paths(root, &def.paths("skills"), warnings)? {
        match c.skills.iter_mut().find(|s| s.name == skill.name) {
            Some(existing) => *existing = skill,
            None => c.skills.push(skill),
        }
    }
    c.commands
        .extend(load_command_paths(root, &def.paths("commands"), warnings)?);
    c.agents
        .extend(load_agent_paths(root, &def.paths("agents"), warnings)?);
    go_on()?;
    if let Some(value) = def.components.get("hooks") {
        for (event, matchers) in entry_hooks(root, value, warnings)? {
            match c.hooks.iter_mut().find(|(e, _)| *e == event) {
                Some((_, existing)) => existing.extend(matchers),
                None => c.hooks.push((event, matchers)),
            }
        }
    }
    if let Some(value) = def.components.get("mcpServers") {
        for (name, server) in entry_servers(root, value, warnings)? {
            c.servers.retain(|(n, _)| *n != name);
            c.servers.push((name, server));
        }
    }
    Ok(c)
}

/// The hooks a marketplace entry's `hooks` gives: a hooks document (object), a path to
/// one in the plugin, or a list of those.
fn entry_hooks(
    root: &PluginRoot,
    value: &Value,
    warnings: &mut Vec<String>,
) -> Result<Hooks, RuntimeError> {
    let plugin = root.plugin().to_owned();
    let exposed = root.exposed().to_string_lossy().into_owned();
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut out: Hooks = Vec::new();
    for item in items {
        let (label, document) = match item {
            Value::String(path) => match root.read_text(path)? {
                Some(text) => match crate::json::parse(&text) {
                    Ok(value) => (path.clone(), value),
                    Err(why) => {
                        warnings.push(format!(
                            "plugin `{plugin}`: `{path}`: {why}; no hooks loaded from it"
                        ));
                        continue;
                    }
                },
                None => {
                    warnings.push(format!(
                        "plugin `{plugin}`: its marketplace entry names hooks in `{path}`, which is not a file of the plugin"
                    ));
                    continue;
                }
            },
            other => ("its marketplace entry".to_owned(), other.clone()),
        };
        let mut warn =
            |message: String| warnings.push(format!("plugin `{plugin}`: {label}: {message}"));
        for (event, matchers) in hooks_from_value(document, &exposed, &mut warn) {
            match out.iter_mut().find(|(e, _)| *e == event) {
                Some((_, existing)) => existing.extend(matchers),
                None => out.push((event, matchers)),
            }
        }
    }
    Ok(out)
}
