//! `berth marketplace`: `add` and `list` here, `search`, `update` and `remove` in their
//! own files, and what they share: finding a declared marketplace and reading its catalog.

pub mod remove;
pub mod search;
pub mod update;

use anyhow::Result;
use berth_lockfile_schema::marketplace::{
    Catalog, CatalogEntry, EntrySource, LockedMarketplace, MarketplaceRequest,
};
use berth_lockfile_schema::{Lock, add_marketplace, suggest};
use berth_resolver::{Network, Upgrade, read_marketplace};
use serde_json::json;

use super::lock::{resolve, write_outcome};
use crate::args::{MarketplaceAddArgs, MarketplaceListArgs};
use crate::context::{Context, Failure};

pub fn add(ctx: &Context, args: &MarketplaceAddArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    MarketplaceRequest::new(
        &args.name,
        &args.source,
        args.git_ref.as_deref(),
        args.repo_path.as_deref(),
    )
    .map_err(|(_, message)| anyhow::anyhow!("{message}"))?;
    let _guard = ctx.guard_lockfile()?;
    let text = super::edit::load(ctx)?;
    if !text.is_empty()
        && let Some(existing) = ctx
            .read_manifest()?
            .marketplaces
            .iter()
            .find(|m| m.name == args.name)
    {
        return Err(Failure {
            message: format!(
                "marketplace `{}` is already declared in `{}` (line {}, `{}`); pick another name, or edit that entry",
                args.name,
                ctx.manifest_label(),
                existing.line,
                existing.display_source()
            ),
            notes: Vec::new(),
        }
        .into());
    }
    let text = add_marketplace(
        &ctx.manifest_label(),
        &text,
        &args.name,
        &args.source,
        args.git_ref.as_deref(),
        args.repo_path.as_deref(),
    )?;
    let manifest = super::edit::reparse(ctx, &text)?;
    let previous = ctx.read_lock_to_replace()?;
    // Read the marketplace (the lock does) before writing anything: a source without a
    // catalog changes nothing.
    let lock = resolve(
        ctx,
        &manifest,
        previous.as_ref().map(|(l, _)| l),
        Upgrade::Nothing,
    )?;
    let lock = crate::commands::lock::admitted(
        ctx,
        previous.as_ref().map(|(l, _)| l),
        lock,
        &manifest,
        berth_resolver::Network::Online,
    )?;
    super::edit::write_manifest(ctx, &text)?;
    ctx.printer.status(
        "Added",
        &format!(
            "marketplace `{}` to `{}`; ask for its plugins as `PLUGIN@{}` (`berth marketplace list {}` shows them)",
            args.name,
            ctx.manifest_label(),
            args.name,
            args.name
        ),
    );
    write_outcome(ctx, previous.as_ref(), &lock)
}

pub fn list(ctx: &Context, args: &MarketplaceListArgs) -> Result<()> {
    let manifest = ctx.read_manifest()?;
    let declared = declared(ctx, &manifest.marketplaces, &args.name)?;
    let lock = ctx.read_lock()?;
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    let (pin, catalog) = read_catalog(ctx, lock.as_ref().map(|(l, _)| l), declared, network)?;
    let rev = pin.git.as_ref().map(|(_, r)| r.to_string());
    let entries: Vec<_> = catalog
        .plugins
        .iter()
        .map(|entry| (entry, offered(&catalog, declared, entry, rev.as_deref())))
        .collect();
    if args.output.json() {
        let plugins: Vec<serde_json::Value> = entries
            .iter()
            .map(|(entry, request)| {
                let mut value = json!({
                    "name": entry.name,
                    "version": entry.version,
                    "description": entry.description,
                });
                match request {
                    Ok(r) => {
                        value["source"] = json!(r.source);
                        value["ref"] = json!(r.git_ref);
                        value["repo_path"] = json!(r.repo_path);
                    }
                    Err(why) => value["error"] = json!(why),
                }
                value
            })
            .collect();
        let doc = json!({
            "name": declared.name,
            "source": declared.display_source(),
            "rev": rev,
            "catalog": pin.catalog,
            "catalog_hash": pin.catalog_hash.to_sri(),
            "plugins": plugins,
        });
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        ctx.printer.json(&text);
        return Ok(());
    }
    ctx.printer
        .data(&listing(declared, rev.as_deref(), &entries));
    Ok(())
}

/// The catalog of `declared`, read as `list` and `search` read it: at the commit `lock`
/// pins when the lock's entry still answers the declaration, else at its `ref` now.
fn read_catalog(
    ctx: &Context,
    lock: Option<&Lock>,
    declared: &MarketplaceRequest,
    network: Network,
) -> Result<(LockedMarketplace, Catalog)> {
    let locked: Option<&LockedMarketplace> = lock
        .and_then(|l| l.marketplaces.iter().find(|m| m.name == declared.name))
        .filter(|m| m.differences(declared).is_empty());
    read_marketplace(
        &ctx.store,
        // The policy's `[sources]`: a marketplace a deny pattern matches is not read.
        &ctx.lock_settings(network)?,
        &ctx.printer,
        declared,
        locked,
    )
    .map_err(|e| anyhow::anyhow!("marketplace `{}`: {e}", declared.name))
}

/// The marketplace the manifest declares as `name`, or an error naming the nearest it
/// declares (or all of them).
fn declared<'a>(
    ctx: &Context,
    marketplaces: &'a [MarketplaceRequest],
    name: &str,
) -> Result<&'a MarketplaceRequest> {
    if let Some(declared) = marketplaces.iter().find(|m| m.name == name) {
        return Ok(declared);
    }
    let near = suggest::nearest(name, marketplaces.iter().map(|m| m.name.as_str()));
    let label = ctx.manifest_label();
    let message = if near.is_empty() {
        let names: Vec<String> = marketplaces
            .iter()
            .map(|m| format!("`{}`", m.name))
            .collect();
        format!(
            "`{label}` declares no marketplace `{name}` (it declares {}); `berth marketplace add {name} SOURCE` declares one",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )
    } else {
        format!(
            "`{label}` declares no marketplace `{name}`{}",
            suggest::did_you_mean(&near)
        )
    };
    Err(Failure {
        message,
        notes: Vec::new(),
    }
    .into())
}

/// A marketplace's pinned commit as status lines show it (12 digits), or `local` for a
/// folder, which has none.
fn short_rev(market: &LockedMarketplace) -> String {
    market.git.as_ref().map_or_else(
        || "local".to_owned(),
        |(_, rev)| rev.to_string().chars().take(12).collect(),
    )
}

/// Where `entry` of `catalog` (the marketplace `declared`, at `rev`) takes its plugin from,
/// or why it cannot be used.
fn offered(
    catalog: &Catalog,
    declared: &MarketplaceRequest,
    entry: &CatalogEntry,
    rev: Option<&str>,
) -> Result<Offered, String> {
    catalog
        .entry(&declared.name, &entry.name)
        .and_then(|e| match &e.source {
            // Resolved from its registry when locked: shown as asked for.
            Ok(EntrySource::Npm {
                package,
                version,
                registry,
            }) => Ok(Offered {
                source: format!(
                    "npm:{package}@{}{}",
                    version.as_deref().unwrap_or("latest"),
                    registry
                        .as_deref()
                        .map(|r| format!(" from {r}"))
                        .unwrap_or_default()
                ),
                git_ref: None,
                repo_path: None,
            }),
            _ => e.request(declared, rev).map(|r| Offered {
                source: r.display_source(),
                git_ref: r.git_ref,
                repo_path: r.repo_path,
            }),
        })
}

/// `marketplace list` for people: the marketplace, then each plugin it offers.
fn listing(
    declared: &MarketplaceRequest,
    rev: Option<&str>,
    entries: &[(&CatalogEntry, Result<Offered, String>)],
) -> String {
    let mut out = format!(
        "{} ({}{}), {} plugins:\n",
        declared.name,
        declared.display_source(),
        rev.map(|r| format!(" at {}", &r[..12])).unwrap_or_default(),
        entries.len()
    );
    for (entry, request) in entries {
        let version = entry
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        let from = match request {
            Ok(r) => {
                let mut from = r.source.clone();
                if let Some(path) = &r.repo_path {
                    from.push_str(&format!(" ({path})"));
                }
                from
            }
            Err(why) => format!("unusable: {why}"),
        };
        out.push_str(&format!(
            "  {}@{}{version}  {from}\n",
            entry.name, declared.name
        ));
        if let Some(description) = &entry.description {
            out.push_str(&format!("      {description}\n"));
        }
    }
    out
}

/// Where an entry's plugin comes from, as `marketplace list` shows it.
struct Offered {
    source: String,
    git_ref: Option<String>,
    repo_path: Option<String>,
}
