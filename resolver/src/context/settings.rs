//! What the resolver needs from its caller, gathered once by the CLI or the server: the
//! settings of a run and the flag that cancels it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use berth_transport::cache;
use berth_transport::extract::ArchiveLimits;
use berth_transport::policy::FetchPolicy;
use berth_transport::registries::{ConfigError, NpmConfig, PackageIndex};

use berth_lockfile_schema::release_age::{Ask, Cutoff};

use super::SharedResolutions;
use crate::error::ResolveError;

/// Whether the network may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Fetch what is missing.
    Online,
    /// Never fetch; what is not already cached or stored is an error (`--offline`).
    Offline,
}

/// Reads which MCP servers of a lock's plugins (all in the store) start through a package
/// runner: the servers, and a warning for each runner line that cannot be pinned.
pub type PayloadFinder =
    fn(
        &berth_store::Store,
        &berth_lockfile_schema::Lock,
    ) -> Result<(Vec<berth_lockfile_schema::runner::PayloadWant>, Vec<String>), String>;

/// Reads who signed a locked commit (or its tag) from its objects, with the policy's
/// allowed-signers files for the principal of a key: the review's reader, handed down by
/// the front end.
/// Its arguments: the commit's id and object, the tag's name and object (when the
/// plugin's ref names an annotated tag of it), and the allowed-signers files.
pub type SignatureReader = fn(
    &str,
    &[u8],
    Option<(&str, &[u8])>,
    &[&berth_lockfile_schema::governance::Signers],
) -> berth_lockfile_schema::SourceSignature;

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
    /// The Python package index for the `[agent]` package and `uvx` payloads
    /// (`--index-url`, `$BERTH_INDEX_URL`, else uv's configuration); its URL may hold
    /// `${VAR}` credentials. An error reading uv's configuration fails only what needs the
    /// index.
    pub index: Result<PackageIndex, ConfigError>,
    /// Resolutions shared with other lock runs of this process (the server sets its own);
    /// `None`: the process's.
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
    /// The npm registries and credentials `npx` payloads are resolved and fetched with
    /// (`$BERTH_NPM_REGISTRY`, else npm's own configuration); as `index`, an error fails
    /// only what needs it.
    pub npm: Result<NpmConfig, ConfigError>,
    /// Reads which MCP servers of a lock start through a package runner (the runtime's
    /// reader, handed down by the front end); `None`: payloads are not locked.
    pub payload_finder: Option<PayloadFinder>,
    /// The policy's release-age asks and the time of locking (`exclude-newer`).
    pub release_age: ReleaseAge,
    /// The policy's `[sources]`, which every plugin and marketplace source is matched
    /// against before it is contacted (`SourceRules::default()`: no policy file).
    pub sources: super::SourceRules,
    /// Whether a lock's pins are taken at its word or checked against what this store saw
    /// them produce ([`super::LockedPins`]).
    pub pins: super::LockedPins,
    /// Whether the plugins a marketplace takes from npm are read at the package's `latest`
    /// dist-tag whatever version the entry asks for (`berth plugins outdated`'s NEWEST
    /// column); `false` everywhere else.
    pub npm_latest: bool,
    /// Records who signed each git plugin a lock resolves; `None`: nothing is recorded
    /// (a lock made so keeps the records its previous lock had).
    pub signature_reader: Option<SignatureReader>,
    /// The policy file that sets `[payloads] require_registry_signatures = true`, if one
    /// does: then every npm package of a payload must carry its registry's signature,
    /// verified with a key the lock holds, at `lock` and at `sync`.
    pub require_registry_signatures: Option<String>,
}

/// What decides a lock's release-age cutoff besides the manifest: the policy's
/// `exclude-newer` asks, parents first, and the time a span counts back from.
#[derive(Debug, Clone)]
pub struct ReleaseAge {
    /// Each policy file's `exclude-newer`.
    pub policy: Vec<Ask>,
    /// The time of locking (the CLI's `$BERTH_NOW` moves it, for tests and reproduction).
    pub now: jiff::Timestamp,
    /// Whether the policy requires signed git sources (`[sources] require_signed`): a key
    /// it trusts then vouches for each locked commit's date, and the lock does not warn
    /// that git dates are their author's word.
    pub signed_sources: bool,
}

impl Default for ReleaseAge {
    /// No policy ask, the clock's time, and no signed sources.
    fn default() -> Self {
        Self {
            policy: Vec::new(),
            now: jiff::Timestamp::now(),
            signed_sources: false,
        }
    }
}

/// The cutoff a run works under: nothing released at or after it is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActiveCutoff {
    pub(crate) cutoff: Cutoff,
    /// What set it, for messages: `` `exclude-newer = "7 days"` in `plugins.toml` ``.
    pub(crate) from: String,
}

impl ActiveCutoff {
    /// The cutoff `ask` set.
    pub(crate) fn asked(cutoff: Cutoff, ask: &Ask) -> Self {
        Self {
            cutoff,
            from: format!("`exclude-newer = \"{}\"` in `{}`", ask.value, ask.from),
        }
    }

    /// A lock's recorded cutoff (the payloads, locked after the plugins under it).
    pub(crate) fn recorded(cutoff: &Cutoff) -> Self {
        Self {
            cutoff: cutoff.clone(),
            from: match &cutoff.span {
                Some(span) => format!("`exclude-newer = \"{span}\"`"),
                None => "`exclude-newer`".to_owned(),
            },
        }
    }

    /// Whether something made at `seconds` (since the epoch) is held back.
    pub(crate) fn excludes(&self, seconds: i64) -> bool {
        seconds >= self.cutoff.at.as_second()
    }

    /// The cutoff as messages show it, and what set it: `2026-11-24 (`…` in `…`)`.
    pub(crate) fn describe(&self) -> String {
        format!("{} ({})", self.cutoff.shown(), self.from)
    }
}

/// An instant given in seconds since the epoch, as messages show it.
pub(crate) fn show_seconds(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds).map_or_else(
        |_| seconds.to_string(),
        berth_lockfile_schema::release_age::show_instant,
    )
}

impl Settings {
    /// Fails unless the network may be used and the run goes on; `what` names what
    /// needed it.
    pub(crate) fn require_network(
        &self,
        what: impl FnOnce() -> String,
    ) -> Result<(), ResolveError> {
        self.cancel.check()?;
        match self.network {
            Network::Online => Ok(()),
            Network::Offline => Err(ResolveError::Offline { what: what() }),
        }
    }
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
    berth_transport::url::cache_dir_name(url)
}

/// The default `github:` base URL.
pub const DEFAULT_GITHUB_URL: &str = "https://github.com";

/// How `sync` treats local folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalCheck {
    /// Re-hash each local folder and fail if it no longer matches the lock.
    Rehash,
    /// Trust the store copy when there is one (`--frozen`).
    TrustStore,
}
