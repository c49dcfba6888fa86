//! `lock`: resolve new or changed entries, keep the pins of the rest.

use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::{Lock, LockedPlugin, Manifest, SourceKind};
use berth_store::Store;

use super::*;
use crate::error::{EntryError, ResolveError};
use crate::{Reporter, Settings};

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
                !previous.is_some_and(|l| {
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
    let mut used = vec![false; previous.map_or(0, |l| l.plugins.len())];
    let kept: Vec<Option<LockedPlugin>> = manifest
        .plugins
        .iter()
        .enumerate()
        .map(|(i, request)| {
            let previous = previous?;
            // Prefer the entry at the same position; an entry that moved keeps its pin too.
            let index = std::iter::once(i)
                .chain(0..previous.plugins.len())
                .find(|&j| {
                    j < previous.plugins.len() && !used[j] && previous.plugins[j].satisfies(request)
                })?;
            let locked = &previous.plugins[index];
            let upgrade = match &options.upgrade {
                Upgrade::Nothing => false,
                Upgrade::All => true,
                Upgrade::Plugins(names) => names.contains(&locked.name),
            };
            if upgrade {
                return None;
            }
            used[index] = true;
            Some(locked.clone())
        })
        .collect();
    let resolved = AtomicUsize::new(0);
    let ctx = Ctx::new(store, settings, reporter);
    let results = run_parallel(&manifest.plugins, settings.jobs, |i, request| {
        let label = || entry_label(&options.manifest_label, request);
        let result = match (&kept[i], request.parsed_source().kind()) {
            (Some(locked), SourceKind::Local) if options.local == LocalRelock::Rehash => {
                crate::sources::of(SourceKind::Local).lock(&ctx, request, Some(locked))
            }
            (Some(locked), _) => Ok(Resolved {
                plugin: locked.clone(),
                skipped: Vec::new(),
            }),
            (None, _) => {
                resolved.fetch_add(1, Ordering::Relaxed);
                ctx.resolve_new(request)
            }
        }
        .map(|resolved| {
            // Only what this run resolved: a kept pin was warned about when it was locked.
            for skipped in &resolved.skipped {
                ctx.reporter.warn(&skipped.message(&resolved.plugin.name));
            }
            resolved.plugin
        });
        result.map_err(|error| EntryError {
            label: label(),
            error: Box::new(error),
        })
    });
    let (plugins, mut errors) = split(results);
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
        lock: Lock { plugins, agent },
        resolved: resolved.into_inner(),
    })
}
