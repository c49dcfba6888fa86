//! `berth plugins sync`

use std::time::Instant;

use anyhow::Result;
use berth_lockfile_schema::{Lock, Manifest};
use berth_resolver::{
    LocalCheck, LocalRelock, LockOptions, Network, Settings, Upgrade, lock_plugins, sync_plugins,
};

use super::describe_changes;
use crate::args::SyncArgs;
use crate::context::{Context, Failure};

/// How `sync` treats the lockfile: one mode, from `--locked` / `--frozen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Lock first if the lockfile is missing or stale.
    Update,
    /// The lockfile must exist and be up to date; never write it.
    Locked,
    /// Use the lockfile as it is; do not read the manifest.
    Frozen,
}

pub fn run(ctx: &Context, args: &SyncArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let started = Instant::now();
    let mode = match (args.locked, args.frozen) {
        (_, true) => Mode::Frozen,
        (true, false) => Mode::Locked,
        (false, false) => Mode::Update,
    };
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    let (lock, manifest, settings, local) = match mode {
        Mode::Frozen => {
            let lock = ctx.require_lock("`--frozen` was given but ")?;
            // Without a manifest, local paths are taken from the lockfile's folder.
            (
                lock,
                None,
                ctx.frozen_settings(network),
                LocalCheck::TrustStore,
            )
        }
        Mode::Locked => {
            let manifest = ctx.read_manifest()?;
            let lock = locked_lock(ctx, &manifest)?;
            (
                lock,
                Some(manifest),
                ctx.settings(network),
                LocalCheck::Rehash,
            )
        }
        Mode::Update => {
            let manifest = ctx.read_manifest()?;
            let settings = ctx.settings(network);
            let lock = update_lock(ctx, &settings, &manifest)?;
            (lock, Some(manifest), settings, LocalCheck::Rehash)
        }
    };
    let outcome = sync_plugins(
        &ctx.store,
        &settings,
        &ctx.printer,
        &lock,
        manifest.as_ref(),
        local,
    )
    .map_err(|errors| Failure::from_entries("could not sync", errors))?;
    ctx.register_root()?;
    ctx.printer.status(
        "Synced",
        &format!(
            "{} ({} added) in {:.2}s",
            super::contents(&lock),
            outcome.added,
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}

/// `--locked`: the lockfile as it is, which must exist and match the manifest.
fn locked_lock(ctx: &Context, manifest: &Manifest) -> Result<Lock> {
    let Some((lock, _)) = ctx.read_lock()? else {
        return Err(Failure {
            message: format!(
                "`--locked` was given but there is no lockfile at `{}`; run `berth plugins lock` to create it",
                ctx.lock_label()
            ),
            notes: Vec::new(),
        }
        .into());
    };
    let stale = lock.staleness(manifest);
    if stale.is_empty() {
        return Ok(lock);
    }
    Err(Failure {
        message: format!(
            "`--locked` was given but `{}` is out of date with `{}`; run `berth plugins lock` to update it",
            ctx.lock_label(),
            ctx.manifest_label()
        ),
        notes: stale.iter().map(ToString::to_string).collect(),
    }
    .into())
}

/// The default: the lockfile if it is up to date, else a new lock written in its place.
/// Local folders already locked keep their hash here, so a changed one is reported by the
/// sync instead of being locked silently.
fn update_lock(ctx: &Context, settings: &Settings, manifest: &Manifest) -> Result<Lock> {
    let _guard = ctx.guard_lockfile()?;
    let previous = ctx.read_lock_to_replace()?;
    let old = previous.as_ref().map(|(l, _)| l);
    if let Some(lock) = old
        && lock.staleness(manifest).is_empty()
    {
        return Ok(lock.clone());
    }
    let options = LockOptions {
        upgrade: Upgrade::Nothing,
        manifest_label: ctx.manifest_label(),
        local: LocalRelock::Keep,
    };
    let outcome = lock_plugins(&ctx.store, settings, &ctx.printer, manifest, old, &options)
        .map_err(|errors| Failure::from_entries("could not lock", errors))?;
    for change in describe_changes(old, &outcome.lock) {
        ctx.printer.status(change.verb, &change.text);
    }
    ctx.write_lock(&outcome.lock.to_toml())?;
    Ok(outcome.lock)
}
