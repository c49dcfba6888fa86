//! `sync`: make every locked plugin present in the store, verified.

use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::{Lock, LockedPlugin, Manifest};
use berth_store::{Store, StoreEntry};

use crate::context::{Env, LocalCheck, Reporter, Settings, run_parallel, split};
use crate::error::EntryError;
use crate::sources::marketplace::explain_sync_error;
use crate::sources::{confirm_pin, kind_of, pin_seen, sync_entry};

/// What `sync` did.
#[derive(Debug, Clone)]
pub struct SyncOutcome {
    /// The store entry of every locked plugin, in lock order.
    pub entries: Vec<StoreEntry>,
    /// How many entries were added to the store by this run.
    pub added: usize,
}

/// Makes every locked plugin present in the store, verified against the lock. `manifest`
/// (when the caller read one) supplies sources with credentials the lock leaves out.
pub fn sync_plugins(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
    manifest: Option<&Manifest>,
    local: LocalCheck,
) -> Result<SyncOutcome, Vec<EntryError>> {
    let env = Env::new(store, settings, reporter);
    // Every npm package's registry signature, checked against the lock's keys before
    // anything is fetched or used (a verdict in the store spares a no-op sync the work).
    let refused = crate::payload::refused_signatures(&env, lock);
    if !refused.is_empty() {
        return Err(refused);
    }
    if let Some(entries) = all_present(&env, lock, local) {
        // Staging a killed process left (a `gc` or `sync` stopped mid-way) goes even when
        // there is nothing to add: one `readdir` of an empty `tmp/` in the common case.
        if let Err(e) = store.clean_tmp() {
            reporter.warn(&format!("could not clean the store's `tmp/`: {e}"));
        }
        return Ok(SyncOutcome { entries, added: 0 });
    }
    // Staging folders of syncs that were killed would otherwise pile up in `tmp/`.
    if let Err(e) = store.clean_tmp() {
        reporter.warn(&format!("could not clean the store's `tmp/`: {e}"));
    }
    let added = AtomicUsize::new(0);
    let results = run_parallel(&lock.plugins, settings.jobs, |i, locked| {
        let request = manifest
            .and_then(|m| m.plugins.get(i))
            .filter(|r| locked.satisfies(r));
        // An entry or a pin to fetch passes the policy's `[sources]` first (one present
        // is reviewed by the front end, by the same rule); a pin this store never saw
        // produce its entry is fetched and hashed before anything trusts it.
        let confirm = settings.pins.checked() && !pin_seen(&env, locked);
        let fetch = || {
            if confirm || store.lookup(&locked.hash, &locked.name).is_none() {
                settings.sources.check_locked(lock, locked)?;
            }
            if confirm {
                confirm_pin(&env, locked, request)?;
            }
            Ok(())
        };
        fetch()
            .and_then(|()| sync_entry(&env, locked, request, local, &added))
            .map_err(|error| EntryError {
                label: format!("plugin `{}`", locked.name),
                error: Box::new(explain_sync_error(&env, lock, locked, error)),
            })
    });
    let (entries, mut errors) = split(results);
    sync_agent_and_payloads(&env, lock, manifest, &added, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(SyncOutcome {
        entries,
        added: added.into_inner(),
    })
}

/// The store entry of every plugin, payload and agent wheel of `lock` when all are
/// present and unchanged (an `lstat` of each path an entry's stat record lists); `None`
/// when one is missing or changed (`sync_entry` then replaces it), when a folder that
/// can change in place is to be hashed again, or when a pin is to be checked.
fn all_present(env: &Env<'_>, lock: &Lock, local: LocalCheck) -> Option<Vec<StoreEntry>> {
    let store = env.store;
    let rehash =
        |p: &LockedPlugin| local == LocalCheck::Rehash && kind_of(&p.pin).changes_in_place();
    let unseen = |p: &LockedPlugin| env.settings.pins.checked() && !pin_seen(env, p);
    if lock.plugins.iter().any(|p| rehash(p) || unseen(p)) {
        return None;
    }
    let wanted: Vec<_> = lock
        .plugins
        .iter()
        .map(|p| (&p.hash, p.name.as_str()))
        .collect();
    let entries: Option<Vec<StoreEntry>> = store
        .checked_lookup_all(&wanted)
        .into_iter()
        .map(|found| found.ok().flatten())
        .collect();
    let agent_present = lock.agent.as_ref().is_none_or(|a| store.has_agent(a));
    let payload_names: Vec<String> = lock.payloads.iter().map(|p| p.entry_name()).collect();
    let payloads_wanted: Vec<_> = lock
        .payloads
        .iter()
        .zip(&payload_names)
        .map(|(p, name)| (&p.hash, name.as_str()))
        .collect();
    let payloads_present = payloads_wanted.is_empty()
        || store
            .checked_lookup_all(&payloads_wanted)
            .into_iter()
            .all(|found| matches!(found, Ok(Some(_))));
    entries.filter(|_| agent_present && payloads_present)
}

/// Makes the agent and the payloads present, adding their failures to `errors`.
fn sync_agent_and_payloads(
    env: &Env<'_>,
    lock: &Lock,
    manifest: Option<&Manifest>,
    added: &AtomicUsize,
    errors: &mut Vec<EntryError>,
) {
    if let Some(agent) = &lock.agent {
        let request = manifest
            .and_then(|m| m.agent.as_ref())
            .filter(|r| agent.satisfies(r));
        if let Err(error) = crate::agent::sync_agent(env, agent, request, added) {
            errors.push(EntryError {
                label: format!("agent `{}`", agent.package),
                error: Box::new(error),
            });
        }
    }
    for payload in &lock.payloads {
        match crate::payload::sync_payload(env, payload) {
            Ok((_, true)) => {
                added.fetch_add(1, Ordering::Relaxed);
            }
            Ok((_, false)) => {}
            Err(error) => errors.push(EntryError {
                label: format!(
                    "package `{}` {} ({} of plugin `{}`)",
                    payload.package,
                    payload.version,
                    payload.used_by.describe(&payload.server),
                    payload.plugin
                ),
                error: Box::new(error),
            }),
        }
    }
}
