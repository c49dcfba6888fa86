//! `berth plugins diff`: what changes between two locks, as capabilities.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::{Lock, LockedPlugin, parse_lock};
use berth_resolver::{LocalCheck, Network, sync_plugins};
use berth_review::{Surface, diff, surface_of};

use crate::args::{DiffArgs, DiffFormat};
use crate::context::{Context, Failure};

use super::diff_report::{self, LockDiff, PayloadDiff, PinView, PluginDiff};

pub fn run(ctx: &Context, args: &DiffArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let to_path = args.to.clone().unwrap_or_else(|| ctx.lock_path.clone());
    let to_label = to_path.display().to_string();
    let new = read_lock_file(&to_path)?;
    let (old, from_label) = read_from(ctx, &args.from)?;
    let network = if args.offline {
        Network::Offline
    } else {
        Network::Online
    };
    let report = lock_diff(ctx, &old, &new, network, from_label, to_label)?;
    let format = if args.json {
        DiffFormat::Json
    } else {
        args.format
    };
    match format {
        DiffFormat::Json => ctx
            .printer
            .json(&serde_json::to_string_pretty(&report).expect("a diff is always serialisable")),
        DiffFormat::Text => ctx.printer.data(&diff_report::text(&report)),
        DiffFormat::Markdown => ctx.printer.data(&diff_report::markdown(&report)),
    }
    Ok(())
}

fn read_lock_file(path: &Path) -> Result<Lock> {
    let label = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("could not read `{label}`"))?;
    Ok(parse_lock(&label, &text)?)
}

/// `--from`: a lock file if one is there, else a git revision of the project's lockfile.
fn read_from(ctx: &Context, from: &str) -> Result<(Lock, String)> {
    let path = Path::new(from);
    if path.is_file() {
        return Ok((read_lock_file(path)?, from.to_owned()));
    }
    let dir = ctx
        .lock_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = ctx
        .lock_path
        .file_name()
        .context("the lockfile has no file name")?
        .to_string_lossy()
        .into_owned();
    // A revision is never an option: `--from=--output=FILE` would have `git show` write
    // FILE. Refused here with a clear message, and `--end-of-options` keeps git from
    // reading any later argument as one.
    if from.starts_with('-') {
        bail!(
            "`--from {from}` is neither a file nor a git revision (a revision never starts with `-`); pass a lockfile (`./{from}`) or a revision such as `HEAD`"
        );
    }
    let spec = format!("{from}:./{name}");
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["show", "--no-textconv", "--end-of-options", &spec])
        .output()
        .context("could not run `git` to read the old lock; pass `--from FILE` instead")?;
    if !output.status.success() {
        bail!(
            "`--from {from}` is neither a file nor a git revision holding `{}` ({}); pass a lockfile or a revision such as `HEAD`",
            ctx.lock_label(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let label = format!("{from}:{}", ctx.lock_label());
    let text =
        String::from_utf8(output.stdout).with_context(|| format!("`{label}` is not UTF-8"))?;
    Ok((parse_lock(&label, &text)?, label))
}

/// The plugins whose content or marketplace definition differs between `old` and `new`,
/// with their surfaces' difference; what is not in the store is fetched first, as `sync`
/// would.
pub fn lock_diff(
    ctx: &Context,
    old: &Lock,
    new: &Lock,
    network: Network,
    from: String,
    to: String,
) -> Result<LockDiff> {
    let mut pairs: Vec<(Option<LockedPlugin>, Option<LockedPlugin>)> = Vec::new();
    for plugin in &new.plugins {
        match counterpart(old, new, plugin) {
            // The same content, the same marketplace definition and the same record of what
            // its servers offer: nothing can differ.
            Some(before)
                if before.hash == plugin.hash
                    && before.definition == plugin.definition
                    && super::diff_signer::SignerDiff::between(Some(before), Some(plugin))
                        .is_none()
                    && tools_of(old, &plugin.name) == tools_of(new, &plugin.name) => {}
            before => pairs.push((before.cloned(), Some(plugin.clone()))),
        }
    }
    for plugin in &old.plugins {
        if counterpart(new, old, plugin).is_none() {
            pairs.push((Some(plugin.clone()), None));
        }
    }
    let side = |lock: &Lock, plugins: Vec<LockedPlugin>| Lock {
        plugins,
        agent: None,
        marketplaces: lock.marketplaces.clone(),
        payloads: Vec::new(),
        registry_keys: Vec::new(),
        tools: lock.tools.clone(),
        exclude_newer: None,
    };
    let old_side = side(old, pairs.iter().filter_map(|p| p.0.clone()).collect());
    let new_side = side(new, pairs.iter().filter_map(|p| p.1.clone()).collect());
    let old_surfaces = surfaces(ctx, &old_side, network)?;
    let new_surfaces = surfaces(ctx, &new_side, network)?;
    let empty = Surface::default();
    let mut plugins = Vec::new();
    // Each side's surfaces are in the order of its plugins in `pairs`.
    let (mut old_surfaces, mut new_surfaces) = (old_surfaces.iter(), new_surfaces.iter());
    for (before, after) in &pairs {
        let old_surface = before
            .as_ref()
            .and_then(|_| old_surfaces.next())
            .map_or(&empty, |(_, s)| s);
        let new_surface = after
            .as_ref()
            .and_then(|_| new_surfaces.next())
            .map_or(&empty, |(_, s)| s);
        let changes = diff(old_surface, new_surface);
        let signer = super::diff_signer::SignerDiff::between(before.as_ref(), after.as_ref());
        let changes_hands = signer.as_ref().is_some_and(|s| s.changes_hands);
        plugins.push(PluginDiff {
            name: after
                .as_ref()
                .or(before.as_ref())
                .map(|p| p.name.clone())
                .unwrap_or_default(),
            status: status(before.as_ref(), after.as_ref()),
            old: before.as_ref().map(PinView::of),
            new: after.as_ref().map(PinView::of),
            runs_different_code: changes.changes_what_runs() || changes_hands,
            changes,
            signer,
        });
    }
    Ok(LockDiff {
        version: 1,
        from,
        to,
        plugins,
        payloads: PayloadDiff::between(&old.payloads, &new.payloads),
    })
}

/// `added`, `removed` or `moved`, by which sides have the plugin.
fn status(before: Option<&LockedPlugin>, after: Option<&LockedPlugin>) -> &'static str {
    match (before, after) {
        (None, Some(_)) => "added",
        (Some(_), None) => "removed",
        _ => "moved",
    }
}

/// The entry of `lock` that `plugin` (of `other`) continues: the one asked for the same
/// way (the same `PLUGIN@MARKETPLACE`, else the same source, `repo_path`, `ref` and
/// `version`) under the same name, else the one plugin of its name when each lock has
/// only one (its request changed).
/// Two entries of one name are never paired with each other by their name alone.
pub fn counterpart<'a>(
    lock: &'a Lock,
    other: &Lock,
    plugin: &LockedPlugin,
) -> Option<&'a LockedPlugin> {
    let same_request = |p: &&LockedPlugin| {
        p.name == plugin.name
            && match (&p.requested, &plugin.requested) {
                (Some(a), Some(b)) => a == b,
                (None, None) => {
                    p.source == plugin.source
                        && p.repo_path == plugin.repo_path
                        && p.git_ref == plugin.git_ref
                        && p.version == plugin.version
                }
                _ => false,
            }
    };
    lock.plugins.iter().find(same_request).or_else(|| {
        let mut here = lock.plugins.iter().filter(|p| p.name == plugin.name);
        let only = here.next().filter(|_| here.next().is_none())?;
        (other
            .plugins
            .iter()
            .filter(|p| p.name == plugin.name)
            .count()
            == 1)
            .then_some(only)
    })
}

/// What `lock` records of the servers of plugin `name`.
fn tools_of<'a>(lock: &'a Lock, name: &str) -> Vec<&'a berth_lockfile_schema::LockedTools> {
    lock.tools.iter().filter(|t| t.plugin == name).collect()
}

/// Every plugin of `lock` fetched into the store if missing, and its surface.
fn surfaces(ctx: &Context, lock: &Lock, network: Network) -> Result<Vec<(String, Surface)>> {
    if lock.plugins.is_empty() {
        return Ok(Vec::new());
    }
    let synced = sync_plugins(
        &ctx.store,
        &ctx.frozen_settings(network),
        &ctx.printer,
        lock,
        None,
        LocalCheck::TrustStore,
    )
    .map_err(|errors| Failure::from_entries("could not fetch", errors))?;
    let tools = berth_review::load_manifests(&ctx.store, &lock.tools);
    lock.plugins
        .iter()
        .zip(&synced.entries)
        .map(|(plugin, entry)| {
            let mut surface = surface_of(&plugin.name, &entry.path, plugin.definition.as_ref())?;
            surface.pin_tools(&plugin.name, &tools);
            Ok((plugin.name.clone(), surface))
        })
        .collect()
}
