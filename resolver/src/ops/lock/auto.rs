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
    Plugin {
        market: &'m MarketState<'m>,
        entry: &'m CatalogEntry,
        request: Box<PluginRequest>,
        kept: Option<&'l LockedPlugin>,
    },
    /// A standalone skill of the catalog.
    Skill {
        market: &'m MarketState<'m>,
        entry: &'m CatalogEntry,
        kept: Option<&'l LockedPlugin>,
    },
}

/// What locking the auto-loaded entries starts from: the entries kept unread, and the
/// jobs that lock the rest; skills and plugins apart, as the SDK loads them.
#[derive(Default)]
struct Planned<'m, 'l> {
    skills: Vec<Result<LockedPlugin, EntryError>>,
    plugins: Vec<Result<LockedPlugin, EntryError>>,
    jobs: Vec<Job<'m, 'l>>,
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
    let mut planned = Planned::default();
    for market in markets.iter().filter(|m| m.declared.auto_load.is_on()) {
        plan_market(env, market, previous, options, &mut planned);
    }
    let Planned {
        mut skills,
        mut plugins,
        jobs,
    } = planned;
    let done = run_parallel(&jobs, env.settings.jobs, |_, job| {
        lock_job(env, job, options, resolved)
    });
    for (job, result) in jobs.iter().zip(done) {
        match job {
            Job::Skill { .. } => skills.push(result),
            Job::Plugin { .. } => plugins.push(result),
        }
    }
    let (locked, errors) = split(skills.into_iter().chain(plugins).collect());
    if errors.is_empty() {
        Ok(locked)
    } else {
        Err(errors)
    }
}

/// What one auto-loading marketplace brings: its previous entries when it was not read,
/// else a job for each plugin and skill of its catalog that `auto_load` names (a name it
/// lists that the catalog does not is warned).
fn plan_market<'m, 'l>(
    env: &Env<'_>,
    market: &'m MarketState<'m>,
    previous: Option<&'l Lock>,
    options: &LockOptions,
    planned: &mut Planned<'m, 'l>,
) {
    let name = market.declared.name.as_str();
    let before: Vec<&'l LockedPlugin> = previous
        .into_iter()
        .flat_map(|l| &l.plugins)
        .filter(|p| p.auto_load.as_deref() == Some(name))
        .collect();
    let Some(read) = market.read.as_ref().filter(|_| !market.auto_kept) else {
        for kept in before {
            let list = if kept.standalone_skill {
                &mut planned.skills
            } else {
                &mut planned.plugins
            };
            list.push(Ok(kept.clone()));
        }
        return;
    };
    let auto_load = &market.declared.auto_load;
    warn_unlisted(env, market, &read.catalog);
    let kept = |entry: &CatalogEntry, skill: bool| {
        let pick = pick_of(&entry.name, name);
        before
            .iter()
            .copied()
            .find(|p| p.standalone_skill == skill && p.requested.as_deref() == Some(&pick))
    };
    for entry in read
        .catalog
        .skills
        .iter()
        .filter(|e| auto_load.loads(&e.name))
    {
        let kept = kept(entry, true);
        planned.jobs.push(Job::Skill {
            market,
            entry,
            kept,
        });
    }
    for entry in read
        .catalog
        .plugins
        .iter()
        .filter(|e| auto_load.loads(&e.name))
    {
        match PluginRequest::new(&pick_of(&entry.name, name), None, None, None) {
            Ok(mut request) => {
                request.line = market.declared.line;
                planned.jobs.push(Job::Plugin {
                    market,
                    entry,
                    request: Box::new(request),
                    kept: kept(entry, false),
                });
            }
            Err(why) => planned.plugins.push(Err(EntryError {
                label: label(options, market, &entry.name),
                error: Box::new(ResolveError::Marketplace {
                    message: format!("marketplace `{name}`: {why}"),
                }),
            })),
        }
    }
}

/// Warns of each name `auto_load` lists that `catalog` lists neither as a plugin nor as a
/// skill (the SDK ignores it silently).
fn warn_unlisted(
    env: &Env<'_>,
    market: &MarketState<'_>,
    catalog: &berth_lockfile_schema::marketplace::Catalog,
) {
    let berth_lockfile_schema::AutoLoad::Only(names) = &market.declared.auto_load else {
        return;
    };
    let listed = |n: &String| {
        catalog
            .plugins
            .iter()
            .chain(&catalog.skills)
            .any(|e| &e.name == n)
    };
    for missing in names.iter().filter(|n| !listed(n)) {
        env.reporter.warn(&format!(
            "marketplace `{}`: `auto_load` names `{missing}`, which its catalog lists neither as a plugin nor as a skill; nothing is loaded for it",
            market.declared.name
        ));
    }
}

/// Locks one auto-loaded entry: a plugin as the pick it is, a skill as its folder.
fn lock_job(
    env: &Env<'_>,
    job: &Job<'_, '_>,
    options: &LockOptions,
    resolved: &AtomicUsize,
) -> Result<LockedPlugin, EntryError> {
    let (market, entry, locked) = match job {
        Job::Plugin {
            market,
            entry,
            request,
            kept,
        } => {
            let pick = Entry {
                request,
                before: *kept,
            };
            let locked = pick
                .lock(env, std::slice::from_ref(*market), options, resolved)
                .map(|r| {
                    let mut plugin = report(env, r);
                    plugin.auto_load = Some(market.declared.name.clone());
                    plugin
                });
            (market, entry, locked)
        }
        Job::Skill {
            market,
            entry,
            kept,
        } => (
            market,
            entry,
            lock_skill(env, market, entry, *kept, options, resolved),
        ),
    };
    locked.map_err(|error| EntryError {
        label: label(options, market, &entry.name),
        error: Box::new(error),
    })
}

/// `NAME@MARKETPLACE`.
fn pick_of(name: &str, market: &str) -> String {
    format!("{name}@{market}")
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
