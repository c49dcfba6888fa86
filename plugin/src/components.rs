//! A plugin's components as the plugin set takes them: the OpenHands SDK's reading of the
//! component model ([`crate::model`]), from its layout's conventional places and, when its
//! marketplace entry defines it (the lock's `definition`), from what the entry gives, as
//! Claude Code 2.1 installs it: what the entry gives adds to the folder's, except a
//! `strict: false` entry's `skills`, which replace the folder's.

use std::path::Path;

use serde_json::Value;

use crate::agents::{Agent, load_agent_paths, load_agents};
use crate::commands::{Command, load_command_paths, load_commands};
use crate::error::PluginError;
use crate::hooks::{HookMatcher, hooks_from_value, load_hooks};
use crate::manifest::PluginManifest;
use crate::mcp::{McpServer, entry_servers, load_mcp};
use crate::model::{EntryValue, Kind, Reader};
use crate::skills::{Skill, load_skill_paths, load_skills};

/// Hook matchers by event.
pub type Hooks = Vec<(&'static str, Vec<HookMatcher>)>;

/// What one plugin brings to the set.
#[derive(Debug, Default)]
pub struct Components {
    pub skills: Vec<Skill>,
    pub commands: Vec<Command>,
    pub hooks: Hooks,
    pub servers: Vec<(String, McpServer)>,
    pub agents: Vec<Agent>,
    /// LSP servers by name, plugin-root variables filled in.
    pub lsp: Vec<(String, Value)>,
}

/// Loads a plugin's components through `reader`. `go_on` is asked between kinds (a
/// caller's cancel flag).
pub fn load_components(
    reader: &mut Reader<'_>,
    manifest: &PluginManifest,
    data_dir: &Path,
    warnings: &mut Vec<String>,
    go_on: &dyn Fn() -> Result<(), PluginError>,
) -> Result<Components, PluginError> {
    let mut c = from_folder(reader, manifest, data_dir, warnings, go_on)?;
    let exposed = reader.root().exposed().to_string_lossy().into_owned();
    c.lsp = crate::lsp::lsp_servers(reader, manifest.file, warnings)?
        .into_iter()
        .map(|(name, server)| (name, crate::lsp::expand_roots_in(server, &exposed)))
        .collect();
    if reader.definition().is_some() {
        from_entry(reader, &mut c, warnings, go_on)?;
    }
    Ok(c)
}

/// What the folder's conventional places give, kind by kind. Claude Code 2.1 reads every
/// kind from its usual place and adds what the entry gives, except `skills`: a
/// `strict: false` entry's list replaces the folder's `skills/` (as `anthropics/skills`
/// lists 4 of its 17 skills as `document-skills`). Checked against the real Claude Code
/// by tests/it/materialize.rs.
fn from_folder(
    reader: &mut Reader<'_>,
    manifest: &PluginManifest,
    data_dir: &Path,
    warnings: &mut Vec<String>,
    go_on: &dyn Fn() -> Result<(), PluginError>,
) -> Result<Components, PluginError> {
    let definition = reader.definition();
    let from_folder = |key: &str| {
        definition.is_none_or(|d| d.strict || key != "skills" || !d.components.contains_key(key))
    };
    let format = manifest.format;
    let mut c = Components::default();
    if from_folder("skills") {
        c.skills = load_skills(reader, warnings)?;
    }
    go_on()?;
    c.commands = load_commands(reader, format, warnings)?;
    go_on()?;
    c.hooks = load_hooks(reader, format, warnings)?;
    c.servers = load_mcp(reader, format, data_dir, warnings)?;
    go_on()?;
    c.agents = load_agents(reader, format, warnings)?;
    Ok(c)
}

/// Adds what the marketplace entry gives.
fn from_entry(
    reader: &mut Reader<'_>,
    c: &mut Components,
    warnings: &mut Vec<String>,
    go_on: &dyn Fn() -> Result<(), PluginError>,
) -> Result<(), PluginError> {
    let paths = reader.entry_paths("skills");
    for skill in load_skill_paths(reader, &paths, warnings)? {
        match c.skills.iter_mut().find(|s| s.name == skill.name) {
            Some(existing) => *existing = skill,
            None => c.skills.push(skill),
        }
    }
    // A file the entry names that the folder gave already (`agents/x.md`) is one
    // component, not two.
    let paths = reader.entry_paths("commands");
    for command in load_command_paths(reader, &paths, warnings)? {
        if !c.commands.iter().any(|k| k.source == command.source) {
            c.commands.push(command);
        }
    }
    let paths = reader.entry_paths("agents");
    for agent in load_agent_paths(reader, &paths, warnings)? {
        if !c.agents.iter().any(|a| a.source == agent.source) {
            c.agents.push(agent);
        }
    }
    go_on()?;
    for (event, matchers) in entry_hooks(reader, warnings)? {
        match c.hooks.iter_mut().find(|(e, _)| *e == event) {
            Some((_, existing)) => existing.extend(matchers),
            None => c.hooks.push((event, matchers)),
        }
    }
    for (name, server) in entry_servers(reader, warnings)? {
        c.servers.retain(|(n, _)| *n != name);
        c.servers.push((name, server));
    }
    Ok(())
}

/// The hooks a marketplace entry's `hooks` gives: a hooks document (object), a path to
/// one in the plugin, or a list of those.
fn entry_hooks(reader: &mut Reader<'_>, warnings: &mut Vec<String>) -> Result<Hooks, PluginError> {
    let plugin = reader.root().plugin().to_owned();
    let exposed = reader.root().exposed().to_string_lossy().into_owned();
    let mut out: Hooks = Vec::new();
    for value in reader.entry_values(Kind::Hooks)? {
        let (label, document) = match value {
            EntryValue::Value(label, document) => (label, document),
            EntryValue::Missing(path) => {
                warnings.push(format!(
                    "plugin `{plugin}`: its marketplace entry names hooks in `{path}`, which is not a file of the plugin"
                ));
                continue;
            }
            EntryValue::Invalid(path, why) => {
                warnings.push(format!(
                    "plugin `{plugin}`: `{path}`: {why}; no hooks loaded from it"
                ));
                continue;
            }
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
