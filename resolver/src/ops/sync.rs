//! `sync`: make every locked plugin present in the store, verified.

use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::{Lock, LockedPlugin, Manifest, Pin, PluginRequest};
use berth_store::{Store, StoreEntry, StoreError};

use crate::context::*;
use crate::context::{Reporter, Settings};
use crate::error::{EntryError, ResolveError};
use crate::sources::local::{LOCAL_EXCLUDE, existing_dir, local_dir, name_and_hash};

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
    // The common case, a store that already has everything, unchanged (an `lstat` of each
    // path its stat record lists): no fetch workers, no clean-up. A changed entry is left
    // to `sync_one`, which replaces it.
    let rehash_local =
        |p: &LockedPlugin| local == LocalCheck::Rehash && matches!(p.pin, Pin::Local(_));
    let present: Option<Vec<StoreEntry>> = if lock.plugins.iter().any(rehash_local) {
        None
    } else {
        let wanted: Vec<_> = lock
            .plugins
            .iter()
            .map(|p| (&p.hash, p.name.as_str()))
            .collect();
        store
            .checked_lookup_all(&wanted)
            .into_iter()
            .map(|found| found.ok().flatten())
            .collect()
    };
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
    if let Some(entries) = present
        && agent_present
        && payloads_present
    {
        // Staging a killed process left (a `gc` or `sync` stopped mid-way) goes even when
        // there is nothing to add: one `readdir` of an empty `tmp/` in the common case.
        if let Err(e) = store.clean_tmp() {
            reporter.warn(&format!("could not clean the store's `tmp/`: {e}"));
        }
        return Ok(SyncOutcome { entries, added: 0 });
    }
    let ctx = Ctx::new(store, settings, reporter);
    // Staging folders of syncs that were killed would otherwise pile up in `tmp/`.
    if let Err(e) = store.clean_tmp() {
        reporter.warn(&format!("could not clean the store's `tmp/`: {e}"));
    }
    let added = AtomicUsize::new(0);
    let results = run_parallel(&lock.plugins, settings.jobs, |i, locked| {
        let request = manifest
            .and_then(|m| m.plugins.get(i))
            .filter(|r| locked.satisfies(r));
        ctx.sync_one(locked, request, local, &added)
            .map_err(|error| EntryError {
                label: format!("plugin `{}`", locked.name),
                error: Box::new(ctx.explain_sync_error(lock, locked, error)),
            })
    });
    let (entries, mut errors) = split(results);
    if let Some(agent) = &lock.agent {
        let request = manifest
            .and_then(|m| m.agent.as_ref())
            .filter(|r| agent.satisfies(r));
        if let Err(error) = ctx.sync_agent(agent, request, &added) {
            errors.push(EntryError {
                label: format!("agent `{}`", agent.package),
                error: Box::new(error),
            });
        }
    }
    for payload in &lock.payloads {
        match ctx.sync_payload(payload) {
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
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(SyncOutcome {
        entries,
        added: added.into_inner(),
    })
}

impl Ctx<'_> {
    pub(crate) fn sync_one(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
        local: LocalCheck,
        added: &AtomicUsize,
    ) -> Result<StoreEntry, ResolveError> {
        if let (Pin::Local(berth_lockfile_schema::LocalPin { path }), LocalCheck::Rehash) = (&locked.pin, local) {
            let dir = existing_dir(&local_dir(path, self.settings))?;
            let (_, actual) = name_and_hash(&dir)?;
            if actual != locked.hash {
                return Err(ResolveError::LocalChanged {
                    name: locked.name.clone(),
                    path: path.clone(),
                    expected: locked.hash,
                    actual,
                });
            }
        }
        if let Ok(Some(entry)) = self.store.checked_lookup(&locked.hash, &locked.name) {
            return Ok(entry);
        }
        // One process materialises an entry; others wait and then find it present.
        let _guard = self
            .store
            .lock(&format!("entry-{}", locked.hash.to_nix32()), || {
                self.reporter.status(
                    "Waiting",
                    &format!("for another berth adding `{}`", locked.name),
                );
            })?;
        match self.store.checked_lookup(&locked.hash, &locked.name) {
            Ok(Some(entry)) => return Ok(entry),
            Ok(None) => {}
            // Changed after it was added: moved aside (a process still reading it keeps
            // its files) and fetched again below like a missing entry, from the same pin.
            Err(StoreError::Tampered { path, found, .. }) => {
                self.reporter.warn(&format!(
                    "store entry `{}` of plugin `{}` was changed after it was added ({found}); replacing it",
                    path.display(),
                    locked.name
                ));
                self.store.discard_entry(&locked.hash, &locked.name)?;
            }
            Err(e) => return Err(e.into()),
        }
        let entry = match &locked.pin {
            Pin::Local(berth_lockfile_schema::LocalPin { path }) => {
                let dir = existing_dir(&local_dir(path, self.settings))?;
                self.store
                    .add_dir(&dir, &locked.name, Some(&locked.hash), LOCAL_EXCLUDE)?
            }
            Pin::Git(_) | Pin::Archive(_) => {
                let what = format!("plugin `{}`", locked.name);
                let staging = match self.substitute_entry(&locked.hash, &locked.name, &what)? {
                    Some(staging) => staging,
                    None => crate::sources::stage_tree(self, locked, request)?,
                };
                self.store
                    .commit(staging, &locked.name, Some(&locked.hash))?
            }
        };
        added.fetch_add(1, Ordering::Relaxed);
        self.reporter.status(
            "Added",
            &format!("{} {}", locked.name, entry.path.display()),
        );
        self.reporter.event(Event::PluginAdded);
        Ok(entry)
    }
}
