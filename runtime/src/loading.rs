//! Reading every locked plugin from its store entry, a few plugins at a time: each plugin
//! is read on its own (its manifest, then its components), and the set merges what was
//! read afterwards in lock order, so the result does not depend on which thread read what.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::LockedPlugin;
use berth_store::EntryTree;

use berth_plugin::components::{Components, load_components};
use berth_plugin::error::PluginError;
use berth_plugin::manifest::PluginManifest;
use berth_plugin::model::{PluginModel, Reader};
use berth_plugin::root::PluginRoot;

/// At most this many threads read plugins (the reads are small files: past a few threads
/// the kernel's path lookups, not the waiting, are the cost).
const MAX_THREADS: usize = 4;

/// One plugin to read.
pub(crate) struct Job<'a> {
    pub(crate) locked: &'a LockedPlugin,
    /// Its store entry, canonical.
    pub(crate) path: PathBuf,
    /// Its paths as its stat record lists them, when the store's check read the record.
    pub(crate) tree: Option<Arc<EntryTree>>,
    /// Where hooks, MCP servers and commands see it.
    pub(crate) exposed: PathBuf,
    /// Its writable data folder.
    pub(crate) data_dir: PathBuf,
}

/// What was read of one plugin.
pub(crate) struct Loaded {
    pub(crate) manifest: PluginManifest,
    pub(crate) components: Components,
    /// What was read of it, when it is kept.
    pub(crate) model: Option<PluginModel>,
    /// What was skipped and noticed, in the order the set reports it.
    pub(crate) warnings: Vec<String>,
}

/// Reads every job, on up to [`MAX_THREADS`] threads; the results are in `jobs`' order.
/// `cancelled` is asked between plugins and components.
pub(crate) fn load_all(
    jobs: &[Job<'_>],
    keep_models: bool,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Vec<Result<Loaded, PluginError>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(MAX_THREADS)
        .min(jobs.len());
    if threads <= 1 {
        return jobs
            .iter()
            .map(|job| load(job, keep_models, cancelled))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<Result<Loaded, PluginError>>> =
        std::iter::repeat_with(|| None).take(jobs.len()).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.push((i, load(job, keep_models, cancelled)));
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            // A panic in a loader is a bug: it is passed on, not turned into an error.
            let done = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (i, result) in done {
                results[i] = Some(result);
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.unwrap_or(Err(PluginError::Cancelled)))
        .collect()
}

/// Reads one plugin: its manifest, then its components, through one reader whose model
/// the set keeps when `keep_model`.
fn load(
    job: &Job<'_>,
    keep_model: bool,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Loaded, PluginError> {
    let go_on = || {
        if cancelled() {
            Err(PluginError::Cancelled)
        } else {
            Ok(())
        }
    };
    go_on()?;
    let name = &job.locked.name;
    let mut root = PluginRoot::canonical(name, job.path.clone())?.exposed_at(job.exposed.clone());
    if let Some(tree) = &job.tree {
        root = root.with_tree(tree);
    }
    let mut model = PluginModel::default();
    let mut reader = Reader::new(&root, job.locked.definition.as_ref(), &mut model);
    let (manifest, mut warnings) = reader.manifest()?;
    go_on()?;
    let components = if job.locked.standalone_skill {
        // A marketplace's standalone skill: its folder is one skill (the SDK's
        // `_load_skill_from_dir`), nothing else.
        Components {
            skills: berth_plugin::skills::load_skill_paths(
                &mut reader,
                &[".".to_owned()],
                &mut warnings,
            )?,
            ..Components::default()
        }
    } else {
        load_components(&mut reader, &manifest, &job.data_dir, &mut warnings, &go_on)?
    };
    let mut all = root.take_skipped();
    all.append(&mut warnings);
    // A model not kept is dropped here, on the thread whose allocations it holds.
    Ok(Loaded {
        manifest,
        components,
        model: keep_model.then_some(model),
        warnings: all,
    })
}
