//! `berth plugins lock`

use std::cell::RefCell;

use anyhow::Result;
use berth_lockfile_schema::{Lock, Manifest};
use berth_resolver::{InMemoryLock, LockAndSyncError, LockMode, Lockfile, Network, Upgrade};
use berth_store::FileLock;

use super::describe_changes;
use crate::args::LockArgs;
use crate::context::{Context, Failure};

pub fn run(ctx: &Context, args: &LockArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let manifest = ctx.read_manifest()?;
    let upgrade = if args.upgrade {
        Upgrade::All
    } else if !args.upgrade_plugin.is_empty() {
        Upgrade::Plugins(args.upgrade_plugin.clone())
    } else {
        Upgrade::Nothing
    };
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    let label = ctx.manifest_label();
    let mode = LockMode::Relock {
        manifest: &manifest,
        manifest_label: &label,
        upgrade: &upgrade,
    };
    if args.check {
        let previous = ctx.read_lock()?;
        if upgrade == Upgrade::Nothing {
            // Without an upgrade, a stale request is reported without resolving anything.
            check_current(ctx, previous.as_ref(), &manifest, network)?;
        }
        let checking = Checking {
            ctx,
            manifest: &manifest,
            network,
            previous: RefCell::new(previous),
        };
        return lock_with(ctx, network, mode, &checking);
    }
    let replacing = Replacing {
        ctx,
        manifest: &manifest,
        network,
        previous: RefCell::new(None),
    };
    lock_with(ctx, network, mode, &replacing)
}

/// Runs the workflow's lock step in `mode` on `lockfile`.
fn lock_with<F: Lockfile<Error = anyhow::Error>>(
    ctx: &Context,
    network: Network,
    mode: LockMode<'_>,
    lockfile: &F,
) -> Result<()> {
    let settings = ctx.lock_settings(network)?;
    berth_resolver::lock(&ctx.store, &settings, &ctx.printer, mode, lockfile)
        .map(drop)
        .map_err(failure)
}

/// The workflow's failure as the CLI reports it.
fn failure(error: LockAndSyncError<anyhow::Error>) -> anyhow::Error {
    match error {
        LockAndSyncError::Lock(errors) => Failure::from_entries("could not lock", errors).into(),
        LockAndSyncError::Lockfile(error) => error,
        other => anyhow::anyhow!("{other}"),
    }
}

/// Fails when there is no lock, or it is out of date with the manifest (`--check`).
fn check_current(
    ctx: &Context,
    previous: Option<&(Lock, String)>,
    manifest: &Manifest,
    network: Network,
) -> Result<()> {
    let Some((lock, _)) = previous else {
        return Err(Failure {
            message: format!(
                "there is no lockfile at `{}`; run `berth plugins lock` to create it",
                ctx.lock_label()
            ),
            notes: Vec::new(),
        }
        .into());
    };
    let settings = ctx.lock_settings(network)?;
    let stale = berth_resolver::staleness(lock, manifest, &ctx.manifest_label(), &settings);
    if stale.is_empty() {
        return Ok(());
    }
    Err(Failure {
        message: format!(
            "`{}` is out of date with `{}`; run `berth plugins lock` to update it",
            ctx.lock_label(),
            ctx.manifest_label()
        ),
        notes: stale.iter().map(ToString::to_string).collect(),
    }
    .into())
}

/// The project's lockfile, replaced by the new lock once the policy admits it.
struct Replacing<'a> {
    ctx: &'a Context,
    manifest: &'a Manifest,
    network: Network,
    /// The lock read, with its text.
    previous: RefCell<Option<(Lock, String)>>,
}

impl Lockfile for Replacing<'_> {
    type Error = anyhow::Error;
    type Guard = FileLock;

    fn guard(&self) -> Result<FileLock> {
        self.ctx.guard_lockfile()
    }

    fn read(&self) -> Result<Option<Lock>> {
        Ok(self.ctx.read_lock()?.map(|(lock, _)| lock))
    }

    fn read_to_replace(&self) -> Result<Option<Lock>> {
        let previous = self.ctx.read_lock_to_replace()?;
        let lock = previous.as_ref().map(|(lock, _)| lock.clone());
        *self.previous.borrow_mut() = previous;
        Ok(lock)
    }

    fn write(&self, previous: Option<&Lock>, lock: &Lock) -> Result<()> {
        let lock = admitted(
            self.ctx,
            previous,
            lock.clone(),
            self.manifest,
            self.network,
        )?;
        write_outcome(self.ctx, self.previous.borrow().as_ref(), &lock)
    }
}

/// The project's lockfile, compared with the new lock and left as it is (`--check`).
struct Checking<'a> {
    ctx: &'a Context,
    manifest: &'a Manifest,
    network: Network,
    /// The lock read before, with its text.
    previous: RefCell<Option<(Lock, String)>>,
}

impl Lockfile for Checking<'_> {
    type Error = anyhow::Error;
    type Guard = ();

    fn guard(&self) -> Result<()> {
        Ok(())
    }

    fn read(&self) -> Result<Option<Lock>> {
        Ok(self
            .previous
            .borrow()
            .as_ref()
            .map(|(lock, _)| lock.clone()))
    }

    fn write(&self, _previous: Option<&Lock>, lock: &Lock) -> Result<()> {
        let ctx = self.ctx;
        let lock = &unrecorded_as_before(self.previous.borrow().as_ref(), lock);
        if ctx.policy_path.is_some() {
            let policy = ctx.governance()?.policy;
            ctx.check_signed_sources(&policy, lock, Some(self.manifest), self.network)?;
        }
        match crate::tools::stale_records(ctx, lock)? {
            Some(stale) if !stale.is_empty() => {
                return Err(Failure {
                    message: format!(
                        "`{}` records what MCP servers offered for other code than it pins; run `berth plugins lock` to observe them again",
                        ctx.lock_label()
                    ),
                    notes: stale,
                }
                .into());
            }
            Some(_) => {}
            None => ctx.printer.detail(
                "Skipped",
                "checking the `[[tools]]` records: a plugin is not in the store (`berth plugins sync` puts it there)",
            ),
        }
        let previous = self.previous.borrow();
        let text = lock.to_toml();
        if previous.as_ref().is_some_and(|(_, old)| *old == text) {
            ctx.printer.status(
                "Checked",
                &format!(
                    "`{}` is up to date ({})",
                    ctx.lock_label(),
                    super::contents(lock)
                ),
            );
            return Ok(());
        }
        let changes = describe_changes(previous.as_ref().map(|(l, _)| l), lock);
        let mut notes: Vec<String> = changes.iter().map(ToString::to_string).collect();
        if notes.is_empty() {
            notes.push("the file is not in canonical form".to_owned());
        }
        Err(Failure {
            message: format!(
                "`{}` would change; run `berth plugins lock` to update it",
                ctx.lock_label()
            ),
            notes,
        }
        .into())
    }
}

/// `lock` without the signers a committed lock from before berth recorded them has no
/// record of, for the same pin: such a lock still passes `--check` (the next `lock`
/// records them).
fn unrecorded_as_before(previous: Option<&(Lock, String)>, lock: &Lock) -> Lock {
    let mut lock = lock.clone();
    let Some((before, _)) = previous else {
        return lock;
    };
    for plugin in &mut lock.plugins {
        let unrecorded = before
            .plugins
            .iter()
            .any(|b| b.name == plugin.name && b.pin == plugin.pin && b.signature.is_none());
        if unrecorded {
            plugin.signature = None;
        }
    }
    lock
}

/// Prints what changed and writes the new lock, unless its bytes are the same (`add`
/// writes the lock it resolved to learn the new plugin's name this way).
pub fn write_outcome(ctx: &Context, previous: Option<&(Lock, String)>, lock: &Lock) -> Result<()> {
    let text = lock.to_toml();
    let unchanged = previous.is_some_and(|(_, old)| *old == text);
    for change in describe_changes(previous.map(|(l, _)| l), lock) {
        ctx.printer.status(change.verb, &change.text);
    }
    if !unchanged {
        ctx.write_lock(&text)?;
    }
    ctx.printer.status(
        "Locked",
        &format!(
            "{} in `{}`{}",
            super::contents(lock),
            ctx.lock_label(),
            if unchanged { " (unchanged)" } else { "" }
        ),
    );
    Ok(())
}

/// Admits `lock` (the policy, and the store entries locking fetched) and records what its
/// new MCP servers offer (`crate::tools::recorded`): what every command that writes a lock
/// does first. Returns the lock to write.
pub fn admitted(
    ctx: &Context,
    previous: Option<&Lock>,
    lock: Lock,
    manifest: &Manifest,
    network: Network,
) -> Result<Lock> {
    ctx.admit(previous, &lock, Some(manifest), network, true)?;
    Ok(crate::tools::recorded(ctx, previous, &lock)?.unwrap_or(lock))
}

/// Locks `manifest` (moving the pins `upgrade` names) and writes the lock: what `remove`
/// and `update` do after editing the manifest. Returns the new lock.
pub fn lock_and_write(
    ctx: &Context,
    manifest: &Manifest,
    previous: Option<&(Lock, String)>,
    upgrade: Upgrade,
) -> Result<Lock> {
    let lock = resolve(ctx, manifest, previous.map(|(l, _)| l), upgrade)?;
    let lock = admitted(
        ctx,
        previous.map(|(l, _)| l),
        lock,
        manifest,
        Network::Online,
    )?;
    write_outcome(ctx, previous, &lock)?;
    Ok(lock)
}

/// Locks `manifest` against `previous` without writing anything.
pub fn resolve(
    ctx: &Context,
    manifest: &Manifest,
    previous: Option<&Lock>,
    upgrade: Upgrade,
) -> Result<Lock> {
    resolve_with(ctx, manifest, previous, upgrade, Network::Online)
}

fn resolve_with(
    ctx: &Context,
    manifest: &Manifest,
    previous: Option<&Lock>,
    upgrade: Upgrade,
    network: Network,
) -> Result<Lock> {
    let settings = ctx.lock_settings(network)?;
    resolve_in(ctx, manifest, previous, upgrade, &settings, &ctx.printer)
}

/// What `manifest` locks to in memory under `settings`, reported to `printer`.
pub fn resolve_in(
    ctx: &Context,
    manifest: &Manifest,
    previous: Option<&Lock>,
    upgrade: Upgrade,
    settings: &berth_resolver::Settings,
    printer: &crate::printer::Printer,
) -> Result<Lock> {
    let label = ctx.manifest_label();
    let mode = LockMode::Relock {
        manifest,
        manifest_label: &label,
        upgrade: &upgrade,
    };
    let lockfile = InMemoryLock(previous.cloned());
    let locked =
        berth_resolver::lock(&ctx.store, settings, printer, mode, &lockfile).map_err(|error| {
            match error {
                LockAndSyncError::Lock(errors) => {
                    Failure::from_entries("could not lock", errors).into()
                }
                other => anyhow::anyhow!("{other}"),
            }
        })?;
    Ok(locked.lock)
}
