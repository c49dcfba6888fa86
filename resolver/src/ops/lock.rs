//! `lock`: resolve new or changed entries, keep the pins of the rest.

use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::marketplace::{DependencySpec, LockedMarketplace, MarketplaceRequest};
use berth_lockfile_schema::{Lock, LockedPlugin, Manifest, PluginRequest, Source, SourceKind};
use berth_store::Store;

use crate::context::*;
use crate::context::{Reporter, Settings};
use crate::error::{EntryError, ResolveError};
use crate::sources::marketplace::{Derived, ReadMarketplace};

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
    /// Whether it lets the pins of `plugin` (and its servers' payloads) move.
    pub fn covers(&self, plugin: &str) -> bool {
        match self {
            Upgrade::Nothing => false,
            Upgrade::All => true,
            Upgrade::Plugins(names) => names.iter().any(|n| n == plugin),
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
    if let Upgrade::Plugins(names) = &options.upgrade {
        let unknown: Vec<EntryError> = names
            .iter()
            .filter(|n| {
                !manifest.marketplaces.iter().any(|m| &m.name == *n)
                    && !previous.is_some_and(|l| {
                        l.plugins.iter().any(|p| &p.name == *n)
                            || l.agent.as_ref().is_some_and(|a| &a.package == *n)
                    })
            })
            .map(|n| EntryError {
                label: format!("`--upgrade-plugin {n}`"),
                error: Box::new(ResolveError::UnknownPlugin { name: n.clone() }),
            })
            .collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
    }
    let upgrading = |name: &str| match &options.upgrade {
        Upgrade::Nothing => false,
        Upgrade::All => true,
        Upgrade::Plugins(names) => names.iter().any(|n| n == name),
    };
    // The previous entry each request still describes. Prefer the entry at the same
    // position; an entry that moved keeps its pin too.
    let mut used = vec![false; previous.map_or(0, |l| l.plugins.len())];
    let matched: Vec<Option<&LockedPlugin>> = manifest
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
        .collect();
    let ctx = Ctx::new(store, settings, reporter);
    let markets = lock_marketplaces(&ctx, manifest, previous, options, &matched, &upgrading)?;
    let resolved = AtomicUsize::new(0);
    let results = run_parallel(&manifest.plugins, settings.jobs, |i, request| {
        let label = || entry_label(&options.manifest_label, request);
        let rehash = |locked: &LockedPlugin, request: &PluginRequest| {
            crate::sources::of(SourceKind::Local).lock(&ctx, request, Some(locked))
        };
        let keep = |locked: &LockedPlugin| {
            Ok(Resolved {
                plugin: locked.clone(),
                skipped: Vec::new(),
                declared: Declared::default(),
            })
        };
        let kept = matched[i].filter(|l| !upgrading(&l.name));
        let result = match (kept, request.parsed_source()) {
            (_, Source::Marketplace { marketplace, .. }) => {
                let market = markets
                    .iter()
                    .find(|m| &m.declared.name == marketplace)
                    .expect("the manifest declares every marketplace it names");
                match market.pick_action(&ctx, request, matched[i], &upgrading) {
                    Ok(PickAction::Keep(locked)) => keep(locked),
                    Ok(PickAction::Rehash(derived, locked)) => rehash(locked, &derived.request)
                        .map(|r| with_requested(r, request, &derived)),
                    Ok(PickAction::Resolve(derived, before)) => {
                        resolved.fetch_add(1, Ordering::Relaxed);
                        ctx.resolve_derived(&derived).map(|r| {
                            let r = with_requested(r, request, &derived);
                            match before {
                                // Same content as before: the old pin stays (with what the
                                // entry declares now), so a marketplace upgrade moves only
                                // the plugins whose entry changed.
                                Some(locked)
                                    if locked.hash == r.plugin.hash
                                        && locked.name == r.plugin.name =>
                                {
                                    let mut plugin = locked.clone();
                                    plugin.plugin_version = r.plugin.plugin_version;
                                    plugin.dependencies = r.plugin.dependencies;
                                    plugin.definition = r.plugin.definition;
                                    Resolved {
                                        plugin,
                                        skipped: Vec::new(),
                                        declared: Declared::default(),
                                    }
                                }
                                _ => r,
                            }
                        })
                    }
                    Err(e) => Err(e),
                }
            }
            (Some(locked), Source::Local { .. }) if options.local == LocalRelock::Rehash => {
                rehash(locked, request)
            }
            (Some(locked), _) => keep(locked),
            (None, _) => {
                resolved.fetch_add(1, Ordering::Relaxed);
                crate::sources::resolve_new(&ctx, request)
            }
        }
        .map(|resolved| {
            // Only what this run resolved: a kept pin was warned about when it was locked.
            for skipped in &resolved.skipped {
                ctx.reporter.warn(&skipped.message(&resolved.plugin.name));
            }
            let name = &resolved.plugin.name;
            if let Some(scripts) = berth_lockfile_schema::mixed_scripts(name) {
                ctx.reporter.warn(&format!(
                    "plugin `{name}`: its name mixes {} letters, so it can pass for another name; check it is the plugin you meant",
                    scripts.join(" and ")
                ));
            }
            if resolved.plugin.requested.is_some() {
                for problem in &resolved.declared.problems {
                    ctx.reporter
                        .warn(&format!("plugin `{name}`: {problem}; that dependency is ignored"));
                }
            } else if !resolved.declared.dependencies.is_empty() {
                let names: Vec<String> = resolved
                    .declared
                    .dependencies
                    .iter()
                    .map(|d| format!("`{}`", d.key()))
                    .collect();
                ctx.reporter.warn(&format!(
                    "plugin `{name}` depends on {}; berth resolves the dependencies of plugins asked for from a marketplace (`PLUGIN@MARKETPLACE`), so add these yourself",
                    names.join(", ")
                ));
            }
            resolved.plugin
        });
        result.map_err(|error| EntryError {
            label: label(),
            error: Box::new(error),
        })
    });
    let (plugins, mut errors) = split(results);
    // The plugins they need, through their marketplaces, each before the first that needs it.
    let plugins = if errors.is_empty() {
        let mut closure = crate::ops::dependencies::Markets {
            declared: &manifest.marketplaces,
            read: markets
                .iter()
                .filter_map(|m| m.read.clone().map(|r| (m.declared.name.clone(), r)))
                .collect(),
            locked: markets.iter().map(|m| m.locked.clone()).collect(),
        };
        match ctx.lock_dependencies(plugins, &mut closure, previous, &upgrading) {
            Ok(plugins) => plugins,
            Err(error) => {
                errors.push(EntryError {
                    label: format!("{}: plugin dependencies", options.manifest_label),
                    error: Box::new(error),
                });
                Vec::new()
            }
        }
    } else {
        plugins
    };
    let agent = match &manifest.agent {
        None => None,
        Some(request) => {
            let kept = previous
                .and_then(|l| l.agent.as_ref())
                .filter(|a| a.satisfies(request))
                .filter(|a| match &options.upgrade {
                    Upgrade::Nothing => true,
                    Upgrade::All => false,
                    Upgrade::Plugins(names) => !names.contains(&a.package),
                });
            match kept {
                Some(agent) => Some(agent.clone()),
                None if !errors.is_empty() => None,
                None => {
                    resolved.fetch_add(1, Ordering::Relaxed);
                    match ctx.lock_agent(request) {
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
            }
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(LockOutcome {
        lock: Lock {
            plugins,
            agent,
            marketplaces: markets.into_iter().map(|m| m.locked).collect(),
            // Kept as they were: `lock_payloads` pins them once the plugins are stored.
            payloads: previous.map(|p| p.payloads.clone()).unwrap_or_default(),
        },
        resolved: resolved.into_inner(),
    })
}

/// A declared marketplace for this lock: read now, or kept from the previous lock unread.
struct MarketState<'a> {
    declared: &'a MarketplaceRequest,
    /// The previous lock's pin, when the declaration is unchanged.
    previous: Option<&'a LockedMarketplace>,
    /// The catalog, when this run read it.
    read: Option<ReadMarketplace>,
    /// What the new lock records.
    locked: LockedMarketplace,
}

/// What `lock` does with one `PLUGIN@MARKETPLACE` request.
enum PickAction<'a> {
    /// Keep the previous pin.
    Keep(&'a LockedPlugin),
    /// The entry still names this local folder: re-hash it.
    Rehash(Derived, &'a LockedPlugin),
    /// Resolve the entry's request; keep the previous pin if the content is the same.
    Resolve(Derived, Option<&'a LockedPlugin>),
}

impl<'a> MarketState<'a> {
    fn pick_action(
        &self,
        ctx: &Ctx<'_>,
        request: &PluginRequest,
        before: Option<&'a LockedPlugin>,
        upgrading: &dyn Fn(&str) -> bool,
    ) -> Result<PickAction<'a>, ResolveError> {
        let upgrade = upgrading(&self.declared.name) || before.is_some_and(|l| upgrading(&l.name));
        if let Some(locked) = before
            && !upgrade
            && self.previous.is_some()
            && self.declared.parsed_source().kind() == SourceKind::Git
        {
            // The marketplace is pinned to the same commit, so its entry is the same.
            return Ok(PickAction::Keep(locked));
        }
        let read = self
            .read
            .as_ref()
            .expect("a marketplace with picks to resolve is read");
        let derived = ctx.derive(read, self.declared, request)?;
        let plain = &derived.request;
        match before {
            Some(locked)
                if !upgrade
                    && locked.source == plain.display_source()
                    && locked.git_ref == plain.git_ref
                    && locked.repo_path == plain.repo_path =>
            {
                if plain.parsed_source().kind() == SourceKind::Local {
                    Ok(PickAction::Rehash(derived, locked))
                } else {
                    Ok(PickAction::Keep(locked))
                }
            }
            _ => Ok(PickAction::Resolve(derived, before)),
        }
    }
}

/// A plugin resolved for a `PLUGIN@MARKETPLACE` request, marked with it.
/// A plugin resolved for a `PLUGIN@MARKETPLACE` request, marked with it, with its version
/// and dependencies (its manifest's, then its catalog entry's, each in the entry's
/// marketplace unless it names another).
fn with_requested(mut resolved: Resolved, request: &PluginRequest, derived: &Derived) -> Resolved {
    resolved.plugin.requested = Some(request.display_source());
    declare(&mut resolved, derived);
    resolved
}

/// Fills in what a marketplace plugin declares (see [`with_requested`]).
pub(crate) fn declare(resolved: &mut Resolved, derived: &Derived) {
    let market = Some(derived.marketplace.as_str());
    // An entry that alone defines its plugin names it, as Claude Code does.
    resolved.plugin.definition = derived.definition.clone();
    if derived.definition.as_ref().is_some_and(|d| !d.strict) {
        resolved.plugin.name = derived.entry_name.clone();
    }
    resolved.plugin.plugin_version = resolved
        .declared
        .version
        .clone()
        .or_else(|| derived.version.clone());
    let mut dependencies: Vec<DependencySpec> = Vec::new();
    for spec in resolved
        .declared
        .dependencies
        .iter()
        .chain(&derived.dependencies)
    {
        let spec = spec.in_marketplace(market);
        if !dependencies.contains(&spec) {
            dependencies.push(spec);
        }
    }
    resolved.plugin.dependencies = dependencies;
}

/// Pins the manifest's marketplaces: a git marketplace whose declaration is unchanged keeps
/// its commit (read there only when a new plugin is asked of it), one that is new, changed
/// or upgraded is read at its `ref` now; a local one is read every time, as local plugins
/// are re-hashed.
fn lock_marketplaces<'a>(
    ctx: &Ctx<'_>,
    manifest: &'a Manifest,
    previous: Option<&'a Lock>,
    options: &LockOptions,
    matched: &[Option<&LockedPlugin>],
    upgrading: &dyn Fn(&str) -> bool,
) -> Result<Vec<MarketState<'a>>, Vec<EntryError>> {
    let mut states = Vec::new();
    let mut errors = Vec::new();
    for declared in &manifest.marketplaces {
        let picks: Vec<usize> = manifest
            .plugins
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                matches!(r.parsed_source(), Source::Marketplace { marketplace, .. } if *marketplace == declared.name)
            })
            .map(|(i, _)| i)
            .collect();
        let previous = previous
            .and_then(|l| l.marketplaces.iter().find(|m| m.name == declared.name))
            .filter(|m| m.differences(declared).is_empty());
        let local = declared.parsed_source().kind() == SourceKind::Local;
        let fresh = previous.is_none()
            || local
            || upgrading(&declared.name)
            || picks
                .iter()
                .any(|&i| matched[i].is_some_and(|l| upgrading(&l.name)));
        let needed = fresh || picks.iter().any(|&i| matched[i].is_none());
        let read = if needed {
            ctx.reporter.status(
                "Reading",
                &format!(
                    "marketplace `{}` ({})",
                    declared.name,
                    declared.display_source()
                ),
            );
            match ctx.read_marketplace(declared, if fresh { None } else { previous }) {
                Ok(read) => Some(read),
                Err(error) => {
                    errors.push(EntryError {
                        label: format!(
                            "{}:{}: marketplace `{}`",
                            options.manifest_label, declared.line, declared.name
                        ),
                        error: Box::new(error),
                    });
                    continue;
                }
            }
        } else {
            None
        };
        let locked = match (&read, previous) {
            (Some(read), _) => read.locked.clone(),
            (None, Some(previous)) => previous.clone(),
            (None, None) => unreachable!("a marketplace without a previous pin is read"),
        };
        states.push(MarketState {
            declared,
            previous: if local { None } else { previous },
            read,
            locked,
        });
    }
    if errors.is_empty() {
        Ok(states)
    } else {
        Err(errors)
    }
}
