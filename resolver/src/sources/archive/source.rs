//! Archive sources: downloaded while hashed, unpacked safely, narrowed to the plugin.

use std::path::PathBuf;

use berth_lockfile_schema::{LockedPlugin, Pin, PluginRequest, Sha256Hash, Source};
use berth_store::Staging;

use crate::context::*;
use crate::error::ResolveError;
use crate::meta::plugin_name_from_manifest;
use crate::sources::PluginSource;
use crate::sources::archive::{self, ArchiveSource};
use crate::sources::local::MAX_METADATA_BYTES;
use berth_transport::url::SourceUrl;

impl Ctx<'_> {
    pub(crate) fn archive_source(&self, source: &Source) -> Result<ArchiveSource, ResolveError> {
        let Source::Archive { url, format } = source else {
            unreachable!("only called for archive sources");
        };
        Ok(ArchiveSource {
            url: SourceUrl::new(url)?,
            format: *format,
        })
    }

    pub(crate) fn lock_archive(&self, request: &PluginRequest) -> Result<Resolved, ResolveError> {
        self.lock_archive_checked(request, None)
    }

    /// Locks an archive whose download must also match `integrity` (an npm tarball's
    /// `dist.integrity`, `package` naming it), checked before anything is unpacked.
    pub(crate) fn lock_archive_checked(
        &self,
        request: &PluginRequest,
        integrity: Option<(&str, &berth_transport::integrity::Integrity)>,
    ) -> Result<Resolved, ResolveError> {
        let source = self.archive_source(request.parsed_source())?;
        self.require_network(|| format!("`{}`", source.url.shown))?;
        let limits = self.settings.archive_limits;
        let (download, file, archive_hash) = self.download(&source)?;
        if let Some((package, expected)) = integrity {
            let actual = expected.of_file(&file)?;
            if actual != *expected {
                return Err(ResolveError::NpmIntegrity {
                    package: package.to_owned(),
                    tarball: source.url.shown.clone(),
                    expected: expected.to_string(),
                    actual: actual.to_string(),
                });
            }
        }
        if let Some(expected) = request.archive_hash
            && expected != archive_hash
        {
            return Err(ResolveError::ArchiveHashMismatch {
                name: source.url.shown.clone(),
                expected,
                actual: archive_hash,
            });
        }
        let unpacked = archive::unpack(self.store, &source, &file, request.subdir(), limits)?;
        // Only an archive that unpacked cleanly is kept for `sync`.
        archive::keep(self.store, &file, &archive_hash, source.format)?;
        drop(download);
        let dir = unpacked.staging.path();
        let name = plugin_name_from_manifest(
            |rel| crate::sources::local::read_regular_file(dir, rel, MAX_METADATA_BYTES),
            &unpacked.folder_name,
        )?;
        let declared = Declared::read(|rel| {
            crate::sources::local::read_regular_file(dir, rel, MAX_METADATA_BYTES)
                .ok()
                .flatten()
        });
        let hash = berth_store::hash_path(dir)?;
        check_pins(request, &name, &hash)?;
        let skipped = crate::skipped::scan_dir(dir, &[])?;
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
                repo_path: request.repo_path.clone(),
                pin: Pin::Archive(berth_lockfile_schema::ArchivePin {
                    url: source.url.shown,
                    archive_hash,
                }),
                hash,
            },
            skipped,
            declared,
        })
    }

    /// Unpacks a locked archive into a staging folder: from the download cache when it
    /// holds the locked bytes, else downloaded again and checked against `archive_hash`.
    pub(crate) fn stage_archive(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
        archive_hash: &Sha256Hash,
    ) -> Result<Staging, ResolveError> {
        let source = self.archive_source(&Self::source_of(locked, request)?)?;
        let limits = self.settings.archive_limits;
        let cached = archive::cached(self.store, archive_hash, source.format)
            .filter(|path| berth_store::hash_file(path).is_ok_and(|h| h == *archive_hash));
        let subdir = archive_subdir(locked);
        if let Some(file) = cached {
            let unpacked = archive::unpack(self.store, &source, &file, subdir.as_deref(), limits)?;
            return Ok(unpacked.staging);
        }
        self.require_network(|| format!("plugin `{}` (`{}`)", locked.name, source.url.shown))?;
        let (download, file) = self.download_expecting(&source, &locked.name, archive_hash)?;
        let unpacked = archive::unpack(self.store, &source, &file, subdir.as_deref(), limits)?;
        archive::keep(self.store, &file, archive_hash, source.format)?;
        drop(download);
        Ok(unpacked.staging)
    }

    /// Downloads an archive that must hash to `expected`; a mismatch names `name`.
    pub(crate) fn download_expecting(
        &self,
        source: &ArchiveSource,
        name: &str,
        expected: &Sha256Hash,
    ) -> Result<(Staging, PathBuf), ResolveError> {
        let (staging, file, actual) = self.download(source)?;
        if actual != *expected {
            return Err(ResolveError::ArchiveHashMismatch {
                name: name.to_owned(),
                expected: *expected,
                actual,
            });
        }
        Ok((staging, file))
    }
}

/// Downloadable archives.
pub(crate) struct Archive;

impl PluginSource for Archive {
    fn lock(
        &self,
        ctx: &Ctx<'_>,
        request: &PluginRequest,
        _previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        ctx.lock_archive(request)
    }

    fn stage(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Staging, ResolveError> {
        let Pin::Archive(berth_lockfile_schema::ArchivePin { archive_hash, .. }) = &locked.pin else {
            return Err(crate::sources::other_kind(locked));
        };
        ctx.stage_archive(locked, request, archive_hash)
    }

    fn fresh_hash(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<berth_lockfile_schema::Sha256Hash, ResolveError> {
        let Pin::Archive(berth_lockfile_schema::ArchivePin { archive_hash, .. }) = &locked.pin else {
            return Err(crate::sources::other_kind(locked));
        };
        // A fresh download, not the cache: verify must see what the server sends now.
        let source = ctx.archive_source(&Ctx::source_of(locked, request)?)?;
        ctx.require_network(|| format!("`{}`", source.url.shown))?;
        let (_download, file) = ctx.download_expecting(&source, &locked.name, archive_hash)?;
        let unpacked = archive::unpack(
            ctx.store,
            &source,
            &file,
            archive_subdir(locked).as_deref(),
            ctx.settings.archive_limits,
        )?;
        Ok(berth_store::hash_path(unpacked.staging.path())?)
    }
}
