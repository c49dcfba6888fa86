//! Local folders as values: a folder loaded for a request ([`LocalSource`]: hashed by every
//! lock) or for a locked entry ([`LocalFolder`]: re-hashed against the lock, copied into
//! the store).

use std::path::PathBuf;
use std::sync::Arc;

use berth_lockfile_schema::{LocalPin, LockedPlugin, Pin, PluginRequest, Sha256Hash};
use berth_store::{Live, Staging, StoreEntry};

use super::{
    LOCAL_EXCLUDE, LOCAL_EXCLUDED, MAX_METADATA_BYTES, check_readable, existing_dir, local_dir,
    name_and_hash, read_regular_file,
};
use crate::context::Env;
use crate::error::ResolveError;
use crate::sources::{Declared, PinKind, PinnedSource, PluginSource, Resolved, check_pins};

/// A local folder, as the manifest writes it.
pub(crate) struct LocalSource<'a> {
    env: &'a Env<'a>,
    path: String,
}

impl<'a> LocalSource<'a> {
    /// The folder `path` names (`~/` from the home folder, relative paths from the
    /// manifest's folder); whether it exists is `lock`'s question.
    pub(crate) fn load(env: &'a Env<'a>, path: &str) -> Self {
        Self {
            env,
            path: path.to_owned(),
        }
    }
}

impl PluginSource for LocalSource<'_> {
    /// Hashes the folder; the files the runtime will skip are looked for only when it is
    /// new or changed.
    fn lock(
        &self,
        request: &PluginRequest,
        previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        let (env, path) = (self.env, &self.path);
        let dir = existing_dir(&local_dir(path, env.settings))?;
        check_readable(&dir)?;
        let progress = env.reporter.progress("Hashing", path);
        let (name, hash) = name_and_hash(&dir)?;
        drop(progress);
        let declared = Declared::read(|rel| {
            read_regular_file(&dir, rel, MAX_METADATA_BYTES)
                .ok()
                .flatten()
        });
        check_pins(request, &name, &hash)?;
        if previous.is_some_and(|p| p.hash != hash) {
            env.reporter.status(
                "Updating",
                &format!("`{name}` ({path}): its content changed"),
            );
        }
        let skipped = if previous.is_some_and(|p| p.hash == hash) {
            Vec::new()
        } else {
            crate::skipped::scan_dir(&dir, LOCAL_EXCLUDED)?
        };
        let pin = Pin::Local(LocalPin { path: path.clone() });
        Ok(Resolved {
            plugin: LockedPlugin::new(request, name, pin, hash),
            skipped,
            declared,
            held_back: None,
        })
    }
}

/// A locked local folder.
pub(crate) struct LocalFolder<'a> {
    env: &'a Env<'a>,
    locked: &'a LockedPlugin,
    pin: &'a LocalPin,
}

impl PinKind for LocalPin {
    fn load<'a>(
        &'a self,
        env: &'a Env<'a>,
        locked: &'a LockedPlugin,
        _request: Option<&'a PluginRequest>,
    ) -> Box<dyn PinnedSource + 'a> {
        Box::new(LocalFolder {
            env,
            locked,
            pin: self,
        })
    }

    /// Nothing: the folder is the user's.
    fn mark_live(&self, _live: &mut Live) {}

    fn changes_in_place(&self) -> bool {
        true
    }
}

impl LocalFolder<'_> {
    fn dir(&self) -> Result<PathBuf, ResolveError> {
        existing_dir(&local_dir(&self.pin.path, self.env.settings))
    }
}

impl PinnedSource for LocalFolder<'_> {
    fn stage(&self) -> Result<Staging, ResolveError> {
        let dir = self.dir()?;
        check_readable(&dir)?;
        let staging = self.env.store.stage()?;
        berth_store::copy_tree(&dir, staging.path(), LOCAL_EXCLUDE)?;
        Ok(staging)
    }

    /// Copied from the folder (a local folder is never substituted).
    fn add_to_store(&self) -> Result<StoreEntry, ResolveError> {
        let (locked, dir) = (self.locked, self.dir()?);
        // A mode is not in the hash: a file made private since the lock is refused here.
        check_readable(&dir)?;
        let entry =
            self.env
                .store
                .add_dir(&dir, &locked.name, Some(&locked.hash), LOCAL_EXCLUDE)?;
        crate::sources::record_pin(self.env, locked);
        Ok(entry)
    }

    fn recheck(&self) -> Result<(), ResolveError> {
        let (_, actual) = name_and_hash(&self.dir()?)?;
        if actual != self.locked.hash {
            return Err(ResolveError::LocalChanged {
                name: self.locked.name.clone(),
                path: self.pin.path.clone(),
                expected: self.locked.hash,
                actual,
            });
        }
        Ok(())
    }

    fn fresh_hash(&self) -> Result<Sha256Hash, Arc<ResolveError>> {
        self.pin_hash().map_err(Arc::new)
    }

    fn pin_hash(&self) -> Result<Sha256Hash, ResolveError> {
        Ok(name_and_hash(&self.dir()?)?.1)
    }
}
