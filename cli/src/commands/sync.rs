//! `berth plugins sync`

use std::time::Instant;

use anyhow::Result;
use berth_lockfile_schema::Lock;
use berth_resolver::{LockAndSyncError, LockMode, Lockfile, Network, lock_and_sync};
use berth_store::FileLock;

use super::describe_changes;
use crate::args::SyncArgs;
use crate::context::{Context, Failure};
use crate::governance::Scan;

pub fn run(ctx: &Context, args: &SyncArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let started = Instant::now();
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    // `--frozen` reads no manifest: local paths are then taken from the lockfile's folder.
    let manifest = if args.frozen {
        None
    } else {
        Some(ctx.read_manifest()?)
    };
    let manifest_label = ctx.manifest_label();
    let (mode, settings) = match &manifest {
        None => (
            LockMode::Frozen,
            ctx.under_policy(ctx.frozen_settings(network))?,
        ),
        Some(manifest) if args.locked => {
            (LockMode::Locked { manifest }, ctx.lock_settings(network)?)
        }
        Some(manifest) => (
            LockMode::Update {
                manifest,
                manifest_label: &manifest_label,
            },
            ctx.lock_settings(network)?,
        ),
    };
    let project_lock = ProjectLock {
        ctx,
        manifest: manifest.as_ref(),
        network,
        admitted: std::cell::Cell::new(false),
        added_by_lock: std::cell::Cell::new(0),
    };
    let synced = lock_and_sync(&ctx.store, &settings, &ctx.printer, mode, &project_lock)
        .map_err(|e| failure(ctx, mode, e))?;
    // A new lock was admitted before it was written; a lock taken as it was is checked
    // now, scanning what this run added (what was never scanned clean, when anything was
    // added).
    if !project_lock.admitted.get()
        && (synced.sync.added > 0 || ctx.policy_path.is_some() || synced.lock.changes_signer())
    {
        let scan = if synced.sync.added > 0 {
            Scan::Unverified
        } else {
            Scan::Nothing
        };
        let governance = ctx.governance()?;
        // `[sources] require_signed`: the commits of a lock taken as it is (one made on
        // another machine) are checked here, from the git cache (fetched when missing).
        ctx.check_signed_sources(&governance.policy, &synced.lock, manifest.as_ref(), network)?;
        ctx.gate(&governance, &synced.lock, scan)?;
    }
    ctx.register_root()?;
    // The lock as written (a relock's servers recorded), read again only when a re-check
    // may happen: asked for, or a policy that may say `tools = "pinned"`.
    if args.check_tools || ctx.policy_path.is_some() {
        let lock = ctx.require_lock("")?;
        crate::tools::recheck(ctx, &lock, args.check_tools)?;
    }
    ctx.printer.status(
        "Synced",
        &format!(
            "{} ({} added) in {:.2}s",
            super::contents(&synced.lock),
            synced.sync.added + synced.stored_by_lock + project_lock.added_by_lock.get(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}

/// The project's lockfile as the sync workflow reads and writes it: a damaged one is
/// replaced (with a warning), and a new lock is announced entry by entry.
struct ProjectLock<'a> {
    ctx: &'a Context,
    manifest: Option<&'a berth_lockfile_schema::Manifest>,
    network: Network,
    /// Whether a new lock was admitted by the policy (and its additions scanned).
    admitted: std::cell::Cell<bool>,
    /// How many plugins admitting it added to the store.
    added_by_lock: std::cell::Cell<usize>,
}

impl Lockfile for ProjectLock<'_> {
    type Error = anyhow::Error;
    type Guard = FileLock;

    fn guard(&self) -> Result<FileLock> {
        self.ctx.guard_lockfile()
    }

    fn read(&self) -> Result<Option<Lock>> {
        Ok(self.ctx.read_lock()?.map(|(lock, _)| lock))
    }

    fn read_to_replace(&self) -> Result<Option<Lock>> {
        Ok(self.ctx.read_lock_to_replace()?.map(|(lock, _)| lock))
    }

    fn write(&self, previous: Option<&Lock>, lock: &Lock) -> Result<()> {
        let added = self
            .ctx
            .admit(previous, lock, self.manifest, self.network, false)?;
        self.admitted.set(true);
        self.added_by_lock.set(added);
        let recorded = crate::tools::recorded(self.ctx, previous, lock)?;
        let lock = recorded.as_ref().unwrap_or(lock);
        for change in describe_changes(previous, lock) {
            self.ctx.printer.status(change.verb, &change.text);
        }
        self.ctx.write_lock(&lock.to_toml())
    }
}

/// The workflow's failure in the words of the flag the user gave.
fn failure(
    ctx: &Context,
    mode: LockMode<'_>,
    error: LockAndSyncError<anyhow::Error>,
) -> anyhow::Error {
    let flag = match mode {
        LockMode::Frozen => "`--frozen` was given but ",
        LockMode::Locked { .. } => "`--locked` was given but ",
        LockMode::Update { .. } | LockMode::Relock { .. } => "",
    };
    match error {
        LockAndSyncError::NoLock => Failure {
            message: format!(
                "{flag}there is no lockfile at `{}`; run `berth plugins lock` to create it",
                ctx.lock_label()
            ),
            notes: Vec::new(),
        }
        .into(),
        LockAndSyncError::Stale(stale) => Failure {
            message: format!(
                "{flag}`{}` is out of date with `{}`; run `berth plugins lock` to update it",
                ctx.lock_label(),
                ctx.manifest_label()
            ),
            notes: stale.iter().map(ToString::to_string).collect(),
        }
        .into(),
        LockAndSyncError::Lock(errors) => Failure::from_entries("could not lock", errors).into(),
        LockAndSyncError::Sync(errors) => Failure::from_entries("could not sync", errors).into(),
        LockAndSyncError::Lockfile(error) => error,
    }
}
