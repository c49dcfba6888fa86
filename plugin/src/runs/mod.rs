//! What a plugin can make a harness run, read the way every harness berth supports reads
//! a plugin's folder: the OpenHands SDK, Claude Code (2.1.197 and 2.1.328), Codex (0.169)
//! and Agent Plugins 1.0. The review (`review::surface_of`) builds on it, so that what
//! berth approves, denies, diffs and audits is a superset of what any of them would run.
//!
//! The plugin set (`set.rs`) keeps following the SDK alone; this reading is wider on
//! purpose. It reads every manifest a harness may take (`.claude-plugin/`, `.codex-plugin/`,
//! `.cursor-plugin/`, `.plugin/` and a root `plugin.json`, whatever else is beside them),
//! every component field of each (`hooks`, `mcpServers`, `lspServers`, `monitors`,
//! `settings`, `binaries`, `workflows`: inline, as a path, or as a list of either), the
//! conventional files (`hooks/hooks.json`, `.mcp.json` with or without its `mcpServers`
//! wrapper, `mcp.json`, `.lsp.json`, `monitors/monitors.json`, `settings.json`), what a
//! marketplace entry defines, and the `hooks` and MCP servers in the front matter of every
//! markdown file. A hook of an event no harness is known to have is still a hook.
//!
//! What cannot be read, or not modelled (a hooks file that is not JSON, an MCPB bundle, a
//! server without a command or URL), is an [`Unmodeled`] entry: it counts as the
//! capability it may grant, so a policy that denies the capability refuses the plugin.
//!
//! The documents come from the component model ([`crate::model`], every input format's
//! reader); `found` takes each file once and notes what cannot be read, `entries` turns
//! each document into hooks, servers and what could not be modelled.

mod commands;
mod entries;
mod found;
mod hooks;
pub mod in_prose;
mod values;

use std::collections::BTreeMap;

use berth_lockfile_schema::EntryDefinition;
use berth_lockfile_schema::governance::Capability;
use berth_lockfile_schema::harness_keys::{Place, read_from_line};
use serde::Serialize;

use crate::error::PluginError;
use crate::model::{PluginModel, Reader};
use crate::root::PluginRoot;

/// One hook, or any other command a harness runs on its own (a Claude Code monitor, a
/// status line): `event` says which.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookEntry {
    /// The event, snake_case (`pre_tool_use`, `notification`); `monitor` for a monitor,
    /// `subagent_status_line` for a status line.
    pub event: String,
    /// The matcher (`*` when none is given); a monitor's `when`.
    pub matcher: String,
    /// `command`, `prompt`, `agent`, `mcp_tool`, or whatever `type` the file gives.
    pub kind: String,
    /// What runs: a command hook's shell command (or program, with `args`), a prompt or
    /// agent hook's prompt, an MCP tool hook's `server`/`tool`, as written.
    pub command: String,
    /// The arguments of an exec-form command hook.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Seconds before it is killed (60 when the file gives none).
    pub timeout: u64,
    /// Whether it runs in the background, not blocking what it guards (`async`,
    /// `asyncRewake`).
    #[serde(rename = "async", skip_serializing_if = "std::ops::Not::not")]
    pub is_async: bool,
    /// The file defining it (`hooks/hooks.json`, `.claude-plugin/plugin.json#hooks`,
    /// `agents/reviewer.md`, `its marketplace entry`).
    pub source: String,
    /// Every field as written (canonical JSON, the matcher included): two hooks that
    /// differ in any field (`if`, `shell`, `once`, `statusMessage`) are not equal.
    #[serde(skip)]
    pub raw: String,
}

/// One MCP server. Environment and header values are compared but never shown: they may
/// be secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpEntry {
    /// `stdio`, `http`, `streamable-http`, `sse`, `ws`, as given or as its fields imply.
    pub transport: String,
    /// The program (stdio).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// The endpoint (remote transports).
    pub url: Option<String>,
    /// The names of the environment variables it is given, sorted.
    pub env_keys: Vec<String>,
    /// The names of the request headers it sends, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub header_keys: Vec<String>,
    /// Its working folder.
    pub cwd: Option<String>,
    /// The file defining it (`.mcp.json`, `agents/reviewer.md`, `skills/x/.mcp.json`).
    pub source: String,
    /// Environment values by name, as written.
    #[serde(skip)]
    pub env_values: BTreeMap<String, String>,
    /// Header values by name, as written.
    #[serde(skip)]
    pub header_values: BTreeMap<String, String>,
    /// Every field as written (canonical JSON).
    #[serde(skip)]
    pub raw: String,
}

impl McpEntry {
    /// Whether it is reached by URL rather than started as a program.
    pub fn is_remote(&self) -> bool {
        self.command.is_none() && self.url.is_some()
    }

    /// The names whose environment values differ between `self` and `other` (added and
    /// removed names included), sorted.
    pub fn env_changed(&self, other: &McpEntry) -> Vec<String> {
        changed_keys(&self.env_values, &other.env_values)
    }

    /// The names whose header values differ between `self` and `other`, sorted.
    pub fn headers_changed(&self, other: &McpEntry) -> Vec<String> {
        changed_keys(&self.header_values, &other.header_values)
    }
}

/// The keys whose values differ between `a` and `b` (those in one only included), sorted.
pub fn changed_keys(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let mut keys: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .chain(b.keys().filter(|k| !a.contains_key(*k)).cloned())
        .collect();
    keys.sort();
    keys
}

/// One LSP server: its definition as written, with environment values hidden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct LspEntry {
    /// The definition (canonical JSON), each `env` value shown as `(set)`.
    pub shown: serde_json::Value,
    /// The definition as written (canonical JSON).
    #[serde(skip)]
    pub raw: String,
}

/// Something a harness may run that berth cannot model: it counts as `capability`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unmodeled {
    /// The capability it may grant.
    #[serde(serialize_with = "capability_name")]
    pub capability: Capability,
    /// The file (or `FILE#field`).
    pub source: String,
    /// What it is and why it is not modelled.
    pub what: String,
}

fn capability_name<S: serde::Serializer>(c: &Capability, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.as_str())
}

/// What an unknown key is, in messages: `` `KEY`, a key of PLACE that berth does not
/// model (...) ``.
pub(crate) fn unknown_key(place: Place, key: &str) -> String {
    format!(
        "`{key}`, a key of {} that berth does not model (its table of harness keys is read from {}); a harness may run or grant something with it",
        place.noun(),
        read_from_line()
    )
}

/// What a plugin can make any harness run, from its folder and its marketplace entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Runs {
    /// Hooks, monitors and status lines, sorted by event, matcher, command and source.
    pub hooks: Vec<HookEntry>,
    /// MCP servers: a plugin-level one by its name, one from a markdown file's front matter
    /// or a skill folder's `.mcp.json` as `<file>#<name>`; a name given twice is kept
    /// twice (`name#2`).
    pub mcp_servers: BTreeMap<String, McpEntry>,
    /// LSP servers by name, the same way.
    pub lsp_servers: BTreeMap<String, LspEntry>,
    /// Executables a manifest declares for a harness to fetch (`binaries`): `bin/NAME` ->
    /// the declared `sha256`.
    pub declared_binaries: BTreeMap<String, String>,
    /// Folders or files a manifest names as `workflows` (scripts a harness runs).
    pub workflows: Vec<String>,
    /// What may run but cannot be modelled.
    pub unmodeled: Vec<Unmodeled>,
    /// What was read in an unexpected way, naming plugin and file.
    pub warnings: Vec<String>,
}

impl Runs {
    /// Whether something that is not modelled counts as `capability`.
    pub fn unmodeled_has(&self, capability: Capability) -> bool {
        self.unmodeled.iter().any(|u| u.capability == capability)
    }
}

/// What the plugin at `root` can make any harness run; `definition` is what its
/// marketplace entry defines of it (the lock's).
/// `files` are the plugin's files and links, relative and sorted (their markdown front
/// matter is read).
pub fn read_runs(
    root: &PluginRoot,
    definition: Option<&EntryDefinition>,
    files: &[&str],
) -> Result<Runs, PluginError> {
    let mut model = PluginModel::default();
    runs_of(&mut Reader::new(root, definition, &mut model), files)
}

/// As [`read_runs`], through `reader`: what it read before is not read again.
pub fn runs_of(reader: &mut Reader<'_>, files: &[&str]) -> Result<Runs, PluginError> {
    let everything = reader.everything(files)?;
    let plugin = reader.root().plugin();
    let mut runs = Runs::default();
    for document in found::readable(everything, plugin, &mut runs) {
        entries::add(document, plugin, &mut runs);
    }
    runs.hooks.sort_by(|a, b| {
        (&a.event, &a.matcher, &a.command, &a.kind, &a.source, &a.raw)
            .cmp(&(&b.event, &b.matcher, &b.command, &b.kind, &b.source, &b.raw))
    });
    runs.hooks.dedup();
    Ok(runs)
}

#[cfg(test)]
mod tests;
