//! berth's resolver: turns the plugin sources of a manifest into exact pins (a commit and
//! a content hash) and turns pins into verified store entries.
//!
//! It is the only crate that talks to the network. Git goes through gix into bare caches
//! under the store's `git-v1/`; trees are exported straight from git objects, never through a
//! working copy. Everything it adds to the store goes through [`berth_store::Store::commit`],
//! so an entry is complete and verified or absent.

mod agent;
mod archive;
mod auth;
pub mod cache;
mod dependencies;
mod error;
pub mod extract;
mod git;
mod live;
mod local;
mod marketplace;
mod meta;
mod npm;
pub mod objects;
mod ops;
mod policy;
mod semver_tags;
mod skipped;
mod sources;
mod tree_path;
mod url;
mod workflow;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use agent::AgentError;
pub use agent::{AgentVerifyOutcome, AgentVerifyStatus, DEFAULT_INDEX_URL, SOURCE_DATE_EPOCH};
pub use error::{
    ArchiveProblem, DownloadError, EntryError, ErrorKind, LocalPathProblem, ResolveError,
    Rewritten, Upstream,
};
pub use extract::{ArchiveLimits, LimitsError};
pub use live::mark_live;
pub use marketplace::read_marketplace;
pub use meta::plugin_name_from_manifest;
pub use ops::{
    LocalCheck, LocalRelock, LockOptions, LockOutcome, SharedResolutions, SyncOutcome, Upgrade,
    VerifyOutcome, VerifyStatus, lock_plugins, sync_plugins, verify_agent, verify_plugins,
};
pub use policy::{FetchPolicy, Refusal, is_internal};
pub use tree_path::{LinkTrouble, NoFolder};
pub use url::SourceUrl;
pub use workflow::{
    InMemoryLock, LockAndSyncError, LockMode, Lockfile, Relock, Synced, lock_and_sync,
};

/// Whether the network may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Fetch what is missing.
    Online,
    /// Never fetch; what is not already cached or stored is an error (`--offline`).
    Offline,
}

/// What the resolver needs from its caller's environment, gathered once by the CLI or server.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The base URL `github:OWNER/REPO` expands under (`$BERTH_GITHUB_URL`).
    pub github_url: String,
    /// Whether the network may be used.
    pub network: Network,
    /// How many plugins to resolve or fetch at once.
    pub jobs: usize,
    /// The folder relative local sources are resolved from (the manifest's folder).
    pub base_dir: PathBuf,
    /// The user's home, for `~/` local sources and `~/.netrc`.
    pub home_dir: Option<PathBuf>,
    /// How large an archive may be.
    pub archive_limits: ArchiveLimits,
    /// The package index for the `[agent]` package (`--index-url`, `$BERTH_INDEX_URL`);
    /// may hold `${VAR}` credentials.
    pub index_url: String,
    /// Resolutions shared with other lock runs of this process (the server sets this).
    pub shared: Option<SharedResolutions>,
    /// Raised when the caller no longer wants the result (the server's deadline passed):
    /// fetches and downloads stop at their next step with [`ResolveError::Cancelled`].
    pub cancel: Cancel,
    /// The server's source policy, checked again at every redirect; `None` (the CLI):
    /// the user's own sources go where they lead.
    pub policy: Option<Arc<FetchPolicy>>,
    /// Binary caches tried, in order, before a plugin is fetched from upstream
    /// (`--substituter`, `$BERTH_SUBSTITUTERS`).
    pub substituters: Vec<Arc<cache::Cache>>,
    /// How old a branch or tag resolution shared through `shared` may be and still be
    /// reused (the server's `--ref-ttl`); zero: only those made since the run started.
    pub ref_ttl: std::time::Duration,
}

/// A flag that stops the resolver's work: checked before every network step, between the
/// chunks of a download, and by gix while it receives a pack (its interrupt flag).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag nobody has raised yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the work to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// An error once cancelled.
    pub(crate) fn check(&self) -> Result<(), ResolveError> {
        if self.is_cancelled() {
            Err(ResolveError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The flag, shared: for work outside the resolver (building a plugin set) that stops
    /// when this is cancelled.
    pub fn shared_flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }

    /// The flag itself, for gix's interrupt parameter.
    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// The name of the git cache (under `git-v1/db/`) of a git URL as a lock records it, so
/// `gc` can tell which caches a lock still uses.
pub fn git_cache_name(url: &str) -> String {
    url::cache_dir_name(url)
}

/// The default `github:` base URL.
pub const DEFAULT_GITHUB_URL: &str = "https://github.com";

/// Where progress and warnings go. Implementations must be cheap and thread-safe: the
/// resolver reports from several worker threads.
pub trait Reporter: Sync {
    /// A step of work, such as `("Adding", "review")`.
    fn status(&self, verb: &str, message: &str);
    /// Something the user should know that does not stop the work.
    fn warn(&self, message: &str);
    /// A long step starts (a fetch, a download of `total` bytes if known); it runs until the
    /// returned task is dropped. The default reports it as a status line.
    fn task(&self, verb: &str, message: &str, total: Option<u64>) -> Box<dyn Task + '_> {
        let _ = total;
        self.status(verb, message);
        Box::new(NoTask)
    }
}

/// A running step's progress handle; dropping it ends the step.
pub trait Task {
    /// `bytes` more are done.
    fn advance(&self, bytes: u64) {
        let _ = bytes;
    }
}

struct NoTask;

impl Task for NoTask {}

/// A reporter that drops everything (for tests and quiet library use).
#[derive(Debug, Default, Clone, Copy)]
pub struct SilentReporter;

impl Reporter for SilentReporter {
    fn status(&self, _verb: &str, _message: &str) {}
    fn warn(&self, _message: &str) {}
}
