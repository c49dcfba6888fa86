//! What every source kind and operation works in: the [`Env`] of a run (the store, the
//! settings, the reporter, the resolutions shared by the runs of a process, the
//! throw-away folders of this run). It is data: the work is done by the source values
//! (`sources/`) and the operations (`ops/`) that take it. It sits below both and reaches
//! neither.

mod memo;
mod report;
mod scratch;
mod settings;
mod source_rules;

pub use memo::SharedResolutions;
pub use report::{Event, Reporter, SilentReporter, Task};
pub(crate) use settings::{ActiveCutoff, show_seconds};
pub use settings::{
    Cancel, DEFAULT_GITHUB_URL, LocalCheck, Network, PayloadFinder, ReleaseAge, Settings,
    SignatureReader, git_cache_name,
};
pub use source_rules::{LockedPicks, LockedPins, SourceRules};

pub(crate) use memo::{KEPT_TREE_BYTES, KeptTree, TagList};
pub(crate) use scratch::Scratch;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use berth_store::Store;

use crate::error::EntryError;

/// What a run works in. Source values and operations read it; nothing here does work.
pub(crate) struct Env<'a> {
    pub(crate) store: &'a Store,
    pub(crate) settings: &'a Settings,
    pub(crate) reporter: &'a dyn Reporter,
    /// Resolutions made since this run started (by it, or by a concurrent run sharing
    /// them): entries on one repository share one ref listing and one fetch.
    pub(crate) memo: SharedResolutions,
    /// The oldest resolution in `memo` this run may reuse.
    pub(crate) started: Instant,
    /// Throw-away folders this run fetches into (`verify`), removed when it ends.
    pub(crate) scratch: Scratch,
    /// The release-age cutoff `lock` works under (`exclude-newer`), if any: versions made
    /// at or after it are not chosen.
    pub(crate) cutoff: Option<ActiveCutoff>,
    /// Whether a git commit's or tag's date was held to `cutoff` in this run: those dates
    /// are their author's word, which the lock says once when it is done.
    pub(crate) git_dated: AtomicBool,
    /// The npm registry keys this run read (for plugins taken from npm packages).
    pub(crate) npm_keys: RunKeys,
}

/// The keys of every npm registry a run asked, each read at its first ask (by the
/// payloads' code): `None` for a registry that publishes none.
#[derive(Debug, Default)]
pub(crate) struct RunKeys(
    pub(crate) std::sync::Mutex<BTreeMap<String, Option<Vec<berth_lockfile_schema::RegistryKey>>>>,
);

impl<'a> Env<'a> {
    pub(crate) fn new(
        store: &'a Store,
        settings: &'a Settings,
        reporter: &'a dyn Reporter,
    ) -> Self {
        Self {
            store,
            settings,
            reporter,
            memo: settings
                .shared
                .clone()
                .unwrap_or_else(SharedResolutions::of_process),
            started: reuse_since(settings.ref_ttl),
            scratch: Scratch::default(),
            cutoff: None,
            git_dated: AtomicBool::new(false),
            npm_keys: RunKeys::default(),
        }
    }

    /// This environment, locking under `cutoff`.
    pub(crate) fn under(mut self, cutoff: Option<ActiveCutoff>) -> Self {
        self.cutoff = cutoff;
        self
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

/// The values and the errors of per-entry results, each in order.
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
