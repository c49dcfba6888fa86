//! What the marketplaces' `auto_load` brings into every conversation (the OpenHands SDK's
//! registered marketplaces, `MarketplaceRegistration.auto_load`): each plugin and each
//! standalone skill of an auto-loading marketplace's catalog that `auto_load` names,
//! locked ahead of the manifest's own entries as the SDK loads them: the standalone skills
//! of every marketplace first (in declaration, then catalog order), then their plugins.

use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::marketplace::CatalogEntry;
use berth_lockfile_schema::{Lock, LockedPlugin, PluginRequest, is_valid_plugin_name};

use super::markets::MarketState;
use super::{Entry, LockOptions, report};
use crate::context::{Env, run_parallel, split};
use crate::error::{EntryError, ResolveError};
use crate::sources::{Resolved, kind_of, resolve_new};

/// One entry an `auto_load` brings.
enum Job<'m, 'l> {
    /// A plugin of the catalog, locked as the pick `NAME@MARKETPLACE`.
    Plugin(
        &'m MarketState<'m>,
        Box<PluginRequest>,
        Option<&'l LockedPlugin>,
    ),
    /// A standalone skill of the catalog.
    Skill(
        &'m MarketState<'m>,
        &'m CatalogEntry,
        Option<&'l LockedPlugin>,
    ),
}

/// The entries the manifest's marketplaces auto-load, in the order the SDK loads them: a
/// marketplace whose pin and `auto_load` are unchanged keeps the previous lock's entries
/// unread; any other is read and its catalog's named plugins and skills locked (a kept
/// pin kept when its entry still names it).
pub(super) fn lock_auto_loaded(
    env: &Env<'_>,
    markets: &[MarketState<'_>],
    previous: Option<&Lock>,
    options: &LockOptions,
    resolved: &AtomicUsize,
) -> Result<Vec<LockedPlugin>, Vec<EntryError>> {
    let before = |market: &str| -> Vec<&LockedPlugin> {
        previous
            .into_iter()
            .flat_map(|l| &l.plugins)
            .filter(|p| p.auto_load.as_deref() == Some(market))
            .collect()
    };
    let mut skills: Vec<Result<LockedPlugin, EntryError>> = Vec::new();
    let mut plugins: Vec<Result<LockedPlugin, EntryError>> = Vec::new();
    let mut jobs: Vec<Job<'_, '_>> = Vec::new();
    for market in markets.iter().filter(|m| m.declared.auto_load.is_on()) {
        let name = market.declared.name.as_str();
        let Some(read) = market.read.as_ref().filter(|_| !market.auto_kept) else {
            for kept in before(name) {
                let list = if kept.standalone_skill {
                    &mut skills
                } else {
                    &mut plugins
                };
                list.push(Ok(kept.clone()));
            }
            continue;
        };
        let auto_load = &market.declared.auto_load;
        if let berth_lockfile_schema::AutoLoad::Only(names) = auto_load {
            let listed = |n: &String| {
                read.catalog
                    .plugins
                    .iter()
                    .chain(&read.catalog.skills)
                    .any(|e| &e.name == n)
            };
            for missing in names.iter().filter(|n| !listed(n)) {
                env.reporter.warn(&format!(
                    "marketplace `{name}`: `auto_load` names `{missing}`, which its catalog lists neither as a plugin nor as a skill; nothing is loaded for it"
                ));
            }
        }
        for entry in read
            .catalog
            .skills
            .iter()
            .filter(|e| auto_load.loads(&e.name))
        {
            let kept = before(name).into_iter().find(|p| {
                p.standalone_skill && p.requested.as_deref() == Some(&pick_of(&entry.name, name))
            });
            jobs.push(Job::Skill(market, entry, kept));
        }
        for entry in read
            .catalog
            .plugins
            .iter()
            .filter(|e| auto_load.loads(&e.name))
        {
            let pick = pick_of(&entry.name, name);
            let request = PluginRequest::new(&pick, None, None, None)
                .map(|mut r| {
                    r.line = market.declared.line;
                    r
                })
                .map_err(|why| ResolveError::Marketplace {
                    message: format!("marketplace `{name}`: {why}"),
                });
            let kept = before(name)
                .into_iter()
                .find(|p| !p.standalone_skill && p.requested.as_deref() == Some(&pick));
            match request {
                Ok(request) => jobs.push(Job::Plugin(market, Box::new(request), kept)),
                Err(error) => plugins.push(Err(EntryError {
                    label: label(options, market, &entry.name),
                    error: Box::new(error),
                })),
            }
        }
    }
    let done = run_parallel(&jobs, env.settings.jobs, |_, job| match job {
        Job::Plugin(market, request, kept) => {
            let entry = Entry {
                request,
                before: *kept,
            };
            entry
                .lock(env, std::slice::from_ref(*market), options, resolved)
                .map(|r| {
                    let mut plugin = report(env, r);
                    plugin.auto_load = Some(market.declared.name.clone());
                    plugin
                })
                .map_err(|error| EntryError {
                    label: label(options, market, &entry_name(request)),
                    error: Box::new(error),
                })
        }
        Job::Skill(market, entry, kept) => lock_skill(env, market, entry, *kept, options, resolved)
            .map_err(|error| EntryError {
                label: label(options, market, &entry.name),
                error: Box::new(error),
            }),
    });
    for (job, result) in jobs.iter().zip(done) {
        match job {
            Job::Skill(..) => skills.push(result),
            Job::Plugin(..) => plugins.push(result),
        }
    }
    let (locked, errors) = split(skills.into_iter().chain(plugins).collect());
    if errors.is_empty() {
        Ok(locked)
    } else {
        Err(errors)
    }
}

/// `NAME@MARKETPLACE`.
fn pick_of(name: &str, market: &str) -> String {
    format!("{name}@{market}")
}

fn entry_name(request: &PluginRequest) -> String {
    match request.parsed_source() {
        berth_lockfile_schema::Source::Marketplace { plugin, .. } => plugin.clone(),
        _ => request.display_source(),
    }
}

/// An auto-loaded entry as messages name it: the marketplace's line, and the entry.
fn label(options: &LockOptions, market: &MarketState<'_>, entry: &str) -> String {
    format!(
        "{}:{}: marketplace `{}`, `auto_load` of `{entry}`",
        options.manifest_label, market.declared.line, market.declared.name
    )
}

/// Locks a standalone skill of `market`'s catalog: the folder its entry names, as a plain
/// request (the marketplace's repository at its pinned commit, or a remote source), under
/// the entry's name. A previous pin whose request is the same is kept.
fn lock_skill(
    env: &Env<'_>,
    market: &MarketState<'_>,
    entry: &CatalogEntry,
    kept: Option<&LockedPlugin>,
    options: &LockOptions,
    resolved: &AtomicUsize,
) -> Result<LockedPlugin, ResolveError> {
    let declared = market.declared;
    let read = market
        .read
        .as_ref()
        .expect("a marketplace whose auto-loaded entries are locked is read");
    if !is_valid_plugin_name(&entry.name) {
        return Err(ResolveError::Marketplace {
            message: format!(
                "marketplace `{}`: its skill `{}` has a name berth cannot lock (letters, digits, `.`, `_` and `-`)",
                declared.name, entry.name
            ),
        });
    }
    let request = crate::sources::marketplace::derive_skill(env, read, declared, entry)?;
    let upgrading = options.upgrade.covers(&declared.name)
        || kept.is_some_and(|l| options.upgrade.covers(&l.name));
    let same_request = |l: &LockedPlugin| {
        l.source == request.display_source()
            && l.git_ref == request.git_ref
            && l.repo_path == request.repo_path
    };
    let locked = match kept.filter(|l| !upgrading && same_request(l)) {
        Some(l) if !kind_of(&l.pin).changes_in_place() => Resolved::kept(l.clone()),
        _ => {
            resolved.fetch_add(1, Ordering::Relaxed);
            resolve_new(env, &request)?
        }
    };
    let mut plugin = report(env, locked);
    plugin.name = entry.name.clone();
    plugin.requested = Some(pick_of(&entry.name, &declared.name));
    plugin.auto_load = Some(declared.name.clone());
    plugin.standalone_skill = true;
    Ok(plugin)
}
