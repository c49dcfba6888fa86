//! berth's server: one lockfile per conversation, resolved once when the conversation
//! starts and served from the store ever after, so a conversation gets exactly its plugins
//! back after a restart, even when upstream moved or vanished.
//!
//! `app(state)` is the axum router; handlers run the resolver and the runtime on blocking
//! threads. Plugin sets are the runtime's bytes, the same `berth plugins show --json`
//! prints. The server never expands environment variables from client input, and never
//! fetches when started with `--offline`.

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
