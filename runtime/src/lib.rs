//! berth's runtime: builds a conversation's merged plugin set (skills, MCP servers, hooks,
//! agents) from a lock and the store alone, and runs the set's hooks.
//!
//! It reads each plugin once into its component model (`model`: one reader per input
//! format, the Claude Code layout, Agent Plugins 1.0 and a marketplace entry), takes what
//! the OpenHands SDK reads of it with the SDK's semantics (the set), what any harness
//! would run of it (`runs`, for the review) and what each harness target writes
//! (`harness`), merges plugins in lock order, and never leaves a plugin's store path while
//! reading it. It must not fetch anything: it links no network crate
//! (a test checks `cargo tree -p berth-runtime`), and a missing store entry is an error
//! that says to run `berth plugins sync`.
//!
//! A plugin's program that berth starts on its own (an MCP server it observes) is started
//! by `sandbox::spawn` alone, in the sandbox, or not at all.

pub mod agent_env;
mod agents;
pub mod commands;
mod components;
mod error;
mod expand;
pub mod frontmatter;
pub mod harness;
pub mod hook_run;
pub mod hooks;
mod loading;
mod lsp;
use berth_lockfile_schema::plugin_json as json;
/// Plugin manifests (`plugin.json`), as the plugin format defines them.
pub mod manifest {
    pub use berth_lockfile_schema::plugin_manifest::{
        AGENT_PLUGINS_SCHEMA, Format, MAX_FILE_BYTES, ManifestError, PluginManifest, read_manifest,
    };
}
pub mod mcp;
pub mod model;
pub mod observe;
mod payloads;
pub mod process;
mod pystr;
pub mod review;
mod root;
pub mod runners;
pub mod runs;
pub mod sandbox;
mod set;
pub mod skills;

pub use agent_env::{AgentEnv, AgentEnvError, Python, UV_VERSION, Uv};
pub use agents::Agent;
pub use error::RuntimeError;
pub use expand::{ROOT_VARIABLES, expand_roots};
pub use manifest::{Format, ManifestError, PluginManifest, read_manifest};
pub use review::{Surface, SurfaceDiff, surface_of};
pub use root::{MAX_FILE_BYTES, PluginRoot};
pub use set::{
    BuildOptions, PLUGIN_DATA_DIR, PluginInfo, PluginSet, build_plugin_set, plugin_data_dir,
};

#[cfg(test)]
mod tests;
