//! berth's plugin reader: a plugin's store entry read once into its component model, and
//! the readings every consumer above takes of that model.
//!
//! `model` has one reader per input format (the Claude Code layout with the Codex, Cursor
//! and OpenHands manifests of the same shape, Agent Plugins 1.0, a marketplace entry) and
//! reads each file once into a [`model::PluginModel`]. From it: the OpenHands SDK's
//! components (`skills`, `commands`, `agents`, `hooks`, `mcp`, `lsp`, put together in
//! `components`), and `runs`, everything any harness would run of the plugin (a superset
//! of the SDK's reading, for the review), where a key the table of harness keys does not
//! know counts as every capability. It reads below a plugin's store path only, and never
//! fetches, writes or runs anything.
//!
//! # Where things are
//!
//! `model/`: one reader per input format, `claude_layout.rs` (with the Codex, Cursor and
//! OpenHands manifests of the same shape), `agent_plugins_layout.rs` and
//! `marketplace_entry.rs`, naming their places; `reader.rs` reads each file once into a
//! `PluginModel` that the set keeps; `fields.rs` reads a component field, inline, by path
//! or as a list; `markdown.rs` the documents in front matter and its keys, read past a
//! byte-order mark as Claude Code reads it; `every.rs` every document of every format, in
//! the review's order.
//!
//! The OpenHands SDK's reading of the model: `skills/`, `commands.rs`, `agents.rs`,
//! `hooks.rs`, MCP servers by input format (`mcp/claude_layout.rs`,
//! `mcp/agent_plugins_layout.rs`) and LSP servers (`lsp.rs`), put together in
//! `components.rs`; `root/` a plugin's store path, every path resolved and checked to stay
//! inside it; `frontmatter.rs`, `pystr.rs` (Python's string rules the SDK applies),
//! `expand.rs` (the plugin-root variables).
//!
//! What a plugin makes any harness run (`runs/`): every document of the model read the way
//! Claude Code, Codex, the SDK and Agent Plugins read them, a superset of the set's
//! reading, each file once (`found.rs`) and each document made hooks and servers
//! (`entries.rs`, hooks documents in `hooks.rs`, monitors, settings' commands and
//! `headersHelper` in `commands.rs`, the shared readings in `values.rs`); what cannot be
//! modelled, and every key the table of harness keys does not know, kept as `Unmodeled`,
//! counting as its capability; the spans harnesses run or read inside prose, one table for
//! the review and the targets, in `in_prose.rs`.
//!
//! It uses the schema and the store; it must not fetch, write, run anything, or know what a
//! lock is.

pub mod agents;
pub mod commands;
pub mod components;
pub mod error;
pub mod expand;
pub mod frontmatter;
pub mod hooks;
pub use berth_lockfile_schema::plugin_json as json;
pub mod lsp;
/// Plugin manifests (`plugin.json`), as the plugin format defines them.
pub mod manifest {
    pub use berth_lockfile_schema::plugin_manifest::{
        AGENT_PLUGINS_SCHEMA, Format, MAX_FILE_BYTES, ManifestError, PluginManifest, read_manifest,
    };
}
pub mod mcp;
pub mod model;
pub mod pystr;
pub mod root;
pub mod runs;
pub mod skills;

pub use agents::Agent;
pub use error::PluginError;
pub use expand::{ROOT_VARIABLES, expand_roots};
pub use manifest::{Format, ManifestError, PluginManifest, read_manifest};
pub use root::{MAX_FILE_BYTES, PluginRoot};
