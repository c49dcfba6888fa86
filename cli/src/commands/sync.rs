//! `berth plugins sync`

use std::time::Instant;

use anyhow::Result;
use berth_resolver::{
    LocalCheck, LocalRelock, LockOptions, Network, Upgrade, lock_plugins, sync_plugins,
};

use super::describe_changes;
use crate::args::SyncArgs;
use crate::context::{Context, Failure};

pub fn run(ctx: &Context, args: &SyncArgs) -> Result<()> {
    let started = Instant::now();
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    let settings = ctx.settings(network);
    let (lock, manifest) = if args.frozen {
        (ctx.require_lock("`--frozen` was given but ")?, None)
    } else {
        let manifest = ctx.read_manifest()?;
        let _guard = if args.locked {
            None
        } else {
            Some(ctx.guard_lockfile()?)
        };
        let previous = if args.locked {
            ctx.read_lock()?
        } else {
            ctx.read_lock_to_replace()?
        };
        let stale = previous.as_ref().map(|(l, _)| l.staleness(&manifest));
        match (previous, stale) {
            (Some((lock, _)), Some(stale)) if stale.is_empty() => (lock, Some(manifest)),
            (previous, stale) if args.locked => {
                let message = match previous {
                    None => format!(
                        "`--locked` was given but there is no lockfile at `{}`; run `berth plugins lock` to create it",
                        ctx.lock_label()
                    ),
                    Some(_) => format!(
                        "`--locked` was given but `{}` is out of date with `{}`; run `berth plugins lock` to update it",
                        ctx.lock_label(),
                        ctx.manifest_label()
                    ),
                };
                let notes = stale
                    .unwrap_or_default()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                return Err(Failure { message, notes }.into());
            }
            (previous, _) => {
                let options = LockOptions {
                    upgrade: Upgrade::Nothing,
                    manifest_label: ctx.manifest_label(),
                    local: LocalRelock::Keep,
                };
                let old = previous.as_ref().map(|(l, _)| l);
                let outcome = lock_plugins(
                    &ctx.store,
                    &settings,
                    &ctx.printer,
                    &manifest,
                    old,
                    &options,
                )
                .map_err(|errors| Failure::from_entries("could not lock", errors))?;
                for change in describe_changes(old, &outcome.lock) {
                    ctx.printer.status(change.verb, &change.text);
                }
                ctx.write_lock(&outcome.lock.to_toml())?;
                (outcome.lock, Some(manifest))
            }
        }
    };
    let local = if args.frozen {
        LocalCheck::TrustStore
    } else {
        LocalCheck::Rehash
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
    ctx.printer.status(
        "Synced",
        &format!(
            "{} ({} added) in {:.2}s",
            super::plugins(outcome.entries.len()),
            outcome.added,
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}
