//! What changed between two surfaces of a plugin, as a stable JSON document.
//!
//! Every field is left out of the JSON when it holds nothing, so an unchanged plugin
//! diffs to `{}`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::surface::{Component, HookEntry, McpEntry, Surface};
use berth_plugin::runs::{LspEntry, Unmodeled};

/// The differences between an old and a new [`Surface`].
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct SurfaceDiff {
    /// Hooks added and removed, identified by (event, matcher, kind, command, arguments,
    /// source): a changed command is a removal and an addition; any other field that
    /// differs (timeout, `async`, `if`, `shell`, ...) is a change.
    #[serde(skip_serializing_if = "HookDiff::is_empty")]
    pub hooks: HookDiff,
    /// MCP servers by name; a change carries the old and the new definition, and the names
    /// of the environment variables and headers whose values changed (never the values).
    #[serde(skip_serializing_if = "MapDiff::is_empty")]
    pub mcp_servers: MapDiff<McpEntry>,
    /// LSP servers by name (environment values hidden); a change carries the old and the
    /// new definition and the names of changed environment variables.
    #[serde(skip_serializing_if = "MapDiff::is_empty")]
    pub lsp_servers: MapDiff<LspEntry>,
    /// Executables by path; changed: the content differs.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub executables: NameDiff,
    /// Files named by hooks and servers, by path; changed: the content differs.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub named_files: NameDiff,
    /// Every file that is not prose, by path; changed: content, exec bit or link target.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub files: NameDiff,
    /// Prose files whose running or granting parts (shell lines, front matter naming
    /// tools, hooks or servers) changed.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub prose_runs: NameDiff,
    /// Prose files whose text changed, in a plugin that runs code on either side (a hook
    /// or server may read them, so their approval covers them); a change here alone is a
    /// change to prose only.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub prose_files: NameDiff,
    /// Skills by name; changed: the digest differs.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub skills: NameDiff,
    /// Commands by name; changed: the digest differs.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub commands: NameDiff,
    /// Sub-agents by name; changed: the digest differs.
    #[serde(skip_serializing_if = "NameDiff::is_empty")]
    pub agents: NameDiff,
    /// Skills, commands and sub-agents present in both whose tools differ, ordered by
    /// kind (`agent`, `command`, `skill`) then name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools_changed: Vec<ToolsChange>,
    /// Skills, commands and sub-agents (new ones included) whose shell lines differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shell_changed: Vec<ShellChange>,
    /// What a harness may run that berth cannot model, added and removed.
    #[serde(skip_serializing_if = "UnmodeledDiff::is_empty")]
    pub unmodeled: UnmodeledDiff,
    /// Whether what the plugin's marketplace entry defines of it changed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub definition_changed: bool,
    /// What observed MCP servers offer the model differently (tools, prompts, resources,
    /// instructions), by server.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_offers: BTreeMap<String, super::tools::OffersChange>,
}

/// Hooks added, removed and changed, each list ordered by event, matcher, kind, command
/// and source.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct HookDiff {
    /// Hooks only the new surface has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<HookEntry>,
    /// Hooks only the old surface has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<HookEntry>,
    /// Hooks in both whose other fields differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<Change<HookEntry>>,
}

/// Named definitions added, removed and changed, by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MapDiff<T> {
    /// Definitions only the new surface has.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub added: BTreeMap<String, T>,
    /// Definitions only the old surface has.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub removed: BTreeMap<String, T>,
    /// Definitions in both that differ.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub changed: BTreeMap<String, Change<T>>,
}

/// An item before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change<T> {
    /// As the old surface has it.
    pub old: T,
    /// As the new surface has it.
    pub new: T,
    /// The environment variables whose value changed (added and removed ones included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_changed: Vec<String>,
    /// The request headers whose value changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers_changed: Vec<String>,
}

impl<T> Change<T> {
    fn of(old: T, new: T) -> Self {
        Self {
            old,
            new,
            env_changed: Vec::new(),
            headers_changed: Vec::new(),
        }
    }
}

/// Names (or paths) added, removed and changed, sorted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NameDiff {
    /// Only in the new surface.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// Only in the old surface.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// In both, with different content.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

/// A skill's, command's or sub-agent's tools, before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolsChange {
    /// `skill`, `command` or `agent`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The old tools (`None`: not given).
    pub old: Option<Vec<String>>,
    /// The new tools (`None`: not given).
    pub new: Option<Vec<String>>,
}

/// A skill's, command's or sub-agent's shell lines, before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShellChange {
    /// `skill`, `command` or `agent`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The old lines (empty: none, or it is new).
    pub old: Vec<String>,
    /// The new lines.
    pub new: Vec<String>,
}

/// What cannot be modelled, added and removed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct UnmodeledDiff {
    /// Only in the new surface.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<Unmodeled>,
    /// Only in the old surface.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<Unmodeled>,
}

impl UnmodeledDiff {
    /// Whether nothing was added or removed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

impl<T> Default for MapDiff<T> {
    fn default() -> Self {
        Self {
            added: BTreeMap::new(),
            removed: BTreeMap::new(),
            changed: BTreeMap::new(),
        }
    }
}

impl HookDiff {
    /// Whether no hook was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

impl<T> MapDiff<T> {
    /// Whether nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

impl NameDiff {
    /// Whether nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

impl SurfaceDiff {
    /// Whether the two surfaces are the same in every category (warnings aside).
    pub fn is_empty(&self) -> bool {
        !self.changes_what_runs()
            && self.prose_files.is_empty()
            && self.skills.is_empty()
            && self.commands.is_empty()
            && self.agents.is_empty()
    }

    /// Whether what the plugin runs or grants changed: hooks, servers, executables, any
    /// file that is not prose, the running parts of prose (shell lines, granting front
    /// matter), tools, what cannot be modelled, or its marketplace entry's definition.
    pub fn changes_what_runs(&self) -> bool {
        !(self.hooks.is_empty()
            && self.mcp_servers.is_empty()
            && self.lsp_servers.is_empty()
            && self.executables.is_empty()
            && self.named_files.is_empty()
            && self.files.is_empty()
            && self.prose_runs.is_empty()
            && self.tools_changed.is_empty()
            && self.shell_changed.is_empty()
            && self.unmodeled.is_empty()
            && self.mcp_offers.is_empty()
            && !self.definition_changed)
    }
}

/// What changed from `old` to `new`.
pub fn diff(old: &Surface, new: &Surface) -> SurfaceDiff {
    let mut tools_changed = Vec::new();
    let mut shell_changed = Vec::new();
    for (kind, old_map, new_map) in [
        ("agent", &old.agents, &new.agents),
        ("command", &old.commands, &new.commands),
        ("skill", &old.skills, &new.skills),
    ] {
        tools_changed.extend(tools_diff(kind, old_map, new_map));
        shell_changed.extend(shell_diff(kind, old_map, new_map));
    }
    let prose_old: BTreeMap<String, String> = digests(&old.prose_runs);
    let prose_new: BTreeMap<String, String> = digests(&new.prose_runs);
    SurfaceDiff {
        hooks: hooks_diff(&old.hooks, &new.hooks),
        mcp_servers: map_diff(&old.mcp_servers, &new.mcp_servers, |o, n| {
            (o.env_changed(n), o.headers_changed(n))
        }),
        lsp_servers: map_diff(&old.lsp_servers, &new.lsp_servers, |o, n| {
            (lsp_env_changed(o, n), Vec::new())
        }),
        executables: name_diff(&old.executables, &new.executables),
        named_files: name_diff(&old.named_files, &new.named_files),
        files: name_diff(&old.files, &new.files),
        prose_runs: name_diff(&prose_old, &prose_new),
        prose_files: name_diff(covered_prose(old), covered_prose(new)),
        skills: name_diff(&old.skills, &new.skills),
        commands: name_diff(&old.commands, &new.commands),
        agents: name_diff(&old.agents, &new.agents),
        tools_changed,
        shell_changed,
        unmodeled: UnmodeledDiff {
            added: new
                .unmodeled
                .iter()
                .filter(|u| !old.unmodeled.contains(u))
                .cloned()
                .collect(),
            removed: old
                .unmodeled
                .iter()
                .filter(|u| !new.unmodeled.contains(u))
                .cloned()
                .collect(),
        },
        definition_changed: old.definition != new.definition,
        mcp_offers: super::tools::tools_diff(&old.mcp_tools, &new.mcp_tools),
    }
}

/// The prose files a surface's approval covers whole: all of them in a plugin that runs
/// code, none in one that runs nothing.
fn covered_prose(surface: &Surface) -> &BTreeMap<String, String> {
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    if surface.runs_code() {
        &surface.prose
    } else {
        &NONE
    }
}

fn digests(parts: &BTreeMap<String, Vec<String>>) -> BTreeMap<String, String> {
    parts
        .iter()
        .map(|(path, p)| (path.clone(), p.join("\n\u{0}")))
        .collect()
}

/// The environment variables whose values differ between two LSP definitions.
fn lsp_env_changed(old: &LspEntry, new: &LspEntry) -> Vec<String> {
    let env = |e: &LspEntry| -> BTreeMap<String, String> {
        serde_json::from_str::<serde_json::Value>(&e.raw)
            .ok()
            .and_then(|v| v.get("env").and_then(|e| e.as_object()).cloned())
            .map(|m| m.into_iter().map(|(k, v)| (k, v.to_string())).collect())
            .unwrap_or_default()
    };
    berth_plugin::runs::changed_keys(&env(old), &env(new))
}

type HookKey<'a> = (&'a str, &'a str, &'a str, &'a str, &'a [String], &'a str);

fn hook_key(h: &HookEntry) -> HookKey<'_> {
    (
        &h.event, &h.matcher, &h.kind, &h.command, &h.args, &h.source,
    )
}

/// Hooks paired by identity; the same hook given twice pairs in order, and what is left
/// over on either side was added or removed.
fn hooks_diff(old: &[HookEntry], new: &[HookEntry]) -> HookDiff {
    let mut by_key: BTreeMap<HookKey<'_>, (Vec<&HookEntry>, Vec<&HookEntry>)> = BTreeMap::new();
    for h in old {
        by_key.entry(hook_key(h)).or_default().0.push(h);
    }
    for h in new {
        by_key.entry(hook_key(h)).or_default().1.push(h);
    }
    let mut out = HookDiff::default();
    for (olds, news) in by_key.into_values() {
        for (o, n) in olds.iter().zip(&news) {
            if o != n {
                out.changed.push(Change::of((*o).clone(), (*n).clone()));
            }
        }
        out.removed
            .extend(olds.iter().skip(news.len()).map(|h| (*h).clone()));
        out.added
            .extend(news.iter().skip(olds.len()).map(|h| (*h).clone()));
    }
    out
}

fn map_diff<T: Clone + PartialEq>(
    old: &BTreeMap<String, T>,
    new: &BTreeMap<String, T>,
    values: impl Fn(&T, &T) -> (Vec<String>, Vec<String>),
) -> MapDiff<T> {
    let mut out = MapDiff::default();
    for (name, o) in old {
        match new.get(name) {
            None => {
                out.removed.insert(name.clone(), o.clone());
            }
            Some(n) if n != o => {
                let (env_changed, headers_changed) = values(o, n);
                let change = Change {
                    env_changed,
                    headers_changed,
                    ..Change::of(o.clone(), n.clone())
                };
                out.changed.insert(name.clone(), change);
            }
            Some(_) => {}
        }
    }
    for (name, n) in new {
        if !old.contains_key(name) {
            out.added.insert(name.clone(), n.clone());
        }
    }
    out
}

/// Digests (or components, compared by digest) by name.
trait Digested {
    fn digest(&self) -> &str;
}

impl Digested for String {
    fn digest(&self) -> &str {
        self
    }
}

impl Digested for Component {
    fn digest(&self) -> &str {
        &self.digest
    }
}

fn name_diff<T: Digested>(old: &BTreeMap<String, T>, new: &BTreeMap<String, T>) -> NameDiff {
    let mut out = NameDiff::default();
    for (name, o) in old {
        match new.get(name) {
            None => out.removed.push(name.clone()),
            Some(n) if n.digest() != o.digest() => out.changed.push(name.clone()),
            Some(_) => {}
        }
    }
    out.added = new
        .keys()
        .filter(|name| !old.contains_key(*name))
        .cloned()
        .collect();
    out
}

fn tools_diff(
    kind: &'static str,
    old: &BTreeMap<String, Component>,
    new: &BTreeMap<String, Component>,
) -> Vec<ToolsChange> {
    old.iter()
        .filter_map(|(name, o)| {
            let n = new.get(name)?;
            (n.tools != o.tools).then(|| ToolsChange {
                kind,
                name: name.clone(),
                old: o.tools.clone(),
                new: n.tools.clone(),
            })
        })
        .collect()
}

/// Shell lines that differ, for components in both and for new ones that have any.
fn shell_diff(
    kind: &'static str,
    old: &BTreeMap<String, Component>,
    new: &BTreeMap<String, Component>,
) -> Vec<ShellChange> {
    new.iter()
        .filter_map(|(name, n)| {
            let before = old.get(name).map(|o| o.shell.clone()).unwrap_or_default();
            (before != n.shell).then(|| ShellChange {
                kind,
                name: name.clone(),
                old: before,
                new: n.shell.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
