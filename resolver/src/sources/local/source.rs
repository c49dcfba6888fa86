//! Local folders: re-hashed by every lock, copied into staging by sync.

use berth_lockfile_schema::{LockedPlugin, Pin, PluginRequest, Source};

use berth_store::Staging;

use crate::context::*;
use crate::error::ResolveError;
use crate::sources::PluginSource;
use crate::sources::local::{
    LOCAL_EXCLUDE, LOCAL_EXCLUDED, MAX_METADATA_BYTES, existing_dir, local_dir, name_and_hash,
};

impl Ctx<'_> {
    /// Hashes a local folder; the files the runtime will skip are looked for only when it is
    /// new or changed.
    pub(crate) fn lock_local(
        &self,
        request: &PluginRequest,
        previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        let Source::Local { path } = request.parsed_source() else {
            unreachable!("only called for local sources");
        };
        let dir = existing_dir(&local_dir(path, self.settings))?;
        let (name, hash) = name_and_hash(&dir)?;
        let declared = Declared::read(|rel| {
            crate::sources::local::read_regular_file(&dir, rel, MAX_METADATA_BYTES)
                .ok()
                .flatten()
        });
        check_pins(request, &name, &hash)?;
        if previous.is_some_and(|p| p.hash != hash) {
            self.reporter.status(
                "Updating",
                &format!("`{name}` ({path}): its content changed"),
            );
        }
        let skipped = if previous.is_some_and(|p| p.hash == hash) {
            Vec::new()
        } else {
            crate::skipped::scan_dir(&dir, LOCAL_EXCLUDED)?
        };
        Ok(Resolved {
            plugin: LockedPlugin {
                name,
                requested: None,
                plugin_version: None,
                dependencies: Vec::new(),
                needed_by: Vec::new(),
                definition: None,
                source: request.display_source(),
                git_ref: None,
                version: None,
                resolved_ref: None,
                repo_path: None,
                pin: Pin::Local(berth_lockfile_schema::LocalPin { path: path.clone() }),
                hash,
            },
            skipped,
            declared,
        })
    }
}

/// Local folders.
pub(crate) struct Local;

impl PluginSource for Local {
    fn lock(
        &self,
        ctx: &Ctx<'_>,
        request: &PluginRequest,
        previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        ctx.lock_local(request, previous)
    }

    fn stage(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        _request: Option<&PluginRequest>,
    ) -> Result<Staging, ResolveError> {
        let Pin::Local(berth_lockfile_schema::LocalPin { path }) = &locked.pin else {
            return Err(crate::sources::other_kind(locked));
        };
        let dir = existing_dir(&local_dir(path, ctx.settings))?;
        let staging = ctx.store.stage()?;
        berth_store::copy_tree(&dir, staging.path(), LOCAL_EXCLUDE)?;
        Ok(staging)
    }

    fn fresh_hash(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        _request: Option<&PluginRequest>,
    ) -> Result<berth_lockfile_schema::Sha256Hash, ResolveError> {
        let Pin::Local(berth_lockfile_schema::LocalPin { path }) = &locked.pin else {
            return Err(crate::sources::other_kind(locked));
        };
        let dir = existing_dir(&local_dir(path, ctx.settings))?;
        Ok(name_and_hash(&dir)?.1)
    }
}
