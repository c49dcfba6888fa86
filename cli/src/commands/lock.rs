//! `berth plugins lock`

use anyhow::Result;
use berth_lockfile_schema::{Lock, Manifest};
use berth_resolver::{LocalRelock, LockOptions, Network, Upgrade, lock_plugins, pin_payloads};

use super::describe_changes;
use crate::args::LockArgs;
use crate::context::{Context, Failure};

pub fn run(ctx: &Context, args: &LockArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let manifest = ctx.read_manifest()?;
    let _guard = if args.check {
        None
    } else {
        Some(ctx.guard_lockfile()?)
    };
    let previous = if args.check {
        ctx.read_lock()?
    } else {
        ctx.read_lock_to_replace()?
    };
    let upgrade = if args.upgrade {
        Upgrade::All
    } else if !args.upgrade_plugin.is_empty() {
        Upgrade::Plugins(args.upgrade_plugin.clone())
    } else {
        Upgrade::Nothing
    };
    if args.check && upgrade == Upgrade::Nothing {
        // Without an upgrade, a stale request is reported without resolving anything.
        check_fresh(ctx, previous.as_ref().map(|(l, _)| l), &manifest)?;
    }
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    let lock = resolve_with(
        ctx,
        &manifest,
        previous.as_ref().map(|(l, _)| l),
        upgrade,
        network,
    )?;
    if args.check {
        return report_check(ctx, previous.as_ref(), &lock);
    }
    ctx.admit(
        previous.as_ref().map(|(l, _)| l),
        &lock,
        Some(&manifest),
        network,
        true,
    )?;
    write_outcome(ctx, previous.as_ref(), &lock)
}

/// `--check` without an upgrade: the lock must be there and agree with the manifest.
fn check_fresh(ctx: &Context, previous: Option<&Lock>, manifest: &Manifest) -> Result<()> {
    let Some(lock) = previous else {
        return Err(Failure {
            message: format!(
                "there is no lockfile at `{}`; run `berth plugins lock` to create it",
                ctx.lock_label()
            ),
            notes: Vec::new(),
        }
        .into());
    };
    let stale = lock.staleness(manifest);
    if !stale.is_empty() {
        return Err(Failure {
            message: format!(
                "`{}` is out of date with `{}`; run `berth plugins lock` to update it",
                ctx.lock_label(),
                ctx.manifest_label()
            ),
            notes: stale.iter().map(ToString::to_string).collect(),
        }
        .into());
    }
    Ok(())
}

/// `--check`: the lock resolved is the one on disk, byte for byte, or an error naming
/// what would change.
fn report_check(ctx: &Context, previous: Option<&(Lock, String)>, lock: &Lock) -> Result<()> {
    let text = lock.to_toml();
    let unchanged = previous.is_some_and(|(_, old)| *old == text);
    let changes = describe_changes(previous.map(|(l, _)| l), lock);
    if unchanged {
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

/// Locks `manifest` (moving the pins `upgrade` names) and writes the lock: what `remove`
/// and `update` do after editing the manifest. Returns the new lock.
pub fn lock_and_write(
    ctx: &Context,
    manifest: &Manifest,
    previous: Option<&(Lock, String)>,
    upgrade: Upgrade,
) -> Result<Lock> {
    let lock = resolve(ctx, manifest, previous.map(|(l, _)| l), upgrade)?;
    ctx.admit(
        previous.map(|(l, _)| l),
        &lock,
        Some(manifest),
        Network::Online,
        true,
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
    let options = LockOptions {
        upgrade,
        manifest_label: ctx.manifest_label(),
        local: LocalRelock::Rehash,
    };
    let settings = ctx.settings(network);
    let mut outcome = lock_plugins(
        &ctx.store,
        &settings,
        &ctx.printer,
        manifest,
        previous,
        &options,
    )
    .map_err(|errors| Failure::from_entries("could not lock", errors))?;
    pin_payloads(
        &ctx.store,
        &settings,
        &ctx.printer,
        Some(manifest),
        &mut outcome.lock,
        previous,
        &options.upgrade,
    )
    .map_err(|errors| Failure::from_entries("could not lock", errors))?;
    Ok(outcome.lock)
}
