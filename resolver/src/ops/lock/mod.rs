//! `lock`: resolve new or changed entries, keep the pins of the rest. [`lock_plugins`] is
//! its steps in order: the names `--upgrade-plugin` gives checked, each request paired
//! with its previous entry, the marketplaces read (`markets.rs`), every entry locked in
//! parallel, the dependencies added, the agent locked.

mod auto;
mod markets;
mod signatures;

use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::{Lock, LockedAgent, LockedPlugin, Manifest, PluginRequest};
use berth_store::Store;

use crate::context::{Env, Reporter, Settings, run_parallel, split};
use crate::error::{EntryError, ResolveError};
use crate::payload::resolve_signed;
use crate::sources::{Resolved, check_requested, kind_of, load, resolve_new};
use markets::{MarketState, PickAction, lock_marketplaces};

use super::age::{cutoff_for, warn_git_dates};
use crate::context::ActiveCutoff;

/// Which locked pins `lock` may move.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Upgrade {
    /// Keep every pin whose request is unchanged (`berth plugins lock`).
    #[default]
    Nothing,
    /// Re-resolve every entry (`--upgrade`).
    All,
    /// Re-resolve the entries with these plugin names (`--upgrade-plugin NAME`).
    Plugins(Vec<String>),
}

impl Upgrade {
    /// Whether it lets the pins of `name` move: a plugin (and its servers' payloads), a
    /// marketplace (and the plugins picked from it), or the agent package. The one rule
    /// every step of `lock` asks.
    pub fn covers(&self, name: &str) -> bool {
        match self {
            Upgrade::Nothing => false,
            Upgrade::All => true,
            Upgrade::Plugins(names) => names.iter().any(|n| n == name),
        }
    }
}

/// How to run `lock`.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Which pins may move.
    pub upgrade: Upgrade,
    /// The manifest's name in messages (`plugins.toml`).
    pub manifest_label: String,
    /// What to do with local folders whose request is unchanged.
    pub local: LocalRelock,
}

/// Whether locking re-hashes local folders that are already locked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LocalRelock {
    /// Re-hash them and lock their current content (`berth plugins lock`).
    #[default]
    Rehash,
    /// Keep their locked hash; `sync` then reports a changed folder instead of silently
    /// locking it (the lock that `sync` makes when the manifest changed).
    Keep,
}

/// The new lock and what it took to make it.
#[derive(Debug, Clone)]
pub struct LockOutcome {
    /// The lock, one entry per manifest entry, in order.
    pub lock: Lock,
    /// How many entries were resolved afresh (the rest kept their pins).
    pub resolved: usize,
}

/// Resolves the manifest into a lock, keeping the pins of `previous` entries whose request
/// is unchanged. Only new, changed or upgraded git entries touch the network; local folders
/// are always re-hashed (they have no other pin).
pub fn lock_plugins(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    manifest: &Manifest,
    previous: Option<&Lock>,
    options: &LockOptions,
) -> Result<LockOutcome, Vec<EntryError>> {
    check_upgrade_names(manifest, previous, &options.upgrade)?;
    let (cutoff, options) = &under_cutoff(manifest, settings, previous, options);
    let matched = match_previous(manifest, previous);
    let env = Env::new(store, settings, reporter).under(cutoff.clone());
    let markets = lock_marketplaces(&env, manifest, previous, options, &matched)?;
    let resolved = AtomicUsize::new(0);
    let results = run_parallel(&manifest.plugins, settings.jobs, |i, request| {
        let entry = Entry {
            request,
            before: matched[i],
        };
        let started = std::time::Instant::now();
        entry
            .lock(&env, &markets, options, &resolved)
            .map(|locked| {
                step(&env, &entry, options, &locked.plugin, started.elapsed());
                report(&env, locked)
            })
            .map_err(|error| EntryError {
                label: entry_label(&options.manifest_label, request),
                error: Box::new(error),
            })
    });
    let (plugins, mut errors) = split(results);
    // What the marketplaces auto-load goes first, as the SDK loads it before the
    // conversation's own plugins.
    let plugins = match auto::lock_auto_loaded(&env, &markets, previous, options, &resolved) {
        Ok(mut auto) => {
            auto.extend(plugins);
            auto
        }
        Err(mut failed) => {
            errors.append(&mut failed);
            plugins
        }
    };
    let mut plugins = if errors.is_empty() {
        add_dependencies(&env, manifest, &markets, plugins, previous, options).unwrap_or_else(
            |error| {
                errors.push(error);
                Vec::new()
            },
        )
    } else {
        plugins
    };
    let agent = lock_agent(&env, manifest, previous, options, &resolved, &mut errors);
    let registry_keys = crate::payload::lock_keys(&env, &plugins, previous)
        .map_err(|e| errors.push(e))
        .unwrap_or_default();
    if !errors.is_empty() {
        return Err(errors);
    }
    warn_git_dates(&env);
    crate::sources::record_resolved(&env, &plugins, previous);
    signatures::record(&env, &mut plugins, previous);
    Ok(LockOutcome {
        lock: Lock {
            plugins,
            agent,
            marketplaces: markets.into_iter().map(|m| m.locked).collect(),
            // Kept as they were: `lock_payloads` pins them once the plugins are stored.
            payloads: previous.map(|p| p.payloads.clone()).unwrap_or_default(),
            registry_keys,
            // Kept as they were: the caller observes the servers whose code changed.
            tools: previous.map(|p| p.tools.clone()).unwrap_or_default(),
            exclude_newer: cutoff.as_ref().map(|c| c.cutoff.clone()),
        },
        resolved: resolved.into_inner(),
    })
}

/// The release-age cutoff the lock works under, and `options`, with every pin moving
/// when the cutoff is another than the previous lock's (everything is resolved again
/// under it).
fn under_cutoff(
    manifest: &Manifest,
    settings: &Settings,
    previous: Option<&Lock>,
    options: &LockOptions,
) -> (Option<ActiveCutoff>, LockOptions) {
    let fresh = options.upgrade == Upgrade::All;
    let cutoff = cutoff_for(manifest, &options.manifest_label, settings, previous, fresh);
    let moved =
        previous.is_some_and(|p| p.exclude_newer.as_ref() != cutoff.as_ref().map(|c| &c.cutoff));
    let mut options = options.clone();
    if moved {
        options.upgrade = Upgrade::All;
    }
    (cutoff, options)
}

/// Refuses an `--upgrade-plugin` name that is neither a marketplace of the manifest nor a
/// plugin or the agent of the previous lock.
fn check_upgrade_names(
    manifest: &Manifest,
    previous: Option<&Lock>,
    upgrade: &Upgrade,
) -> Result<(), Vec<EntryError>> {
    let Upgrade::Plugins(names) = upgrade else {
        return Ok(());
    };
    let known = |name: &String| {
        manifest.marketplaces.iter().any(|m| &m.name == name)
            || previous.is_some_and(|l| {
                l.plugins.iter().any(|p| &p.name == name)
                    || l.agent.as_ref().is_some_and(|a| &a.package == name)
            })
    };
    let unknown: Vec<EntryError> = names
        .iter()
        .filter(|n| !known(n))
        .map(|n| EntryError {
            label: format!("`--upgrade-plugin {n}`"),
            error: Box::new(ResolveError::UnknownPlugin { name: n.clone() }),
        })
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(unknown)
    }
}

/// The previous entry each request still describes. The entry at the same position is
/// preferred; an entry that moved keeps its pin too.
fn match_previous<'a>(
    manifest: &Manifest,
    previous: Option<&'a Lock>,
) -> Vec<Option<&'a LockedPlugin>> {
    let mut used = vec![false; previous.map_or(0, |l| l.plugins.len())];
    manifest
        .plugins
        .iter()
        .enumerate()
        .map(|(i, request)| {
            let previous = previous?;
            let index = std::iter::once(i)
                .chain(0..previous.plugins.len())
                .find(|&j| {
                    j < previous.plugins.len() && !used[j] && previous.plugins[j].satisfies(request)
                })?;
            used[index] = true;
            Some(&previous.plugins[index])
        })
        .collect()
}

/// A manifest entry and the previous lock's entry for it.
struct Entry<'r, 'l> {
    request: &'r PluginRequest,
    before: Option<&'l LockedPlugin>,
}

impl Entry<'_, '_> {
    /// Locks the entry: a pick through its marketplace, else its kept pin (a folder that
    /// can change in place hashed again, when `options` say so), else resolved afresh.
    fn lock(
        &self,
        env: &Env<'_>,
        markets: &[MarketState<'_>],
        options: &LockOptions,
        resolved: &AtomicUsize,
    ) -> Result<Resolved, ResolveError> {
        if let Some(marketplace) = self.request.parsed_source().marketplace() {
            let market = markets
                .iter()
                .find(|m| m.declared.name == marketplace)
                .expect("the manifest declares every marketplace it names");
            return self.lock_pick(env, market, &options.upgrade, resolved);
        }
        // Before anything is fetched (a pick is matched once its catalog names its source).
        env.settings
            .sources
            .check_plugin(&self.request.display_source(), None)?;
        check_requested(env, self.request)?;
        match self.before.filter(|l| !options.upgrade.covers(&l.name)) {
            Some(locked)
                if options.local == LocalRelock::Rehash
                    && kind_of(&locked.pin).changes_in_place() =>
            {
                rehash(env, locked, self.request)
            }
            Some(locked) => Ok(Resolved::kept(locked.clone())),
            None => {
                resolved.fetch_add(1, Ordering::Relaxed);
                resolve_new(env, self.request)
            }
        }
    }

    /// Locks a `PLUGIN@MARKETPLACE` request as [`MarketState::pick_action`] decides.
    fn lock_pick(
        &self,
        env: &Env<'_>,
        market: &MarketState<'_>,
        upgrade: &Upgrade,
        resolved: &AtomicUsize,
    ) -> Result<Resolved, ResolveError> {
        match market.pick_action(env, self.request, self.before, upgrade)? {
            PickAction::Keep(locked) => Ok(Resolved::kept(locked.clone())),
            PickAction::Rehash(derived, locked) => {
                rehash(env, locked, &derived.request).map(|r| derived.mark(r, self.request))
            }
            PickAction::Resolve(derived, before) => {
                resolved.fetch_add(1, Ordering::Relaxed);
                let r = derived.mark(resolve_signed(env, &derived)?, self.request);
                Ok(match before {
                    // Same content as before: the old pin stays (with what the entry
                    // declares now), so a marketplace upgrade moves only the plugins whose
                    // entry changed.
                    Some(locked)
                        if locked.hash == r.plugin.hash && locked.name == r.plugin.name =>
                    {
                        let mut plugin = locked.clone();
                        plugin.plugin_version = r.plugin.plugin_version;
                        plugin.dependencies = r.plugin.dependencies;
                        plugin.definition = r.plugin.definition;
                        plugin.npm = r.plugin.npm;
                        Resolved::kept(plugin)
                    }
                    _ => r,
                })
            }
        }
    }
}

/// Tells a `-v` reader what the entry came to: its pin kept, or what its request resolved
/// to and how long that took.
fn step(
    env: &Env<'_>,
    entry: &Entry<'_, '_>,
    options: &LockOptions,
    locked: &LockedPlugin,
    took: std::time::Duration,
) {
    let pin = locked.pin_label();
    let same = entry
        .before
        .is_some_and(|b| b.hash == locked.hash && b.pin == locked.pin);
    let looked_again =
        options.upgrade.covers(&locked.name) || kind_of(&locked.pin).changes_in_place();
    if same && !looked_again {
        env.reporter
            .detail("Kept", &format!("{} at {pin}", locked.name));
        return;
    }
    let unchanged = if same { " (unchanged)" } else { "" };
    let asked = match (&locked.version, &locked.git_ref) {
        (Some(range), _) => format!(" {range}"),
        (None, Some(r)) => format!(" {r}"),
        (None, None) => String::new(),
    };
    env.reporter.detail(
        "Resolved",
        &format!(
            "{}{asked} to {pin}{unchanged} in {:.2}s",
            locked.name,
            took.as_secs_f64()
        ),
    );
}

/// Hashes again the content of a kept pin that can change in place (a local folder).
fn rehash(
    env: &Env<'_>,
    locked: &LockedPlugin,
    request: &PluginRequest,
) -> Result<Resolved, ResolveError> {
    load(env, request.parsed_source())?.lock(request, Some(locked))
}

/// Warns of what this run resolved (a kept pin was warned about when it was locked): the
/// files the runtime will skip, a name that mixes scripts, dependencies ignored.
fn report(env: &Env<'_>, resolved: Resolved) -> LockedPlugin {
    for skipped in &resolved.skipped {
        env.reporter.warn(&skipped.message(&resolved.plugin.name));
    }
    if let (Some(held), Some(cutoff)) = (&resolved.held_back, &env.cutoff) {
        env.reporter.status(
            "Held back",
            &format!(
                "`{}` at {}: {} is newer than the cutoff {}",
                resolved.plugin.name,
                resolved.plugin.pin_label(),
                held.newer,
                cutoff.describe()
            ),
        );
    }
    let name = &resolved.plugin.name;
    if let Some(scripts) = berth_lockfile_schema::mixed_scripts(name) {
        env.reporter.warn(&format!(
            "plugin `{name}`: its name mixes {} letters, so it can pass for another name; check it is the plugin you meant",
            scripts.join(" and ")
        ));
    }
    if resolved.plugin.requested.is_some() {
        for problem in &resolved.declared.problems {
            env.reporter.warn(&format!(
                "plugin `{name}`: {problem}; that dependency is ignored"
            ));
        }
    } else if !resolved.declared.dependencies.is_empty() {
        let names: Vec<String> = resolved
            .declared
            .dependencies
            .iter()
            .map(|d| format!("`{}`", d.key()))
            .collect();
        env.reporter.warn(&format!(
            "plugin `{name}` depends on {}; berth resolves the dependencies of plugins asked for from a marketplace (`PLUGIN@MARKETPLACE`), so add these yourself",
            names.join(", ")
        ));
    }
    resolved.plugin
}

/// The plugins they need, through their marketplaces, each before the first that needs it.
fn add_dependencies(
    env: &Env<'_>,
    manifest: &Manifest,
    markets: &[MarketState<'_>],
    plugins: Vec<LockedPlugin>,
    previous: Option<&Lock>,
    options: &LockOptions,
) -> Result<Vec<LockedPlugin>, EntryError> {
    let mut closure = crate::ops::dependencies::Markets {
        declared: &manifest.marketplaces,
        read: markets
            .iter()
            .filter_map(|m| m.read.clone().map(|r| (m.declared.name.clone(), r)))
            .collect(),
        locked: markets.iter().map(|m| m.locked.clone()).collect(),
    };
    crate::ops::dependencies::lock_dependencies(
        env,
        plugins,
        &mut closure,
        previous,
        &options.upgrade,
    )
    .map_err(|error| EntryError {
        label: format!("{}: plugin dependencies", options.manifest_label),
        error: Box::new(error),
    })
}

/// The manifest's `[agent]`: its previous pin while its request is unchanged and not
/// upgraded, else locked afresh (unless an entry failed already).
fn lock_agent(
    env: &Env<'_>,
    manifest: &Manifest,
    previous: Option<&Lock>,
    options: &LockOptions,
    resolved: &AtomicUsize,
    errors: &mut Vec<EntryError>,
) -> Option<LockedAgent> {
    let request = manifest.agent.as_ref()?;
    let kept = previous
        .and_then(|l| l.agent.as_ref())
        .filter(|a| a.satisfies(request))
        .filter(|a| !options.upgrade.covers(&a.package));
    if let Some(agent) = kept {
        return Some(agent.clone());
    }
    if !errors.is_empty() {
        return None;
    }
    resolved.fetch_add(1, Ordering::Relaxed);
    match crate::agent::lock_agent(env, request) {
        Ok(agent) => Some(agent),
        Err(error) => {
            errors.push(EntryError {
                label: format!(
                    "{}:{}: `[agent]` `{}`",
                    options.manifest_label,
                    request.line,
                    request.display_source()
                ),
                error: Box::new(error),
            });
            None
        }
    }
}

/// An entry as messages name it: where it is in the manifest, and its source.
fn entry_label(manifest: &str, request: &PluginRequest) -> String {
    format!(
        "{manifest}:{}: `{}`",
        request.line,
        request.display_source()
    )
}
