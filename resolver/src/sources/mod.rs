//! The source kinds, each a folder with its mechanics and its source values. A request's
//! source is loaded with [`load`] (as Cargo's `SourceId::load`): a value that owns what it
//! needs (a remote, a URL, a folder) and pins the request ([`PluginSource`]). A locked
//! entry's source is loaded from its pin ([`PinKind::load`]): a value that puts the pinned
//! tree into staging, adds it to the store or fetches it afresh ([`PinnedSource`]).
//!
//! `lock`, `sync`, `verify` and `live` (in `ops/`) loop over entries and reach a kind only
//! through these traits. The two matches on a kind are here, in [`load`] and [`kind_of`]:
//! a new kind's variant of `Source` or `Pin` is a compile error until both have its arm.
//! Each kind's module is private to this one, so what the operations can use of a kind is
//! what is declared here (git's `GitDb` stays inside `git/`).

mod archive;
mod entry;
mod git;
mod local;
pub(crate) mod marketplace;
mod npm;
mod objects;
mod resolved;
mod substitute;

pub use marketplace::read_marketplace;
pub use objects::{GitObjects, ObjectsFrom, TagObject};

pub(crate) use archive::{ArchiveUrl, download, unpack};
pub(crate) use entry::{confirm_pin, pin_seen, record_pin, record_resolved, sync_entry};
pub(crate) use npm::{
    described as npm_version_described, document_url as npm_document_url, pick as npm_pick,
    registry_document as npm_registry_document,
};
pub(crate) use resolved::{Declared, HeldBack, Resolved, check_pins};
pub(crate) use substitute::{substitute, substitute_or_stage};

use std::sync::Arc;

use berth_lockfile_schema::{LockedPlugin, Pin, PluginRequest, Sha256Hash, Source};
use berth_store::{Live, Staging, StoreEntry};

use crate::context::Env;
use crate::error::ResolveError;

/// A request's source, loaded: pins a request of it.
pub(crate) trait PluginSource {
    /// Resolves `request` to an exact pin and hashes it. `previous` is the entry's lock
    /// from before when the caller re-checks a kept pin (a local folder's content).
    fn lock(
        &self,
        request: &PluginRequest,
        previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError>;

    /// The names of the source's tags (a dependency's `NAME--vVERSION` tags), listed once
    /// per run; `None` for a kind without tags.
    fn tags(&self) -> Result<Option<Vec<String>>, ResolveError> {
        Ok(None)
    }
}

/// A locked entry's source, loaded from its pin.
pub(crate) trait PinnedSource {
    /// Puts the locked tree into a new staging folder (not yet checked against the lock:
    /// the store's commit does that).
    fn stage(&self) -> Result<Staging, ResolveError>;

    /// Adds the locked entry to the store, verified against the lock (`sync`, after the
    /// entry was found missing under its lock).
    fn add_to_store(&self) -> Result<StoreEntry, ResolveError>;

    /// Checks that content which can change behind its pin (a local folder) still hashes
    /// to the lock; nothing to do for the others.
    fn recheck(&self) -> Result<(), ResolveError> {
        Ok(())
    }

    /// Fetches the entry afresh, trusting neither the store nor any cache, and hashes it
    /// (`verify`). A failure may be shared by the entries of one fetch.
    fn fresh_hash(&self) -> Result<Sha256Hash, Arc<ResolveError>>;

    /// Hashes what the pin names, from its source only (a git commit from its
    /// repository's cache, fetched when missing; an archive downloaded again; a folder):
    /// never from the store, a binary cache or a tree kept by its hash. A lock's pin that
    /// this store never saw produce its entry is checked with it.
    fn pin_hash(&self) -> Result<Sha256Hash, ResolveError>;

    /// The git objects the locked commit can carry a signature in ([`GitObjects`]), read
    /// `from` the cache or afresh; `None` for a kind whose pin is not a git commit.
    fn git_objects(&self, _from: ObjectsFrom) -> Result<Option<GitObjects>, ResolveError> {
        Ok(None)
    }
}

/// What a kind does with its own pin: implemented in each kind's folder by the schema's
/// `GitPin`, `ArchivePin` and `LocalPin`.
pub(crate) trait PinKind {
    /// The source `locked` (whose pin this is) is fetched from: the manifest's `request`
    /// when given (it may carry credentials the lock leaves out), else the lock's own
    /// source. Loading does nothing that can fail: what the source needs (a remote's
    /// credentials, say) is worked out when it is used, so an entry a substituter has
    /// never needs them.
    fn load<'a>(
        &'a self,
        env: &'a Env<'a>,
        locked: &'a LockedPlugin,
        request: Option<&'a PluginRequest>,
    ) -> Box<dyn PinnedSource + 'a>;

    /// Adds what `gc` must keep for this pin besides the store entry (a git cache, a
    /// downloaded archive).
    fn mark_live(&self, live: &mut Live);

    /// Whether the content behind the pin can change while the pin stays the same (a
    /// local folder): `lock` and `sync` then hash it again.
    fn changes_in_place(&self) -> bool {
        false
    }

    /// Whether the pin is a commit someone may have signed ([`PinnedSource::git_objects`]
    /// gives its objects): `lock` records who did.
    fn may_be_signed(&self) -> bool {
        false
    }
}

/// Loads the source of a request.
pub(crate) fn load<'a>(
    env: &'a Env<'a>,
    source: &Source,
) -> Result<Box<dyn PluginSource + 'a>, ResolveError> {
    Ok(match source {
        Source::GitHub { .. } | Source::Git { .. } => Box::new(git::GitSource::load(env, source)?),
        Source::Archive { url, format } => {
            Box::new(archive::ArchiveSource::load(env, url, *format)?)
        }
        Source::Local { path } => Box::new(local::LocalSource::load(env, path)),
        Source::Marketplace { .. } => {
            unreachable!("a marketplace pick is locked as the source its catalog gives")
        }
    })
}

/// What a pin's kind does with it.
pub(crate) fn kind_of(pin: &Pin) -> &dyn PinKind {
    match pin {
        Pin::Git(pin) => pin,
        Pin::Archive(pin) => pin,
        Pin::Local(pin) => pin,
    }
}

/// Refuses a request of the manifest (not a marketplace's entry, nor the agent's source)
/// whose source cannot be a plugin: a local folder that holds none.
pub(crate) fn check_requested(env: &Env<'_>, request: &PluginRequest) -> Result<(), ResolveError> {
    match request.parsed_source() {
        Source::Local { path } => local::check_requested_folder(path, env.settings),
        _ => Ok(()),
    }
}

/// Pins a request afresh, keeping what its manifest declares.
pub(crate) fn resolve_new(
    env: &Env<'_>,
    request: &PluginRequest,
) -> Result<Resolved, ResolveError> {
    load(env, request.parsed_source())?.lock(request, None)
}

/// Pins a request afresh (the agent's source tree).
pub(crate) fn lock_new(
    env: &Env<'_>,
    request: &PluginRequest,
) -> Result<LockedPlugin, ResolveError> {
    resolve_new(env, request).map(|r| r.plugin)
}

/// Puts a locked entry's tree into a new staging folder (not yet checked against the
/// lock: [`berth_store::Store::commit`] does that).
pub(crate) fn stage_tree(
    env: &Env<'_>,
    locked: &LockedPlugin,
    request: Option<&PluginRequest>,
) -> Result<Staging, ResolveError> {
    kind_of(&locked.pin).load(env, locked, request).stage()
}

/// The source to fetch a locked entry from: the manifest's (which may carry credentials
/// the lock leaves out) when it still matches, else the lock's.
fn source_of(
    locked: &LockedPlugin,
    request: Option<&PluginRequest>,
) -> Result<Source, ResolveError> {
    match request.filter(|r| r.parsed_source().marketplace().is_none()) {
        Some(r) => Ok(r.parsed_source().clone()),
        None => Source::parse(&locked.source).map_err(|source| ResolveError::LockedSource {
            name: locked.name.clone(),
            source,
        }),
    }
}
