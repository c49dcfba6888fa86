//! A plugin's components as its store entry holds them, read once: the model that the
//! plugin set (the OpenHands SDK's rules: `components.rs` and its loaders), the review
//! (what any harness would run: `runs/`) and `berth materialize` (`harness/`) consume,
//! each applying its own rules to the same documents.
//!
//! Each input format has its reader, which knows where the format keeps what:
//! `claude_layout.rs` (the Claude Code layout, with everything Claude Code accepts, and the
//! manifests Codex, Cursor and the OpenHands SDK read in the same shape),
//! `agent_plugins_layout.rs` (Agent Plugins 1.0) and `marketplace_entry.rs` (what a
//! marketplace entry defines of its plugin). They read through a [`Reader`], which reads
//! each file once, however many places name it, and keeps what it read in the
//! [`PluginModel`]: JSON documents (hooks, MCP and LSP servers, monitors, settings) and
//! markdown files (skills, commands, agents, and the documents in their front matter).
//! `fields.rs` reads a component field (inline, a path, or a list of either) the same way
//! for every format; `every.rs` lists every document of every format in the order the
//! review takes them.

mod agent_plugins_layout;
mod claude_layout;
mod every;
mod fields;
mod markdown;
mod marketplace_entry;
mod reader;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

pub use agent_plugins_layout::AGENT_PLUGINS_MCP_SCHEMA;
pub use every::{Everything, Found, GEMINI_EXTENSION};
pub use marketplace_entry::{ENTRY, EntryValue};
pub use reader::Reader;

use berth_lockfile_schema::plugin_manifest::Format;

/// What a document defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Hooks by event (`{"hooks": {...}}` or the events alone).
    Hooks,
    /// MCP servers by name (`{"mcpServers": {...}}` or the servers alone).
    Mcp,
    /// LSP servers by name (`{"lspServers": {...}}` or the servers alone).
    Lsp,
    /// Claude Code monitors (a list, or `{"monitors": [...]}`).
    Monitors,
    /// Claude Code plugin settings (`settings.json`, a manifest's `settings`).
    Settings,
}

impl Kind {
    /// What a document of this kind holds, in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Hooks => "hooks",
            Kind::Mcp => "MCP servers",
            Kind::Lsp => "LSP servers",
            Kind::Monitors => "monitors",
            Kind::Settings => "settings",
        }
    }
}

/// A JSON file of the plugin, as read.
#[derive(Debug, Clone)]
pub enum JsonFile {
    /// Its text, and the value it holds (a leading byte-order mark allowed) or why it
    /// holds none.
    Text {
        /// The file's text.
        text: String,
        /// Its value, or why it is not JSON.
        value: Result<Value, String>,
    },
    /// Its bytes are not UTF-8.
    NotUtf8,
    /// Something is there that cannot be read: a link leaving the plugin, a file over the
    /// size limit (the root names it among its skipped files). Only the readings that
    /// ask for every document tell this from nothing at all.
    Unreachable,
}

impl JsonFile {
    /// Its value as a Claude Code layout file is read (`utf-8`, as the OpenHands SDK opens
    /// it): a leading byte-order mark is refused; `None` when it has no text.
    pub fn strict(&self) -> Option<Result<Value, String>> {
        match self {
            JsonFile::Text { text, .. } if text.starts_with('\u{feff}') => {
                Some(crate::json::parse(text))
            }
            JsonFile::Text { value, .. } => Some(value.clone()),
            JsonFile::NotUtf8 | JsonFile::Unreachable => None,
        }
    }

    /// Its value as an Agent Plugins file is read (`utf-8-sig`: a byte-order mark
    /// ignored); `None` when it has no text.
    pub fn lenient(&self) -> Option<Result<Value, String>> {
        match self {
            JsonFile::Text { value, .. } => Some(value.clone()),
            JsonFile::NotUtf8 | JsonFile::Unreachable => None,
        }
    }
}

/// A markdown file of the plugin, as read.
#[derive(Debug, Clone)]
pub enum Markdown {
    /// Its text.
    Text(String),
    /// Its bytes are not UTF-8: the text with each bad sequence replaced (U+FFFD).
    NotUtf8(String),
}

impl Markdown {
    /// Its text, bad bytes replaced.
    pub fn lossy(&self) -> &str {
        match self {
            Markdown::Text(text) | Markdown::NotUtf8(text) => text,
        }
    }
}

/// One document a harness may read.
#[derive(Debug, Clone)]
pub struct Document {
    /// What it defines.
    pub kind: Kind,
    /// Where it was named: a file, a manifest (`.claude-plugin/plugin.json`, with
    /// `#experimental` for its `experimental` table), `its marketplace entry`, or a
    /// markdown file for its front matter.
    pub origin: String,
    /// The field that holds it (`hooks`, `mcpServers[1]`); empty for a file read
    /// without a field naming it.
    pub key: String,
    /// Where it is, in messages and in the review: the file, or `ORIGIN#KEY` for a value
    /// written inline.
    pub source: String,
    /// What it is.
    pub body: Body,
    /// Whether its servers are named `<source>#<name>` (a markdown file's front matter, a
    /// skill folder's `.mcp.json`) rather than by their own name.
    pub keyed: bool,
}

/// A document's content.
#[derive(Debug, Clone)]
pub enum Body {
    /// A value written where it was found (a manifest's or an entry's field, front matter).
    Inline(Value),
    /// A file of the plugin: `read` is `None` when nothing is there.
    File {
        /// The path, normalised.
        rel: String,
        /// The path as a field wrote it, when a field named the file.
        written: Option<String>,
        /// What was read.
        read: Option<Arc<JsonFile>>,
    },
    /// A path a field names that is not inside the plugin (absolute, or with `..`).
    Outside(String),
    /// An MCP bundle a field names (a `.mcpb` or `.dxt` file, or a URL), whose servers
    /// no reader here can see.
    Bundle(String),
    /// A value in a field that is neither a path nor a document; `in_list` when it is an
    /// item of a list.
    Odd {
        /// The value.
        value: Value,
        /// Whether it is an item of a list.
        in_list: bool,
    },
}

/// What berth read of one plugin: each file once, kept for every reading that comes later
/// (the set's, then a review's or a harness target's).
#[derive(Debug, Clone, Default)]
pub struct PluginModel {
    /// JSON files by path (`None`: nothing to read there).
    json: BTreeMap<String, Option<Arc<JsonFile>>>,
    /// Markdown files by path (`None`: nothing to read there).
    markdown: BTreeMap<String, Option<Arc<Markdown>>>,
}

impl PluginModel {
    /// Whether anything was found at `rel` (a file of the plugin a reader looked for);
    /// `None` when no reader looked.
    pub fn found(&self, rel: &str) -> Option<bool> {
        match (self.json.get(rel), self.markdown.get(rel)) {
            (Some(read), _) => Some(read.is_some()),
            (None, Some(read)) => Some(read.is_some()),
            (None, None) => None,
        }
    }

    /// The JSON file at `rel`, when a reader read one there.
    pub fn json(&self, rel: &str) -> Option<&JsonFile> {
        self.json.get(rel).and_then(Option::as_deref)
    }

    /// The markdown file at `rel`, when a reader read one there.
    pub fn markdown(&self, rel: &str) -> Option<&Markdown> {
        self.markdown.get(rel).and_then(Option::as_deref)
    }
}

/// Where a layout keeps what the OpenHands SDK reads of a plugin in its format.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// The hooks file.
    pub hooks: &'static str,
    /// The MCP servers file.
    pub mcp: &'static str,
    /// The folder of commands.
    pub commands: &'static str,
    /// The folder of sub-agents.
    pub agents: &'static str,
}

/// The layout of a plugin whose manifest is in `format`.
pub fn layout(format: Format) -> Layout {
    match format {
        Format::ClaudeCode => claude_layout::LAYOUT,
        Format::AgentPlugins => agent_plugins_layout::LAYOUT,
    }
}

/// The file Claude Code reads LSP servers from when no manifest names them (read for
/// every plugin the set holds, whatever its format).
pub const LSP_FILE: &str = claude_layout::LSP;

/// `path` as a normalised path inside the plugin: relative, without `..`.
pub fn plugin_path(path: &str) -> Option<String> {
    if path.starts_with('/') || path.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests;
