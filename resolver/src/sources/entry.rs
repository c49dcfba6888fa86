//! One locked entry made present in the store, verified: `sync` does this for every
//! plugin of a lock, the agent for its source tree.

use std::sync::atomic::{AtomicUsize, Ordering};

use berth_lockfile_schema::{Lock, LockedPlugin, Pin, PluginRequest};
use berth_store::{StoreEntry, StoreError};

use super::kind_of;
use crate::context::{Env, Event, LocalCheck, LockedPins, Network};
use crate::error::{PinMismatch, ResolveError};

/// Makes one locked plugin present in the store, verified: found, or added by its source
/// (from a substituter or upstream) under the entry's lock.
pub(crate) fn sync_entry(
    env: &Env<'_>,
    locked: &LockedPlugin,
    request: Option<&PluginRequest>,
    local: LocalCheck,
    added: &AtomicUsize,
) -> Result<StoreEntry, ResolveError> {
    let kind = kind_of(&locked.pin);
    if local == LocalCheck::Rehash && kind.changes_in_place() {
        kind.load(env, locked, request).recheck()?;
    }
    let store = env.store;
    // A tree this process's lock kept for the entry is not needed once the entry is there.
    let forget_kept = || drop(env.memo.take_tree(&locked.hash));
    if let Ok(Some(entry)) = store.checked_lookup(&locked.hash, &locked.name) {
        forget_kept();
        env.reporter.detail(
            "Present",
            &format!("{} {}", locked.name, entry.path.display()),
        );
        return Ok(entry);
    }
    // One process materialises an entry; others wait and then find it present.
    let _guard = store.lock(&format!("entry-{}", locked.hash.to_nix32()), || {
        env.reporter.status(
            "Waiting",
            &format!("for another berth adding `{}`", locked.name),
        );
    })?;
    match store.checked_lookup(&locked.hash, &locked.name) {
        Ok(Some(entry)) => {
            forget_kept();
            return Ok(entry);
        }
        Ok(None) => {}
        // Changed after it was added: moved aside (a process still reading it keeps
        // its files) and fetched again below like a missing entry, from the same pin.
        Err(StoreError::Tampered { path, found, .. }) => {
            env.reporter.warn(&format!(
                "store entry `{}` of plugin `{}` was changed after it was added ({found}); replacing it",
                path.display(),
                locked.name
            ));
            store.discard_entry(&locked.hash, &locked.name)?;
        }
        Err(e) => return Err(e.into()),
    }
    let entry = kind.load(env, locked, request).add_to_store()?;
    forget_kept();
    added.fetch_add(1, Ordering::Relaxed);
    env.reporter.status(
        "Added",
        &format!("{} {}", locked.name, entry.path.display()),
    );
    env.reporter.event(Event::PluginAdded);
    Ok(entry)
}

/// Whether this store saw `locked`'s pin produce its entry (a pin record).
pub(crate) fn pin_seen(env: &Env<'_>, locked: &LockedPlugin) -> bool {
    env.store
        .has_pin(&locked.hash, &locked.name, &locked.provenance())
}

/// Checks that `locked`'s pin gives its hash, fetching and hashing it from its source
/// (never from the store or a binary cache), unless this store saw it do so; records it
/// when it does. The caller matched its source against the policy first.
pub(crate) fn confirm_pin(
    env: &Env<'_>,
    locked: &LockedPlugin,
    request: Option<&PluginRequest>,
) -> Result<(), ResolveError> {
    if pin_seen(env, locked) {
        return Ok(());
    }
    if env.settings.pins == LockedPins::Recorded
        && let Some(cache) = cache_recording(env, locked)
    {
        env.reporter.detail(
            "Checked",
            &format!(
                "{} at {} (recorded by {cache})",
                locked.name,
                locked.pin_label()
            ),
        );
        record_pin(env, locked);
        return Ok(());
    }
    let actual = kind_of(&locked.pin).load(env, locked, request).pin_hash()?;
    if actual != locked.hash {
        let pin = match &locked.pin {
            Pin::Git(git) => format!("{} at {}", locked.source, git.rev),
            _ => locked.source.clone(),
        };
        return Err(PinMismatch::Content {
            pin,
            expected: locked.hash,
            actual,
        }
        .into());
    }
    env.reporter.detail(
        "Checked",
        &format!("{} at {}", locked.name, locked.pin_label()),
    );
    record_pin(env, locked);
    Ok(())
}

/// The first substituter that records `locked`'s pin producing its entry (its pusher saw
/// it), by its label; one that cannot be asked is passed over with a warning.
fn cache_recording(env: &Env<'_>, locked: &LockedPlugin) -> Option<String> {
    let offline = env.settings.network == Network::Offline;
    let provenance = locked.provenance();
    env.settings
        .substituters
        .iter()
        .filter(|cache| !offline || cache.is_local())
        .find(
            |cache| match cache.has_pin(&locked.hash, &locked.name, &provenance) {
                Ok(recorded) => recorded,
                Err(e) => {
                    env.reporter.warn(&format!(
                        "plugin `{}`: {e}; its pin is checked against its source",
                        locked.name
                    ));
                    false
                }
            },
        )
        .map(|cache| cache.label().to_owned())
}

/// Records that `locked`'s pin produced its entry (its content came from the pin's source
/// in this process). Best effort: without a record the pin is checked again next time.
pub(crate) fn record_pin(env: &Env<'_>, locked: &LockedPlugin) {
    if let Err(e) = env
        .store
        .record_pin(&locked.hash, &locked.name, &locked.provenance())
    {
        tracing::debug!("could not record the pin of `{}`: {e}", locked.name);
    }
}

/// Records the pins of `plugins` that a lock run resolved from their sources: those that
/// are not as `previous` had them (a kept pin is the earlier lock's word).
pub(crate) fn record_resolved(env: &Env<'_>, plugins: &[LockedPlugin], previous: Option<&Lock>) {
    let kept = |p: &LockedPlugin| {
        previous.is_some_and(|lock| {
            lock.plugins
                .iter()
                .any(|q| q.hash == p.hash && q.name == p.name && q.provenance() == p.provenance())
        })
    };
    for plugin in plugins.iter().filter(|p| !kept(p)) {
        record_pin(env, plugin);
    }
}
