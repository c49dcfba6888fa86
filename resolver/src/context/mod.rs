//! The context every source kind and operation works in: the store, the settings, the
//! reporter and the resolutions shared by the runs of one process. It sits below the
//! source kinds (`sources/`), which take a [`Ctx`], and the operations (`ops/`), which make
//! one; it reaches neither.

mod report;
mod settings;

pub use report::{Event, Reporter, SilentReporter, Task};
pub use settings::{
    Cancel, DEFAULT_GITHUB_URL, DEFAULT_NPM_REGISTRY, LocalCheck, Network, PayloadFinder, Settings,
    git_cache_name,
};

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use berth_lockfile_schema::{LockedPlugin, PluginRequest, Sha256Hash, Source, SourceKind};
use berth_store::Store;
use gix::ObjectId;

use crate::error::{EntryError, ResolveError};
use crate::skipped::Skipped;

pub(crate) fn entry_label(manifest: &str, request: &PluginRequest) -> String {
    format!(
        "{manifest}:{}: `{}`",
        request.line,
        request.display_source()
    )
}

pub(crate) struct Ctx<'a> {
    pub(crate) store: &'a Store,
    pub(crate) settings: &'a Settings,
    pub(crate) reporter: &'a dyn Reporter,
    /// Resolutions made since this run started (by it, or by a concurrent run sharing
    /// them): entries on one repository share one ref listing and one fetch.
    pub(crate) memo: SharedResolutions,
    pub(crate) started: Instant,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        store: &'a Store,
        settings: &'a Settings,
        reporter: &'a dyn Reporter,
    ) -> Self {
        Self {
            store,
            settings,
            reporter,
            memo: settings.shared.clone().unwrap_or_default(),
            started: reuse_since(settings.ref_ttl),
        }
    }
}

/// The oldest resolution a run may reuse: its own start, or `ttl` before it.
fn reuse_since(ttl: std::time::Duration) -> Instant {
    // Every shared resolution was made after the first run of this process started.
    static FIRST_RUN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let now = Instant::now();
    let first = *FIRST_RUN.get_or_init(|| now);
    now.checked_sub(ttl).map_or(first, |since| since.max(first))
}

/// Ref resolutions and tag listings, keyed by git cache, shared by the lock runs of one
/// process. A run only reuses what was resolved after it started, which is as fresh as
/// resolving again: concurrent runs (a server starting many conversations) then share one
/// listing and one fetch per repository, and a later run still sees upstream's changes.
#[derive(Debug, Clone, Default)]
pub struct SharedResolutions {
    refs: Arc<Mutex<HashMap<RefKey, (Instant, ObjectId)>>>,
    tags: Arc<Mutex<HashMap<String, (Instant, TagList)>>>,
}

/// A git cache and a ref in it (`""`: the default branch).
pub(crate) type RefKey = (String, String);
/// Tag names and the commits they point to.
pub(crate) type TagList = Vec<(String, ObjectId)>;

impl SharedResolutions {
    pub(crate) fn rev(&self, key: &(String, String), since: Instant) -> Option<ObjectId> {
        lock_ignoring_poison(&self.refs)
            .get(key)
            .filter(|(at, _)| *at >= since)
            .map(|(_, id)| *id)
    }

    pub(crate) fn remember_rev(&self, key: (String, String), id: ObjectId) {
        lock_ignoring_poison(&self.refs).insert(key, (Instant::now(), id));
    }

    pub(crate) fn tags(&self, cache: &str, since: Instant) -> Option<Vec<(String, ObjectId)>> {
        lock_ignoring_poison(&self.tags)
            .get(cache)
            .filter(|(at, _)| *at >= since)
            .map(|(_, tags)| tags.clone())
    }

    pub(crate) fn remember_tags(&self, cache: &str, tags: Vec<(String, ObjectId)>) {
        lock_ignoring_poison(&self.tags).insert(cache.to_owned(), (Instant::now(), tags));
    }
}

/// A plugin `lock` resolved, and the files in it the runtime will skip.
pub(crate) struct Resolved {
    pub(crate) plugin: LockedPlugin,
    pub(crate) skipped: Vec<Skipped>,
    /// What the plugin's manifest declares: its version and its dependencies (read for
    /// plugins resolved now; a kept pin carries them in the lock).
    pub(crate) declared: Declared,
}

/// A plugin manifest's `version` and `dependencies`, and what in them could not be read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Declared {
    pub(crate) version: Option<String>,
    pub(crate) dependencies: Vec<berth_lockfile_schema::marketplace::DependencySpec>,
    pub(crate) problems: Vec<String>,
}

impl Declared {
    /// Reads them through `read` (a regular file's bytes, `None` when absent).
    pub(crate) fn read(read: impl Fn(&str) -> Option<Vec<u8>>) -> Self {
        let (version, dependencies, problems) =
            berth_lockfile_schema::marketplace::declared_in_manifest(read);
        Self {
            version,
            dependencies,
            problems,
        }
    }
}

impl Ctx<'_> {
    pub(crate) fn require_network(
        &self,
        what: impl FnOnce() -> String,
    ) -> Result<(), ResolveError> {
        self.settings.cancel.check()?;
        match self.settings.network {
            Network::Online => Ok(()),
            Network::Offline => Err(ResolveError::Offline { what: what() }),
        }
    }

    /// The source to fetch a locked entry from: the manifest's (which may carry credentials
    /// the lock leaves out) when it still matches, else the lock's.
    pub(crate) fn source_of(
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Source, ResolveError> {
        match request.filter(|r| r.parsed_source().kind() != SourceKind::Marketplace) {
            Some(r) => Ok(r.parsed_source().clone()),
            None => Source::parse(&locked.source).map_err(|source| ResolveError::LockedSource {
                name: locked.name.clone(),
                source,
            }),
        }
    }
}

/// The `repo_path` of a locked archive, normalised.
pub(crate) fn archive_subdir(locked: &LockedPlugin) -> Option<String> {
    locked
        .repo_path
        .as_deref()
        .and_then(|p| berth_lockfile_schema::normalize_repo_path(p).ok())
}

/// The ref to fall back on when a server will not send a commit by id.
pub(crate) fn hint_ref(locked: &LockedPlugin) -> Option<&str> {
    locked.resolved_ref.as_deref().or(locked.git_ref.as_deref())
}

pub(crate) fn subdir_of(locked: &LockedPlugin, source: &Source) -> Option<String> {
    if let Some(path) = &locked.repo_path {
        return berth_lockfile_schema::normalize_repo_path(path).ok();
    }
    match source {
        Source::GitHub { subpath, .. } => subpath.clone(),
        _ => None,
    }
}

pub(crate) fn check_pins(
    request: &PluginRequest,
    name: &str,
    hash: &Sha256Hash,
) -> Result<(), ResolveError> {
    if let Some(expected) = &request.hash
        && expected != hash
    {
        return Err(ResolveError::HashMismatch {
            name: name.to_owned(),
            expected: *expected,
            actual: *hash,
        });
    }
    if let Some(expected) = &request.name
        && expected != name
    {
        return Err(ResolveError::NameMismatch {
            expected: expected.clone(),
            actual: name.to_owned(),
        });
    }
    Ok(())
}

/// The lock's commit id of a git object id.
pub(crate) fn commit_id(id: ObjectId) -> berth_lockfile_schema::CommitId {
    let mut bytes = [0u8; 20];
    bytes.copy_from_slice(id.as_bytes());
    berth_lockfile_schema::CommitId::from_bytes(bytes)
}

pub(crate) fn lock_ignoring_poison<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f` over `items` on up to `jobs` threads; results keep the items' order.
pub(crate) fn run_parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let jobs = jobs.clamp(1, items.len().max(1));
    if jobs == 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(i, item)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker threads do not panic"))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

pub(crate) fn split<T>(results: Vec<Result<T, EntryError>>) -> (Vec<T>, Vec<EntryError>) {
    let mut ok = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(value) => ok.push(value),
            Err(e) => errors.push(e),
        }
    }
    (ok, errors)
}

impl Ctx<'_> {
    /// The store entry `name` with NAR hash `hash` from the first substituter that has it,
    /// unpacked and checked in a staging folder; `None` when none has it. A cache that
    /// holds something else under its name, or fails, is reported (naming `what`) and the
    /// next one tried.
    pub(crate) fn substitute_entry(
        &self,
        hash: &Sha256Hash,
        name: &str,
        what: &str,
    ) -> Result<Option<berth_store::Staging>, ResolveError> {
        let limits = berth_store::UnpackLimits {
            max_total_bytes: self.settings.archive_limits.max_bytes,
            max_entries: self.settings.archive_limits.max_entries,
            ..berth_store::UnpackLimits::default()
        };
        let skipped = |e: &berth_transport::cache::CacheError| {
            self.reporter.warn(&format!(
                "{what}: {e}; trying the next substituter, then upstream"
            ));
        };
        let found = berth_transport::cache::substitute_staged(
            self.store,
            &self.settings.substituters,
            hash,
            name,
            &limits,
            self.settings.network == Network::Offline,
            &skipped,
        )?;
        Ok(found.map(|(staging, label)| {
            self.reporter
                .status("Substituted", &format!("{name} from {label}"));
            self.reporter.event(Event::Substituted);
            staging
        }))
    }
}
