//! berth's resolver: turns the plugin sources of a manifest into exact pins (a commit and
//! a content hash) and turns pins into verified store entries.
//!
//! It talks to the network through `berth-transport` (URLs, the source policy, object
//! storage, binary caches, extraction). Git goes through gix into bare caches under the
//! store's `git-v1/`; trees are exported straight from git objects, never through a working
//! copy. Everything it adds to the store goes through [`berth_store::Store::commit`], so an
//! entry is complete and verified or absent.
//!
//! Its modules are layers, each using only those listed before it (a test in
//! `tests/it/layers.rs` holds this):
//!
//! - [`error`]-level vocabulary: `error`, `meta` (a plugin's name), `skipped` (files the
//!   runtime will skip);
//! - `context`: what a run works in, as data: the settings, the reporter, the cancel flag,
//!   the memo the runs of a process share, and the `Env` of a run;
//! - `sources`: the source kinds (git, archive, local, npm, marketplace) as values: a
//!   request's source is loaded from its `Source` and a locked entry's from its `Pin`,
//!   each a folder with its mechanics, reached only through the traits in
//!   `sources/mod.rs`;
//! - `agent`: the agent package (a Python package built with uv), locked and synced with
//!   the plugins;
//! - `payload`: the packages runner-started MCP servers fetch (`npx`, `uvx`), locked with
//!   their closures by npm and uv, stored as entries;
//! - `ops`: lock, sync, verify, dependencies, the lock step and the lock-then-sync
//!   workflow every front end runs.
//!
//! This file only declares the modules and says what is public.

mod agent;
mod context;
mod error;
mod meta;
mod ops;
mod payload;
mod skipped;
mod sources;

pub use agent::{AgentVerifyOutcome, AgentVerifyStatus, DEFAULT_INDEX_URL, SOURCE_DATE_EPOCH};
pub use context::{
    Cancel, DEFAULT_GITHUB_URL, Event, LocalCheck, LockedPicks, LockedPins, Network, ReleaseAge,
    Reporter, Settings, SharedResolutions, SilentReporter, SourceRules, Task, git_cache_name,
};
pub use error::{
    AgentLockError, ArchiveProblem, DeniedSource, DownloadError, EntryError, ErrorKind,
    LocalPathProblem, PinMismatch, PolicyDenied, ResolveError, Rewritten, TooNew,
};
pub use meta::plugin_name_from_manifest;
pub use ops::{
    InMemoryLock, LocalRelock, LockAndSyncError, LockMode, LockOptions, LockOutcome, Locked,
    Lockfile, ObjectsOutcome, PolicyLoadError, Relock, StoredQuietly, SyncOutcome, Synced, Upgrade,
    VerifyOutcome, VerifyStatus, git_objects, load_policy, lock, lock_and_sync, lock_plugins,
    mark_live, pin_payloads, staleness, sync_plugins, verify_agent, verify_payloads,
    verify_plugins,
};
pub use payload::{DEFAULT_NPM_REGISTRY, PayloadFinder, lock_payloads};
pub use sources::{GitObjects, ObjectsFrom, TagObject, read_marketplace};

#[cfg(test)]
mod tests;
