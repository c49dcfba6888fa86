//! What a capability surface holds: the surface and its entries (hooks, MCP servers,
//! components), its approval digest and what it says about capabilities. `surface.rs`
//! builds one from a store entry.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::walk::sha256_hex;
use crate::lsp::canonical;
use berth_lockfile_schema::runner::PayloadUse;

/// Where the surface says the plugin is: the loaders write this in place of the plugin's
/// folder, so a surface is the same wherever the store is.
pub const ROOT_PLACEHOLDER: &str = "${CLAUDE_PLUGIN_ROOT}";

/// Where the surface says the plugin's data folder is (Agent Plugins `${PLUGIN_DATA}`).
pub const DATA_PLACEHOLDER: &str = "${PLUGIN_DATA}";

/// A plugin's capability surface. Every collection has a fixed order, so equal plugins
/// give equal surfaces and equal JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Surface {
    /// The hooks the runtime would load (the hooks file's and the sub-agents'), sorted by
    /// event, matcher and command.
    pub hooks: Vec<HookEntry>,
    /// MCP servers by name: the plugin's under their own name; a sub-agent's or a skill's
    /// as `<defining file>#<name>` (e.g. `agents/reviewer.md#db`).
    pub mcp_servers: BTreeMap<String, McpEntry>,
    /// LSP servers by name, as raw JSON with object keys sorted.
    pub lsp_servers: BTreeMap<String, Value>,
    /// Every regular file with an execute bit, and every regular file under `bin/`:
    /// relative path -> lowercase hex SHA-256.
    pub executables: BTreeMap<String, String>,
    /// Every regular file a hook command, an MCP server's command or arguments, or an LSP
    /// server's command or arguments names: relative path -> lowercase hex SHA-256.
    pub named_files: BTreeMap<String, String>,
    /// Skills by name.
    pub skills: BTreeMap<String, Component>,
    /// Commands by name (the file's stem; the agent sees `<plugin>:<name>`).
    pub commands: BTreeMap<String, Component>,
    /// Sub-agents by name.
    pub agents: BTreeMap<String, Component>,
    /// The packages the lock pins for its runner lines (`npx`, `uvx`): by MCP server name,
    /// `hook:<event>` for a hook, `lsp_server:<name>` for an LSP server; see
    /// [`Surface::pin_packages`].
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub packages: BTreeMap<String, PackagePin>,
    /// What could not be read, or was read in an unexpected way, naming plugin and file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookEntry {
    /// The event, snake_case (`pre_tool_use`).
    pub event: String,
    /// The matcher (`*` when the file gives none).
    pub matcher: String,
    /// `command`, `prompt` or `agent`.
    pub kind: String,
    /// A command hook's shell command, the plugin's folder written `${CLAUDE_PLUGIN_ROOT}`;
    /// a prompt or agent hook's prompt.
    pub command: String,
    /// Seconds before it is killed.
    pub timeout: u64,
    /// The file defining it (`hooks/hooks.json`, `agents/reviewer.md`).
    pub source: String,
}

/// One MCP server. Environment values are never part of the surface: they may be secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpEntry {
    /// `stdio`, `http`, `streamable-http` or `sse`.
    pub transport: String,
    /// The program (stdio).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// The endpoint (remote transports).
    pub url: Option<String>,
    /// The names of the environment variables it is given, sorted.
    pub env_keys: Vec<String>,
    /// Its working folder.
    pub cwd: Option<String>,
    /// The file defining it (`.mcp.json`, `agents/reviewer.md`, `skills/x/.mcp.json`).
    pub source: String,
}

/// A package a runner line starts, as the lock pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackagePin {
    /// The runner as written (`npx`, `uvx`).
    pub runner: String,
    /// The package.
    pub package: String,
    /// The pinned version.
    pub version: String,
    /// The closure's NAR hash (SRI).
    pub hash: String,
}

/// A skill, command or sub-agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Component {
    /// Lowercase hex SHA-256 of the defining file; for a `SKILL.md` skill, of its whole
    /// folder (see [`surface_of`]).
    pub digest: String,
    /// A skill's or command's `allowed-tools`, a sub-agent's `tools`; `None` when not given.
    pub tools: Option<Vec<String>>,
}

/// The parts of a surface that run code, which [`Surface::approval_digest`] covers.
#[derive(Serialize)]
struct Executing<'a> {
    hooks: &'a [HookEntry],
    mcp_servers: &'a BTreeMap<String, McpEntry>,
    lsp_servers: BTreeMap<&'a str, Value>,
    executables: &'a BTreeMap<String, String>,
    named_files: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    packages: &'a BTreeMap<String, PackagePin>,
}

impl Surface {
    /// `sha256:` and the hex SHA-256 of the compact JSON of the executing parts alone
    /// (`hooks`, `mcp_servers`, `lsp_servers`, `executables`, `named_files`, then the
    /// pinned `packages` when there are any, object keys sorted). Changing a skill's text leaves it unchanged; changing a hook,
    /// a server or a script they name changes it.
    pub fn approval_digest(&self) -> String {
        let executing = Executing {
            hooks: &self.hooks,
            mcp_servers: &self.mcp_servers,
            lsp_servers: self
                .lsp_servers
                .iter()
                .map(|(k, v)| (k.as_str(), canonical(v)))
                .collect(),
            executables: &self.executables,
            named_files: &self.named_files,
            packages: &self.packages,
        };
        let bytes = serde_json::to_vec(&executing).expect("strings, numbers and maps serialise");
        format!("sha256:{}", sha256_hex(&bytes))
    }

    /// Adds the packages `payloads` (a lock's) pins for plugin `plugin`, so that what a
    /// runner line starts is part of what is approved: a new version asks again.
    pub fn pin_packages(
        &mut self,
        plugin: &str,
        payloads: &[berth_lockfile_schema::LockedPayload],
    ) {
        for p in payloads.iter().filter(|p| p.plugin == plugin) {
            let key = match p.used_by {
                PayloadUse::McpServer => p.server.clone(),
                other => format!("{}:{}", other.as_str(), p.server),
            };
            self.packages.insert(
                key,
                PackagePin {
                    runner: p.runner.clone(),
                    package: p.package.clone(),
                    version: p.version.clone(),
                    hash: p.hash.to_sri(),
                },
            );
        }
    }

    /// Whether the plugin has any hook.
    pub fn has_hooks(&self) -> bool {
        !self.hooks.is_empty()
    }

    /// Whether the plugin starts local processes as servers: a stdio MCP server or any
    /// LSP server.
    pub fn has_stdio_servers(&self) -> bool {
        !self.lsp_servers.is_empty() || self.mcp_servers.values().any(|s| s.transport == "stdio")
    }

    /// The URLs of the remote MCP servers, in server-name order.
    pub fn remote_urls(&self) -> Vec<&str> {
        self.mcp_servers
            .values()
            .filter_map(|s| s.url.as_deref())
            .collect()
    }

    /// Whether the plugin ships executables (exec-bit files or files under `bin/`).
    pub fn has_executables(&self) -> bool {
        !self.executables.is_empty()
    }
}
