//! Archive sources as values: a URL loaded for a request ([`ArchiveSource`]: downloaded
//! while hashed, unpacked safely, narrowed to the plugin and hashed) or for a locked
//! download ([`LockedArchive`]: unpacked from the download cache, or downloaded again and
//! checked against the locked sha256).

use std::path::PathBuf;
use std::sync::Arc;

use berth_lockfile_schema::{
    ArchiveFormat, ArchivePin, LockedPlugin, Pin, PluginRequest, Sha256Hash, Source,
};
use berth_store::{Live, Staging, StoreEntry};
use berth_transport::integrity::Integrity;
use berth_transport::url::SourceUrl;

use super::{ArchiveUrl, cached, download, keep, unpack};
use crate::context::Env;
use crate::error::{PinMismatch, ResolveError};
use crate::meta::plugin_name_from_manifest;
use crate::sources::local::{MAX_METADATA_BYTES, read_regular_file};
use crate::sources::{
    Declared, PinKind, PinnedSource, PluginSource, Resolved, check_pins, source_of,
    substitute_or_stage,
};

/// An archive URL, loaded for a run.
pub(crate) struct ArchiveSource<'a> {
    env: &'a Env<'a>,
    archive: ArchiveUrl,
    /// What the download must also match before anything is unpacked: an npm tarball's
    /// `dist.integrity`, and the package it names.
    integrity: Option<(String, Integrity)>,
}

impl<'a> ArchiveSource<'a> {
    /// The archive at `url` (`${VAR}` references expanded).
    pub(crate) fn load(
        env: &'a Env<'a>,
        url: &str,
        format: ArchiveFormat,
    ) -> Result<Self, ResolveError> {
        Ok(Self {
            env,
            archive: ArchiveUrl {
                url: SourceUrl::new(url)?,
                format,
                credential: None,
            },
            integrity: None,
        })
    }

    /// This archive, whose download must also match `integrity` (`package` naming it).
    pub(crate) fn with_integrity(mut self, package: &str, integrity: &Integrity) -> Self {
        self.integrity = Some((package.to_owned(), integrity.clone()));
        self
    }

    /// Refuses a download that does not match the integrity it must have.
    fn check_integrity(&self, file: &std::path::Path) -> Result<(), ResolveError> {
        let Some((package, expected)) = &self.integrity else {
            return Ok(());
        };
        let actual = expected.of_file(file)?;
        if actual != *expected {
            return Err(ResolveError::NpmIntegrity {
                package: package.clone(),
                tarball: self.archive.url.shown.clone(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(())
    }
}

impl PluginSource for ArchiveSource<'_> {
    fn lock(
        &self,
        request: &PluginRequest,
        _previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        let (env, archive) = (self.env, &self.archive);
        env.settings
            .require_network(|| format!("`{}`", archive.url.shown))?;
        let (download, file, archive_hash) = download(env, archive)?;
        self.check_integrity(&file)?;
        if let Some(expected) = request.archive_hash
            && expected != archive_hash
        {
            return Err(ResolveError::ArchiveHashMismatch {
                name: archive.url.shown.clone(),
                expected,
                actual: archive_hash,
            });
        }
        let limits = env.settings.archive_limits;
        let unpacked = unpack(env.store, archive, &file, request.subdir(), limits)?;
        // Only an archive that unpacked cleanly is kept for `sync`.
        keep(env.store, &file, &archive_hash, archive.format)?;
        drop(download);
        let dir = unpacked.staging.path();
        let name = plugin_name_from_manifest(
            |rel| read_regular_file(dir, rel, MAX_METADATA_BYTES),
            &unpacked.folder_name,
        )?;
        let declared = Declared::read(|rel| {
            read_regular_file(dir, rel, MAX_METADATA_BYTES)
                .ok()
                .flatten()
        });
        let hash = berth_store::hash_path(dir)?;
        check_pins(request, &name, &hash)?;
        let skipped = crate::skipped::scan_dir(dir, &[])?;
        let pin = Pin::Archive(ArchivePin {
            url: archive.url.shown.clone(),
            archive_hash,
        });
        Ok(Resolved {
            plugin: LockedPlugin::new(request, name, pin, hash),
            skipped,
            declared,
            held_back: None,
        })
    }
}

/// A locked download, and the plugin folder in it.
pub(crate) struct LockedArchive<'a> {
    env: &'a Env<'a>,
    locked: &'a LockedPlugin,
    request: Option<&'a PluginRequest>,
    pin: &'a ArchivePin,
}

impl PinKind for ArchivePin {
    fn load<'a>(
        &'a self,
        env: &'a Env<'a>,
        locked: &'a LockedPlugin,
        request: Option<&'a PluginRequest>,
    ) -> Box<dyn PinnedSource + 'a> {
        Box::new(LockedArchive {
            env,
            locked,
            request,
            pin: self,
        })
    }

    fn mark_live(&self, live: &mut Live) {
        live.archives.insert(self.archive_hash.to_nix32());
    }
}

impl LockedArchive<'_> {
    /// The URL to download the archive from.
    fn archive(&self) -> Result<ArchiveUrl, ResolveError> {
        let Source::Archive { url, format } = source_of(self.locked, self.request)? else {
            unreachable!("an archive pin's source is an archive (checked by the lock parser)");
        };
        Ok(ArchiveUrl {
            url: SourceUrl::new(&url)?,
            format,
            credential: None,
        })
    }

    /// The locked `repo_path`, normalised.
    fn subdir(&self) -> Option<String> {
        self.locked
            .repo_path
            .as_deref()
            .and_then(|p| berth_lockfile_schema::normalize_repo_path(p).ok())
    }

    /// Downloads the archive, which must hash to the locked sha256.
    fn download_locked(&self, archive: &ArchiveUrl) -> Result<(Staging, PathBuf), ResolveError> {
        let (staging, file, actual) = download(self.env, archive)?;
        if actual != self.pin.archive_hash {
            return Err(ResolveError::ArchiveHashMismatch {
                name: self.locked.name.clone(),
                expected: self.pin.archive_hash,
                actual,
            });
        }
        Ok((staging, file))
    }
}

impl PinnedSource for LockedArchive<'_> {
    /// From the download cache when it holds the locked bytes, else downloaded again.
    fn stage(&self) -> Result<Staging, ResolveError> {
        let archive = &self.archive()?;
        let (env, hash) = (self.env, &self.pin.archive_hash);
        let limits = env.settings.archive_limits;
        let cached = cached(env.store, hash, archive.format)
            .filter(|path| berth_store::hash_file(path).is_ok_and(|h| h == *hash));
        let subdir = self.subdir();
        if let Some(file) = cached {
            let unpacked = unpack(env.store, archive, &file, subdir.as_deref(), limits)?;
            return Ok(unpacked.staging);
        }
        // The plugin's name is the error's label already.
        env.settings
            .require_network(|| format!("`{}`", archive.url.shown))?;
        let (download, file) = self.download_locked(archive)?;
        let unpacked = unpack(env.store, archive, &file, subdir.as_deref(), limits)?;
        keep(env.store, &file, hash, archive.format)?;
        drop(download);
        Ok(unpacked.staging)
    }

    fn add_to_store(&self) -> Result<StoreEntry, ResolveError> {
        substitute_or_stage(self.env, self.locked, || self.stage())
    }

    /// A fresh download, not the cache: verify must see what the server sends now.
    fn fresh_hash(&self) -> Result<Sha256Hash, Arc<ResolveError>> {
        self.pin_hash().map_err(Arc::new)
    }

    /// A fresh download: the download cache holds bytes by their hash, not by where they
    /// came from.
    fn pin_hash(&self) -> Result<Sha256Hash, ResolveError> {
        let (env, archive) = (self.env, &self.archive()?);
        if archive.url.shown != self.pin.url {
            return Err(PinMismatch::Url {
                url: self.pin.url.clone(),
                fetched: archive.url.shown.clone(),
            }
            .into());
        }
        env.settings
            .require_network(|| format!("`{}`", archive.url.shown))?;
        let (download, file) = self.download_locked(archive)?;
        let limits = env.settings.archive_limits;
        let unpacked = unpack(env.store, archive, &file, self.subdir().as_deref(), limits)?;
        // The download hashed to the pin's `archive_hash`: kept, so adding the entry next
        // does not download it again.
        keep(env.store, &file, &self.pin.archive_hash, archive.format)?;
        drop(download);
        Ok(berth_store::hash_path(unpacked.staging.path())?)
    }
}
