//! The Claude Code layout, with everything Claude Code accepts: `.claude-plugin/plugin.json`
//! and its component fields, the conventional files (`hooks/hooks.json`, `.mcp.json` with
//! or without its `mcpServers` wrapper, `.lsp.json`, `monitors/monitors.json`,
//! `settings.json`) and the folders of commands and agents; and the manifests other
//! harnesses read in the same shape (Codex's `.codex-plugin/`, Cursor's
//! `.cursor-plugin/`, the OpenHands SDK's `.plugin/`, GitHub Copilot CLI's
//! `.github/plugin/`), with Codex's `.app.json` and the files only Copilot CLI reads.

use super::{Kind, Layout};

/// What the OpenHands SDK reads of a plugin in this layout.
pub(super) const LAYOUT: Layout = Layout {
    hooks: HOOKS,
    mcp: MCP,
    commands: "commands",
    agents: "agents",
};

/// The hooks file.
pub(super) const HOOKS: &str = "hooks/hooks.json";
/// The MCP servers file.
pub(super) const MCP: &str = ".mcp.json";
/// The LSP servers file.
pub(super) const LSP: &str = ".lsp.json";
/// The monitors file.
pub(super) const MONITORS: &str = "monitors/monitors.json";
/// The plugin's settings.
pub(super) const SETTINGS: &str = "settings.json";
/// Codex's app connectors, reached by URL through their provider.
pub(super) const APPS: &str = ".app.json";

/// The manifests in this shape: Claude Code reads `.claude-plugin/`, Codex the first of
/// `.codex-plugin/`, `.claude-plugin/` and `.cursor-plugin/`, the OpenHands SDK `.plugin/`
/// before `.claude-plugin/`, GitHub Copilot CLI the first of `.plugin/`, a root
/// `plugin.json` (read with the Agent Plugins layout), `.github/plugin/` and
/// `.claude-plugin/`.
pub(super) const MANIFESTS: [&str; 5] = [
    ".claude-plugin/plugin.json",
    ".codex-plugin/plugin.json",
    ".cursor-plugin/plugin.json",
    ".plugin/plugin.json",
    ".github/plugin/plugin.json",
];

/// The files GitHub Copilot CLI 1.0.102 reads without a manifest naming them beside
/// Claude Code's (`hooks/hooks.json`, `.mcp.json`, `.lsp.json`): checked with the client,
/// which loads the MCP servers of `.github/mcp.json` and the LSP servers of `lsp.json` and
/// `.github/lsp.json` (each in an `lspServers` object); its documentation names a root
/// `hooks.json` too.
pub(super) const COPILOT_FILES: [(&str, Kind); 4] = [
    ("hooks.json", Kind::Hooks),
    (".github/mcp.json", Kind::Mcp),
    ("lsp.json", Kind::Lsp),
    (".github/lsp.json", Kind::Lsp),
];

/// A manifest's component fields that hold documents.
pub(super) const FIELDS: [(&str, Kind); 5] = [
    ("hooks", Kind::Hooks),
    ("mcpServers", Kind::Mcp),
    ("lspServers", Kind::Lsp),
    ("monitors", Kind::Monitors),
    ("settings", Kind::Settings),
];
