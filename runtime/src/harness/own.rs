//! What a plugin defines, as a harness that keeps each plugin apart sees it, including
//! what the set's merge gave to another plugin: a skill or an MCP
//! server whose name a later plugin also uses. The set keeps one per name (the later), as
//! the SDK does; a harness that keeps each plugin apart (a Gemini extension, an Agent
//! Plugins folder) has both, so the targets that write per plugin take the earlier one
//! from the plugin's own reading, re-read from the model the set kept.

use std::borrow::Cow;

use berth_lockfile_schema::runner::parse_runner;

use crate::components::load_components;
use crate::mcp::McpServer;
use crate::model::Reader;
use crate::root::PluginRoot;
use crate::set::{PluginInfo, PluginSet};
use crate::skills::Skill;

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

/// The plugin's own components, read again from the model the set kept, with its root
/// where the set's commands see it.
fn own_components(info: &PluginInfo) -> Option<crate::components::Components> {
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
