//! `berth marketplace search`: every declared marketplace's catalog searched by name,
//! description and keywords.

use std::fmt::Write as _;

use anyhow::Result;
use berth_lockfile_schema::marketplace::CatalogEntry;
use berth_resolver::Network;
use serde_json::json;

use crate::args::MarketplaceSearchArgs;
use crate::context::{Context, Failure};

/// One catalog entry that matched, and the marketplace that lists it.
struct Hit {
    marketplace: String,
    entry: CatalogEntry,
}

pub fn run(ctx: &Context, args: &MarketplaceSearchArgs) -> Result<()> {
    let manifest = ctx.read_manifest()?;
    if manifest.marketplaces.is_empty() {
        return Err(Failure {
            message: format!(
                "`{}` declares no marketplace to search; declare one with `berth marketplace add NAME SOURCE`",
                ctx.manifest_label()
            ),
            notes: Vec::new(),
        }
        .into());
    }
    let lock = ctx.read_lock()?;
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    let hits = search_all(
        ctx,
        &manifest,
        lock.as_ref().map(|(l, _)| l),
        &args.query,
        network,
    )?;
    let searched = match manifest.marketplaces.as_slice() {
        [one] => format!("marketplace `{}`", one.name),
        all => format!("{} marketplaces", all.len()),
    };
    if args.output.json() {
        let plugins: Vec<serde_json::Value> = hits
            .iter()
            .map(|hit| {
                json!({
                    "name": hit.entry.name,
                    "marketplace": hit.marketplace,
                    "version": hit.entry.version,
                    "description": hit.entry.description,
                    "keywords": hit.entry.keywords,
                })
            })
            .collect();
        let doc = json!({
            "query": args.query,
            "marketplaces": manifest.marketplaces.iter().map(|m| &m.name).collect::<Vec<_>>(),
            "plugins": plugins,
        });
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        ctx.printer.json(&text);
        return Ok(());
    }
    if hits.is_empty() {
        ctx.printer.status(
            "Found",
            &format!("no plugin matching `{}` in {searched}", args.query),
        );
        return Ok(());
    }
    ctx.printer.data(&table(&hits));
    ctx.printer.status(
        "Found",
        &format!(
            "{} matching `{}` in {searched}",
            crate::commands::plugins(hits.len()),
            args.query
        ),
    );
    Ok(())
}

/// The entries matching `query` in every declared marketplace. One out of reach is left
/// out with a warning; with none read, that is the error.
fn search_all(
    ctx: &Context,
    manifest: &berth_lockfile_schema::Manifest,
    lock: Option<&berth_lockfile_schema::Lock>,
    query: &str,
    network: Network,
) -> Result<Vec<Hit>> {
    let query = query.to_lowercase();
    let mut hits = Vec::new();
    let mut read = 0;
    for declared in &manifest.marketplaces {
        let catalog = match super::read_catalog(ctx, lock, declared, network) {
            Ok((_, catalog)) => catalog,
            Err(error) if manifest.marketplaces.len() > 1 => {
                ctx.printer.warn(&format!(
                    "marketplace `{}` is left out of the search: {}",
                    declared.name,
                    crate::context::error_text(&error)
                ));
                continue;
            }
            Err(error) => return Err(error),
        };
        read += 1;
        hits.extend(
            catalog
                .plugins
                .into_iter()
                .filter(|entry| matches(entry, &query))
                .map(|entry| Hit {
                    marketplace: declared.name.clone(),
                    entry,
                }),
        );
    }
    if read == 0 {
        return Err(Failure {
            message: "no declared marketplace could be read (each is named above)".to_owned(),
            notes: Vec::new(),
        }
        .into());
    }
    Ok(hits)
}

/// Whether `query` (lower case) is part of the entry's name, description or a keyword.
fn matches(entry: &CatalogEntry, query: &str) -> bool {
    std::iter::once(&entry.name)
        .chain(&entry.description)
        .chain(&entry.keywords)
        .any(|text| text.to_lowercase().contains(query))
}

/// The hits for people: a header, then a row per plugin (`PLUGIN@MARKETPLACE`, version,
/// description on one line).
fn table(hits: &[Hit]) -> String {
    let mut rows = vec![[
        "PLUGIN".to_owned(),
        "VERSION".to_owned(),
        "DESCRIPTION".to_owned(),
    ]];
    rows.extend(hits.iter().map(|hit| {
        [
            format!("{}@{}", hit.entry.name, hit.marketplace),
            hit.entry.version.clone().unwrap_or_default(),
            hit.entry
                .description
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        ]
    }));
    let width = |col: usize| {
        rows.iter()
            .map(|r| r[col].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0), width(1));
    let mut out = String::new();
    for [plugin, version, description] in &rows {
        let line = format!("{plugin:<w0$}  {version:<w1$}  {description}");
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}
