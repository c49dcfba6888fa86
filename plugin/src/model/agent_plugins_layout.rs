//! Agent Plugins 1.0: a root `plugin.json` (with `$schema`), `mcp.json` (its strict
//! schema, naming [`AGENT_PLUGINS_MCP_SCHEMA`]) and `dev.openhands/` (`hooks/hooks.json`,
//! `commands/`, `agents/`).

use super::Layout;

/// The `$schema` an Agent Plugins `mcp.json` must name.
pub const AGENT_PLUGINS_MCP_SCHEMA: &str =
    "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// What the OpenHands SDK reads of a plugin in this layout.
pub(super) const LAYOUT: Layout = Layout {
    hooks: HOOKS,
    mcp: MCP,
    commands: "dev.openhands/commands",
    agents: "dev.openhands/agents",
};

/// The hooks file.
pub(super) const HOOKS: &str = "dev.openhands/hooks/hooks.json";
/// The MCP servers file.
pub(super) const MCP: &str = "mcp.json";
/// The manifest.
pub(super) const MANIFEST: &str = "plugin.json";
