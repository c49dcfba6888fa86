//! berth's server: one lockfile per conversation, resolved once when the conversation
//! starts and served from the store ever after, so a conversation gets exactly its plugins
//! back after a restart, even when upstream moved or vanished.
//!
//! `app(state)` is the axum router; handlers run the resolver and the runtime on blocking
//! threads. Plugin sets are the runtime's bytes, the same `berth plugins show --json`
//! prints. The server never expands environment variables from client input, and never
//! fetches when started with `--offline`.
//!
//! # Where things are
//!
//! `app(state) -> Router` (`router.rs`), serving connections with hyper under the header,
//! body and idle time-outs and the connection cap (`connections.rs`: a watchdog per
//! connection), the state and restore (`state.rs`), the start of a conversation
//! (`start.rs`), a plugin loaded into one mid-conversation (`load_plugin.rs`), what a lock
//! must pass (`lock_check.rs`: limits and sources when it arrives, the `--policy` when its
//! set is first built, and under `tools = "pinned"` each MCP server asked again),
//! `[sources] require_signed` on the objects the resolver reads from the server's git
//! cache, each passing commit remembered for the process (`signed_sources.rs`, called where
//! the set is first built), asking a remote MCP server what it offers under the source
//! policy's address checks (`mcp_remote.rs`), conversations in a folder or a bucket
//! (`conversations/`; `record.rs` binds `meta.json` to its lock's digest and, with
//! `--record-key`, authenticates it with an HMAC), why a conversation's objects were
//! refused or not written (`refused.rs`), the fleet's readiness and draining (`fleet.rs`;
//! `readiness.rs` the fixed reasons and the probe reused for 2 s), metrics (`metrics.rs`)
//! counted from the resolver's typed events (`report.rs`), request ids (`request_id.rs`),
//! errors (`error.rs`), the source policy (`policy.rs`), gc roots (`roots.rs`).
//!
//! It uses everything below but the CLI; it must not build plugin sets its own way, or
//! expand anything from a client's input.

mod api;
mod connections;
mod conversations;
mod error;
mod fleet;
mod handlers;
mod host;
mod input;
mod load_plugin;
mod lock_check;
pub mod mcp_remote;
mod metrics;
mod policy;
mod readiness;
mod refused;
mod report;
mod request_id;
mod roots;
mod router;
mod signed_sources;
mod start;
mod state;

pub use api::{MAX_BODY_BYTES, MAX_PLUGINS};
pub use connections::{
    DEFAULT_BODY_TIMEOUT_SECS, DEFAULT_HEADER_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS,
    DEFAULT_MAX_CONNECTIONS, Limits,
};
pub use conversations::{DataDir, MIN_RECORD_KEY_BYTES, RecordKey};
pub use error::{AppError, ErrorBody};
pub use handlers::ApiDoc;
pub use input::MAX_FIELD_BYTES;
pub use lock_check::RunPolicy;
pub use policy::{DEFAULT_ALLOWED_HOSTS, HostPin, HostPinError, SourcePolicy};
pub use roots::{LiveRoots, ReadError, RootError, conversation_locks, live_roots};
pub use router::{app, bind, serve};
pub use state::{AppState, Config, ENTRY_RECHECK_WINDOW, RestoreReport};
