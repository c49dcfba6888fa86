//! Pinning the payloads of a lock's runner-started MCP servers (`npx`, `uvx`): the step
//! after `lock_plugins` that `berth plugins lock` and the lock-then-sync workflow share.

use berth_lockfile_schema::{Lock, Manifest};
use berth_store::Store;

use super::{Upgrade, sync_plugins};
use crate::context::{LocalCheck, Reporter, Settings};
use crate::error::EntryError;
use crate::payload::lock_payloads;

/// Fills `lock.payloads`. When the plugins are those of `previous` (same names and
/// hashes) and nothing is upgraded, `previous`'s payloads stay as they are, with no
/// store or network needed (so `lock --check` of a current lock is offline); otherwise
/// the plugins are made present in the store, their servers read, and every runner line
/// pinned (keeping a previous pin while its line is unchanged, unless `upgrade` covers
/// its plugin). Returns how many plugins it added to the store; their `Added` lines are
/// [`Reporter::detail`]s, as the caller's lock lines say what changed.
pub fn pin_payloads(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    manifest: Option<&Manifest>,
    lock: &mut Lock,
    previous: Option<&Lock>,
    upgrade: &Upgrade,
) -> Result<usize, Vec<EntryError>> {
    if settings.payload_finder.is_none() {
        return Ok(0);
    }
    // Under another release-age cutoff than before, every payload is resolved again.
    let upgrade = match previous {
        Some(p) if p.exclude_newer != lock.exclude_newer => &Upgrade::All,
        _ => upgrade,
    };
    let same_plugins = previous.is_some_and(|p| {
        p.plugins.len() == lock.plugins.len()
            && p.plugins
                .iter()
                .zip(&lock.plugins)
                .all(|(a, b)| a.name == b.name && a.hash == b.hash)
    });
    if let (true, Upgrade::Nothing, Some(previous)) = (same_plugins, upgrade, previous) {
        // The keys `lock_plugins` kept are those of `previous`, and the plugins'.
        lock.payloads = previous.payloads.clone();
        return Ok(0);
    }
    // The plugins only: a payload that is no longer wanted need not be fetched.
    let payloads = std::mem::take(&mut lock.payloads);
    // The keys stay: the plugins' npm sources are checked against them.
    let registry_keys = lock.registry_keys.clone();
    let synced = sync_plugins(
        store,
        settings,
        &StoredQuietly(reporter),
        lock,
        manifest,
        LocalCheck::TrustStore,
    )?;
    let kept = Lock {
        payloads,
        registry_keys,
        exclude_newer: lock.exclude_newer.clone(),
        ..Lock::default()
    };
    (lock.payloads, lock.registry_keys) = lock_payloads(
        store,
        settings,
        reporter,
        lock,
        Some(previous.unwrap_or(&kept)),
        &|plugin| upgrade.covers(plugin),
    )?;
    Ok(synced.added)
}

/// A reporter whose store `Added` lines are details: while a lock is made they would come
/// before its own lines and read as a second change.
pub struct StoredQuietly<'a>(pub &'a dyn Reporter);

impl std::fmt::Debug for StoredQuietly<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoredQuietly")
    }
}

impl Reporter for StoredQuietly<'_> {
    fn status(&self, verb: &str, message: &str) {
        if verb == "Added" {
            self.0.detail(verb, message);
        } else {
            self.0.status(verb, message);
        }
    }
    fn warn(&self, message: &str) {
        self.0.warn(message);
    }
    fn detail(&self, verb: &str, message: &str) {
        self.0.detail(verb, message);
    }
    fn event(&self, event: crate::context::Event) {
        self.0.event(event);
    }
    fn task(
        &self,
        verb: &str,
        message: &str,
        total: Option<u64>,
    ) -> Box<dyn crate::context::Task + '_> {
        self.0.task(verb, message, total)
    }
    fn progress(&self, verb: &str, message: &str) -> Box<dyn crate::context::Task + '_> {
        self.0.progress(verb, message)
    }
}
