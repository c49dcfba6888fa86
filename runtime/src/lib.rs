//! berth's runtime: builds a conversation's merged plugin set (skills, MCP servers, hooks,
//! agents) from a lock and the store alone, and runs the set's hooks.
//!
//! It takes each locked plugin's model from the reader (`berth-plugin`) with the OpenHands
//! SDK's semantics, merges plugins in lock order (`set`, `loading`), rewrites the set's
//! commands to start the pinned closures (`payloads`; `runners` names the runner lines a
//! lock's plugins have, for `lock` to pin), runs hooks (`hook_run`, `process`) and builds
//! the agent's environment offline (`agent_env`). It must not fetch anything: it links no
//! network crate (a test checks `cargo tree`), and a missing store entry is an error that
//! says to run `berth plugins sync`.
//!
//! # Where things are
//!
//! `set/`: lock + store -> plugin set, the build, the merge in lock order, the canonical
//! JSON (`loading.rs` finds and checks each locked entry); `runners.rs` the runner lines a
//! lock's plugins have, for `lock` to pin; `payloads.rs` the set's commands rewritten to
//! start the pinned closures; `hook_run.rs` and `process.rs` running the set's hooks;
//! `agent_env.rs` the agent's environment, built offline with uv; `parallel.rs` work over
//! many items on a few threads, in order (harness plans, the review's plugins).
//!
//! It uses the schema, the store, uv and the plugin reader; it must not link a network
//! crate, fetch, or read a manifest or a source folder.

pub mod agent_env;
pub mod hook_run;
mod loading;
pub mod parallel;
mod payloads;
pub mod process;
pub mod runners;
pub mod set;

pub use agent_env::{AgentEnv, AgentEnvError, Python, UV_VERSION, Uv};
pub use set::{
    BuildOptions, PLUGIN_DATA_DIR, PluginInfo, PluginSet, build_plugin_set, plugin_data_dir,
};

#[cfg(test)]
mod tests;
