//! `berth marketplace update`: the named marketplaces (or all) read again at their `ref`,
//! and the plugins asked of them relocked, as `berth plugins lock --upgrade-plugin NAME`
//! does for each.

use anyhow::Result;
use berth_lockfile_schema::Lock;
use berth_lockfile_schema::marketplace::LockedMarketplace;
use berth_resolver::{Network, Upgrade};

use crate::args::MarketplaceUpdateArgs;
use crate::commands::lock::{resolve, write_outcome};
use crate::context::{Context, Failure};

pub fn run(ctx: &Context, args: &MarketplaceUpdateArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let _guard = ctx.guard_lockfile()?;
    let manifest = ctx.read_manifest()?;
    if manifest.marketplaces.is_empty() {
        return Err(Failure {
            message: format!(
                "`{}` declares no marketplace; declare one with `berth marketplace add NAME SOURCE`",
                ctx.manifest_label()
            ),
            notes: Vec::new(),
        }
        .into());
    }
    let names: Vec<String> = if args.names.is_empty() {
        manifest
            .marketplaces
            .iter()
            .map(|m| m.name.clone())
            .collect()
    } else {
        for name in &args.names {
            super::declared(ctx, &manifest.marketplaces, name)?;
        }
        args.names.clone()
    };
    let previous = ctx.read_lock_to_replace()?;
    let lock = resolve(
        ctx,
        &manifest,
        previous.as_ref().map(|(l, _)| l),
        Upgrade::Plugins(names.clone()),
    )?;
    let lock = crate::commands::lock::admitted(
        ctx,
        previous.as_ref().map(|(l, _)| l),
        lock,
        &manifest,
        Network::Online,
    )?;
    for name in &names {
        let (verb, text) = moved(name, previous.as_ref().map(|(l, _)| l), &lock);
        ctx.printer.status(verb, &text);
    }
    write_outcome(ctx, previous.as_ref(), &lock)
}

/// What happened to marketplace `name` between `before` and `after`: a status verb and
/// its line.
fn moved(name: &str, before: Option<&Lock>, after: &Lock) -> (&'static str, String) {
    let find = |lock: &Lock| -> Option<LockedMarketplace> {
        lock.marketplaces.iter().find(|m| m.name == name).cloned()
    };
    let Some(new) = find(after) else {
        // Every declared marketplace is in the lock it made.
        return (
            "Skipped",
            format!("marketplace `{name}`: not in the new lock"),
        );
    };
    let rev = super::short_rev(&new);
    match before.and_then(find) {
        None => ("Locked", format!("marketplace `{name}` at {rev}")),
        Some(old) if old.git.is_none() && old.catalog_hash != new.catalog_hash => (
            "Updated",
            format!("marketplace `{name}` (a local folder): its catalog changed"),
        ),
        Some(old) if old.git != new.git => (
            "Updated",
            format!("marketplace `{name}` {} -> {rev}", super::short_rev(&old)),
        ),
        Some(_) if new.git.is_none() => (
            "Unchanged",
            format!("marketplace `{name}` (a local folder): already up to date"),
        ),
        Some(_) => (
            "Unchanged",
            format!("marketplace `{name}` at {rev}: already up to date"),
        ),
    }
}
