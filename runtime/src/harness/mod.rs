//! Writing the locked plugin set where a harness reads it natively (`berth materialize`):
//! each target (`claude.rs`, `codex.rs`, `gemini.rs`, `agent_plugins.rs`) turns a [`PluginSet`](crate::PluginSet) into a [`Plan`] of
//! files and links to verified store entries, naming what the harness cannot express;
//! `files.rs` applies a plan (only what differs) and finds drift from it.

pub mod agent_plugins;
pub mod claude;
pub mod codex;
mod files;
pub mod gemini;
mod pinned;

pub use files::{Applied, Drift, Plan, Planned, apply, check};
