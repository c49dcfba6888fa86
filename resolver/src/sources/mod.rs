//! The source kinds, each in its own module: how a request of that kind is pinned and how
//! a pin is put into staging. `lock`, `sync` and `verify` (in `ops/`) loop over entries
//! and reach a kind only through these.

pub(crate) mod archive;
pub(crate) mod git;
pub(crate) mod local;
pub(crate) mod marketplace;
pub(crate) mod npm;

pub use marketplace::read_marketplace;

use berth_lockfile_schema::{LockedPlugin, PluginRequest, Sha256Hash, SourceKind};
use berth_store::Staging;

use crate::context::{Ctx, Resolved};
use crate::error::ResolveError;

/// One kind of source, as Cargo's `Source`: pin a request, put a pin into staging.
pub(crate) trait PluginSource: Sync {
    /// Resolves `request` to an exact pin and hashes it. `previous` is the entry's lock
    /// from before, when the caller re-checks one (a local folder, say).
    fn lock(
        &self,
        ctx: &Ctx<'_>,
        request: &PluginRequest,
        previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError>;

    /// Exports the locked tree into a new staging folder (not yet checked against the
    /// lock: the store's commit does that).
    fn stage(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Staging, ResolveError>;

    /// Fetches the locked entry afresh, trusting neither the store nor any cache, and
    /// hashes it (`verify`; its git entries are batched per remote before this).
    fn fresh_hash(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Sha256Hash, ResolveError>;
}

/// The source of a kind.
pub(crate) fn of(kind: SourceKind) -> &'static dyn PluginSource {
    match kind {
        SourceKind::Git => &git::Git,
        SourceKind::Archive => &archive::Archive,
        SourceKind::Local => &local::Local,
        SourceKind::Marketplace => {
            unreachable!("a marketplace pick is locked as the source its catalog gives")
        }
    }
}

/// Pins a request afresh (for the agent's source tree too).
pub(crate) fn lock_new(
    ctx: &Ctx<'_>,
    request: &PluginRequest,
) -> Result<LockedPlugin, ResolveError> {
    resolve_new(ctx, request).map(|r| r.plugin)
}

/// Resolves a request afresh, keeping what its manifest declares.
pub(crate) fn resolve_new(
    ctx: &Ctx<'_>,
    request: &PluginRequest,
) -> Result<Resolved, ResolveError> {
    of(request.parsed_source().kind()).lock(ctx, request, None)
}

/// Exports a locked git or archive entry's tree into a new staging folder (not yet
/// checked against the lock: [`berth_store::Store::commit`] does that).
pub(crate) fn stage_tree(
    ctx: &Ctx<'_>,
    locked: &LockedPlugin,
    request: Option<&PluginRequest>,
) -> Result<Staging, ResolveError> {
    of(locked.pin.kind()).stage(ctx, locked, request)
}

/// The error for a locked entry handed to the source of another kind (a caller's bug: the
/// kind is chosen from the pin itself).
pub(crate) fn other_kind(locked: &LockedPlugin) -> ResolveError {
    ResolveError::WrongKind {
        name: locked.name.clone(),
        kind: locked.pin.kind(),
    }
}
