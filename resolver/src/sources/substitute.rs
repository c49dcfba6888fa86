//! Store entries from binary caches, asked before any source.

use berth_lockfile_schema::Sha256Hash;
use berth_store::{Staging, UnpackLimits};

use crate::context::{Env, Event, Network};
use crate::error::ResolveError;

/// The store entry `name` with NAR hash `hash` from the first substituter that has it,
/// unpacked and checked in a staging folder; `None` when none has it. A cache that holds
/// something else under its name, or fails, is reported (naming `what`) and the next one
/// tried.
pub(crate) fn substitute(
    env: &Env<'_>,
    hash: &Sha256Hash,
    name: &str,
    what: &str,
) -> Result<Option<Staging>, ResolveError> {
    let limits = UnpackLimits {
        max_total_bytes: env.settings.archive_limits.max_bytes,
        max_entries: env.settings.archive_limits.max_entries,
        ..UnpackLimits::default()
    };
    let skipped = |e: &berth_transport::cache::CacheError| {
        env.reporter.warn(&format!(
            "{what}: {e}; trying the next substituter, then upstream"
        ));
    };
    let found = berth_transport::cache::substitute_staged(
        env.store,
        &env.settings.substituters,
        hash,
        name,
        &limits,
        env.settings.network == Network::Offline,
        &skipped,
    )?;
    Ok(found.map(|(staging, label)| {
        env.reporter
            .status("Substituted", &format!("{name} from {label}"));
        env.reporter.event(Event::Substituted);
        staging
    }))
}

/// Adds a locked plugin to the store from the first substituter that has it, else from
/// what `stage` puts into staging, verified against its hash.
pub(crate) fn substitute_or_stage(
    env: &Env<'_>,
    locked: &berth_lockfile_schema::LockedPlugin,
    stage: impl FnOnce() -> Result<Staging, ResolveError>,
) -> Result<berth_store::StoreEntry, ResolveError> {
    let what = format!("plugin `{}`", locked.name);
    let (staging, from_source) = match substitute(env, &locked.hash, &locked.name, &what)? {
        Some(staging) => (staging, false),
        None => (stage()?, true),
    };
    let entry = env
        .store
        .commit(staging, &locked.name, Some(&locked.hash))?;
    // A cache vouches for content only; the pin's own source gave this.
    if from_source {
        super::record_pin(env, locked);
    }
    Ok(entry)
}
