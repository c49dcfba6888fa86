//! `berth store verify` and `berth store gc`

use std::path::PathBuf;

use anyhow::Result;
use berth_server::LiveRoots;
use berth_store::{EntryStatus, Store, format_size};
use serde_json::json;

use crate::args::{
    Cli, GcArgs, SignKeyCommand, StoreArgs, StoreCommand, StorePushArgs, StoreVerifyArgs,
};
use crate::context::{Exit, default_store_root};
use crate::printer::Printer;

pub fn run(cli: &Cli, args: &StoreArgs, printer: Printer) -> Result<()> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let root = match &cli.store {
        Some(dir) => dir.clone(),
        None => default_store_root(home.as_deref())?,
    };
    let store = Store::new(root);
    match &args.command {
        StoreCommand::Verify(args) => verify(
            &store,
            args,
            &printer,
            &crate::context::open_substituters(&crate::context::legacy_caches(
                cli,
                Some(&args.caches),
            ))?,
        ),
        StoreCommand::Gc(args) => gc(&store, args, &printer),
        StoreCommand::Push(args) => push(&store, args, &printer),
        StoreCommand::SignKey(SignKeyCommand::Generate(args)) => {
            let key = berth_transport::cache::SecretKey::generate(&args.name)?;
            let mut file = std::fs::OpenOptions::new();
            std::os::unix::fs::OpenOptionsExt::mode(file.write(true).create_new(true), 0o600);
            let mut out = file.open(&args.secret_key_file).map_err(|e| {
                anyhow::anyhow!(
                    "could not create `{}`: {e} (it must not exist yet)",
                    args.secret_key_file.display()
                )
            })?;
            std::io::Write::write_all(&mut out, key.to_text().as_bytes())?;
            printer.data(&format!("{}\n", key.public().to_text()));
            Ok(())
        }
        StoreCommand::Path(args) => {
            let lock = read_lock(&args.lockfile)?;
            let plugin = lock
                .plugins
                .iter()
                .find(|p| p.name == args.name)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "no plugin `{}` in `{}`; `berth plugins list` shows the locked ones",
                        args.name,
                        args.lockfile.display()
                    )
                })?;
            println!(
                "{}",
                berth_store::nix_store_path(&plugin.hash, &plugin.name)
            );
            Ok(())
        }
    }
}

fn read_lock(path: &std::path::Path) -> Result<berth_lockfile_schema::Lock> {
    let text = fs_err::read_to_string(path).map_err(|e| {
        anyhow::anyhow!("{e}; run `berth plugins lock` first, or name the lock with `--lockfile`")
    })?;
    Ok(berth_lockfile_schema::parse_lock(
        &path.display().to_string(),
        &text,
    )?)
}

/// `berth store push`: the lock's plugins and payload closures (each must be in the
/// store) or every entry.
fn push(store: &Store, args: &StorePushArgs, printer: &Printer) -> Result<()> {
    let cache = berth_transport::cache::Cache::open(&args.dest)?;
    let key = match &args.sign_key {
        Some(path) => Some(berth_transport::cache::SecretKey::parse(
            &fs_err::read_to_string(path)?,
        )?),
        None => None,
    };
    let mut wanted: Vec<(berth_lockfile_schema::Sha256Hash, String)> = Vec::new();
    if args.all {
        wanted.extend(store.entry_names()?.iter().filter_map(|f| parse_entry(f)));
    } else {
        let lock = read_lock(&args.lockfile)?;
        for plugin in &lock.plugins {
            wanted.push((plugin.hash, plugin.name.clone()));
        }
        // The closures of its MCP servers' packages, so a fleet restores them too.
        for payload in &lock.payloads {
            wanted.push((payload.hash, payload.entry_name()));
        }
    }
    let (mut uploaded, mut present) = (0, 0);
    for (hash, name) in &wanted {
        let Some(entry) = store.lookup(hash, name) else {
            anyhow::bail!(
                "`{name}` is not in the store (`{}`); run `berth plugins sync` first",
                store.entry_path(hash, name).display()
            );
        };
        match cache.push(&entry.path, hash, name, key.as_ref())? {
            berth_transport::cache::Pushed::AlreadyThere => {
                present += 1;
            }
            berth_transport::cache::Pushed::Uploaded { bytes } => {
                uploaded += 1;
                printer.status("Pushed", &format!("{name} ({})", format_size(bytes)));
            }
        }
        // Where this store saw it come from, for whoever substitutes it.
        cache.push_pins(hash, name, &store.pins(hash, name))?;
    }
    printer.status(
        "Finished",
        &format!(
            "{uploaded} pushed, {present} already in `{}`",
            cache.label()
        ),
    );
    Ok(())
}

/// The hash and name of a `store-v1/` folder name, `<nix32>-<name>`.
fn parse_entry(folder: &str) -> Option<(berth_lockfile_schema::Sha256Hash, String)> {
    let (hash, name) = folder.split_once('-')?;
    let hash = berth_lockfile_schema::Sha256Hash::from_nix32(hash).ok()?;
    Some((hash, name.to_owned()))
}

/// After `verify --repair` removed a corrupt entry: the same content from a substituter,
/// when one has it.
fn restore_from_caches(
    store: &Store,
    folder: &str,
    caches: &[std::sync::Arc<berth_transport::cache::Cache>],
    printer: &Printer,
) -> Result<bool> {
    let Some((hash, name)) = parse_entry(folder) else {
        return Ok(false);
    };
    let skipped = |e: &berth_transport::cache::CacheError| {
        printer.warn(&format!("{e}; trying the next substituter"))
    };
    // The same bounds as a sync's substitution (`BERTH_ARCHIVE_MAX_*`).
    let archive = berth_transport::extract::ArchiveLimits::from_env()?;
    let limits = berth_store::UnpackLimits {
        max_total_bytes: archive.max_bytes,
        max_entries: archive.max_entries,
        ..berth_store::UnpackLimits::default()
    };
    let Some((staging, label)) = berth_transport::cache::substitute_staged(
        store, caches, &hash, &name, &limits, false, &skipped,
    )?
    else {
        return Ok(false);
    };
    store.commit(staging, &name, Some(&hash))?;
    printer.status("Substituted", &format!("{name} from {label}"));
    Ok(true)
}

fn verify(
    store: &Store,
    args: &StoreVerifyArgs,
    printer: &Printer,
    caches: &[std::sync::Arc<berth_transport::cache::Cache>],
) -> Result<()> {
    // A gc removing entries mid-check would look like damage: wait for it.
    let _hold = store.shared_use(|| printer.status("Waiting", "for a running `berth store gc`"))?;
    let mut items: Vec<Item> = store.entry_names()?.into_iter().map(Item::Entry).collect();
    items.extend(
        store
            .wheels()?
            .into_iter()
            .map(|(sha256, file)| Item::Wheel { sha256, file }),
    );
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .clamp(1, items.len().max(1));
    let results = check_all(&items, jobs, |item| item.check(store));
    let mut bad = 0;
    let mut rows = Vec::new();
    for (i, status) in &results {
        let item = &items[*i];
        let name = item.to_string();
        let (state, detail) = match status {
            EntryStatus::Intact => ("intact", None),
            EntryStatus::Corrupt { actual } => {
                bad += 1;
                printer.error(&format!(
                    "store entry `{name}` is corrupt: it hashes to `{actual}`"
                ));
                ("corrupt", Some(actual.clone()))
            }
            EntryStatus::Unreadable(why) => {
                bad += 1;
                printer.error(&format!("store entry `{name}` cannot be checked: {why}"));
                ("unreadable", Some(why.clone()))
            }
        };
        let removed = state != "intact" && args.repair;
        if removed {
            item.remove(store)?;
            let restored = match item {
                Item::Entry(folder) if !caches.is_empty() => {
                    restore_from_caches(store, folder, caches, printer)?
                }
                _ => false,
            };
            if !restored {
                printer.status(
                    "Removed",
                    &format!("{name} (a later `berth plugins sync` fetches it again)"),
                );
            }
        }
        rows.push(json!({"entry": name, "status": state, "detail": detail, "removed": removed}));
    }
    if args.output.json() {
        let mut text = serde_json::to_string_pretty(&json!({"ok": bad == 0, "entries": rows}))?;
        text.push('\n');
        printer.json(&text);
    }
    if bad == 0 {
        printer.status("Verified", &format!("{} store entries", results.len()));
        return Ok(());
    }
    if !args.repair {
        printer.note("run `berth store verify --repair` to remove them, then `berth plugins sync`");
    }
    Err(Exit(1).into())
}

/// What `store verify` re-hashes: plugin entries (`store-v1/`) and agent wheels.
enum Item {
    Entry(String),
    Wheel { sha256: String, file: String },
}

impl Item {
    fn check(&self, store: &Store) -> EntryStatus {
        match self {
            Item::Entry(name) => store.check_entry(name),
            Item::Wheel { sha256, file } => store.check_wheel(sha256, file),
        }
    }

    fn remove(&self, store: &Store) -> Result<(), berth_store::StoreError> {
        match self {
            Item::Entry(name) => store.remove_entry(name),
            Item::Wheel { sha256, .. } => store.remove_wheel(sha256),
        }
    }
}

/// How messages and `--json` name an item: the entry's name, or the wheel's path.
impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Item::Entry(name) => f.write_str(name),
            Item::Wheel { sha256, file } => {
                write!(f, "{}/{sha256}/{file}", berth_store::WHEELS_DIR)
            }
        }
    }
}

fn gc(store: &Store, args: &GcArgs, printer: &Printer) -> Result<()> {
    let _lock = store.gc_lock(|| {
        printer.status(
            "Waiting",
            "for running syncs and servers to finish with the store",
        )
    })?;
    // Which roots keep what (lockfiles, `berth serve` data folders) is the server crate's.
    let LiveRoots { live, roots, gone } = berth_server::live_roots(store)?;
    for root in &gone {
        printer.status(
            "Forgetting",
            &format!("root `{}` (it is gone)", root.target.display()),
        );
        if !args.dry_run {
            store.remove_root(root)?;
        }
    }
    let freed = store.collect_garbage(&live, args.dry_run)?;
    let verb = if args.dry_run {
        "Would remove"
    } else {
        "Removed"
    };
    for item in &freed {
        printer.status(
            verb,
            &format!("{} ({})", item.path, format_size(item.bytes)),
        );
    }
    let total: u64 = freed.iter().map(|f| f.bytes).sum();
    if args.output.json() {
        let items: Vec<_> = freed
            .iter()
            .map(|f| json!({"path": f.path, "bytes": f.bytes}))
            .collect();
        let doc = json!({"dry_run": args.dry_run, "roots": roots, "freed": items, "bytes": total});
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        printer.json(&text);
    }
    printer.status(
        if args.dry_run { "Would free" } else { "Freed" },
        &format!(
            "{} in {} items ({} roots kept {} entries)",
            format_size(total),
            freed.len(),
            roots,
            live.entries.len()
        ),
    );
    Ok(())
}

/// Checks every item on up to `jobs` threads, in order. A check that panics is that
/// item's failure (`Unreadable`), never a silent pass: every item gets a status.
fn check_all<T: Sync>(
    items: &[T],
    jobs: usize,
    check: impl Fn(&T) -> EntryStatus + Sync,
) -> Vec<(usize, EntryStatus)> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let check_one = |item: &T| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(item))).unwrap_or_else(
            |panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                EntryStatus::Unreadable(format!("checking it failed unexpectedly ({why})"))
            },
        )
    };
    let mut results: Vec<(usize, EntryStatus)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs.clamp(1, items.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, check_one(item)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    // Belt and braces: an item no worker reported (a worker that died outside a check)
    // is a failure too.
    let mut all = Vec::with_capacity(items.len());
    let mut reported = results.into_iter().peekable();
    for i in 0..items.len() {
        match reported.next_if(|(j, _)| *j == i) {
            Some(result) => all.push(result),
            None => all.push((
                i,
                EntryStatus::Unreadable("it was not checked (a verify worker failed)".into()),
            )),
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::{EntryStatus, check_all};

    #[test]
    fn a_check_that_panics_fails_its_item_and_no_other() {
        let items: Vec<u32> = (0..20).collect();
        let results = check_all(&items, 4, |i| {
            if *i == 7 {
                panic!("boom on seven");
            }
            EntryStatus::Intact
        });
        assert_eq!(results.len(), 20);
        for (i, status) in &results {
            if *i == 7 {
                assert!(
                    matches!(status, EntryStatus::Unreadable(why) if why.contains("boom on seven")),
                    "{status:?}"
                );
            } else {
                assert_eq!(*status, EntryStatus::Intact);
            }
        }
    }
}
