//! Marketplaces: a declared `[[marketplace]]` pinned to a commit (git) and the sha256 of its
//! catalog, and a `PLUGIN@MARKETPLACE` request turned into the plain request its catalog
//! entry stands for.

use berth_lockfile_schema::marketplace::{
    CATALOG_PATHS, Catalog, EntrySource, LockedMarketplace, MAX_CATALOG_BYTES, MarketplaceRequest,
    parse_catalog,
};
use berth_lockfile_schema::{
    CommitId, Lock, LockedPlugin, PluginRequest, Sha256Hash, Source, SourceKind,
};
use sha2::{Digest, Sha256};

use crate::context::Ctx;
use crate::error::{ResolveError, Rewritten};
use crate::sources::git::GitDb;
use crate::sources::local::{existing_dir, local_dir, read_regular_file};
use berth_transport::integrity::Integrity;

/// A marketplace read for this lock: its pin and its catalog.
#[derive(Debug, Clone)]
pub(crate) struct ReadMarketplace {
    pub(crate) locked: LockedMarketplace,
    pub(crate) catalog: Catalog,
}

/// The plain request a `PLUGIN@MARKETPLACE` entry stands for, and for an npm package the
/// integrity its tarball must have.
pub(crate) struct Derived {
    pub(crate) request: PluginRequest,
    pub(crate) npm: Option<(String, Integrity)>,
    /// The marketplace it comes from.
    pub(crate) marketplace: String,
    /// The entry's `version`.
    pub(crate) version: Option<String>,
    /// The entry's `dependencies`.
    pub(crate) dependencies: Vec<berth_lockfile_schema::marketplace::DependencySpec>,
    /// What the entry defines of the plugin (`strict: false`, component fields).
    pub(crate) definition: Option<berth_lockfile_schema::EntryDefinition>,
    /// The entry's name: the plugin's name when the entry alone defines it.
    pub(crate) entry_name: String,
}

impl Ctx<'_> {
    /// The request `pick` (a `PLUGIN@MARKETPLACE` request of `read`) stands for, with the
    /// manifest's `hash` and `name` pins carried over. An npm entry asks its registry.
    pub(crate) fn derive(
        &self,
        read: &ReadMarketplace,
        declared: &MarketplaceRequest,
        pick: &PluginRequest,
    ) -> Result<Derived, ResolveError> {
        let Source::Marketplace { plugin, .. } = pick.parsed_source() else {
            unreachable!("only called for marketplace picks");
        };
        let entry = read
            .catalog
            .entry(&declared.name, plugin)
            .map_err(|message| ResolveError::Marketplace { message })?;
        let (mut request, npm) = match &entry.source {
            Ok(EntrySource::Npm {
                package,
                version,
                registry,
            }) => {
                let npm = self.npm_pick(package, version.as_deref(), registry.as_deref())?;
                let request = PluginRequest::new(&npm.tarball, None, None, None).map_err(|e| {
                    ResolveError::Npm {
                        package: package.clone(),
                        message: format!("its tarball URL cannot be fetched: {e}"),
                    }
                })?;
                if request.parsed_source().kind() != SourceKind::Archive {
                    return Err(ResolveError::Npm {
                        package: package.clone(),
                        message: format!("`{}` is not a tarball URL", npm.tarball),
                    });
                }
                (
                    request,
                    Some((format!("{package}@{}", npm.version), npm.integrity)),
                )
            }
            _ => {
                let rev = read.locked.git.as_ref().map(|(_, rev)| rev.to_string());
                let request = entry
                    .request(declared, rev.as_deref())
                    .map_err(|message| ResolveError::Marketplace { message })?;
                (request, None)
            }
        };
        // A catalog names local folders only inside a local marketplace (the schema refuses
        // every other path); here symlinks are followed to check where they lead.
        if request.parsed_source().kind() == SourceKind::Local {
            self.inside_marketplace(declared, &entry.name, &request)?;
        }
        if !entry.inline_components.is_empty() {
            self.reporter.warn(&format!(
                "marketplace `{}`, plugin `{}`: its entry defines {}, which berth does not apply",
                declared.name,
                entry.name,
                entry
                    .inline_components
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        request.hash = pick.hash;
        request.name = pick.name.clone();
        request.line = pick.line;
        Ok(Derived {
            request,
            npm,
            marketplace: declared.name.clone(),
            version: entry.version.clone(),
            dependencies: entry.dependencies.clone(),
            definition: entry.definition.clone().unwrap_or_default(),
            entry_name: entry.name.clone(),
        })
    }

    /// Refuses a local marketplace's entry whose folder, symlinks followed, is not inside
    /// the marketplace's own folder.
    fn inside_marketplace(
        &self,
        declared: &MarketplaceRequest,
        plugin: &str,
        request: &PluginRequest,
    ) -> Result<(), ResolveError> {
        let (Source::Local { path: base }, Source::Local { path }) =
            (declared.parsed_source(), request.parsed_source())
        else {
            return Err(ResolveError::Marketplace {
                message: format!(
                    "marketplace `{}`, plugin `{plugin}`: its source `{}` is a path on this machine; only a marketplace that is itself a local folder may name folders, inside it",
                    declared.name,
                    request.display_source()
                ),
            });
        };
        let base = existing_dir(&local_dir(base, self.settings))?;
        let written = local_dir(path, self.settings);
        let real = existing_dir(&written)?;
        if !real.starts_with(&base) {
            return Err(ResolveError::Marketplace {
                message: format!(
                    "marketplace `{}`, plugin `{plugin}`: its folder `{}` leads out of the marketplace's folder `{}` (to `{}`) through a symlink; a marketplace may name only folders inside it",
                    declared.name,
                    written.display(),
                    base.display(),
                    real.display()
                ),
            });
        }
        Ok(())
    }

    /// Locks what [`Ctx::derive`] gave.
    pub(crate) fn resolve_derived(
        &self,
        derived: &Derived,
    ) -> Result<crate::context::Resolved, ResolveError> {
        match &derived.npm {
            Some((package, integrity)) => {
                self.lock_archive_checked(&derived.request, Some((package, integrity)))
            }
            None => super::resolve_new(self, &derived.request),
        }
    }
}

impl Ctx<'_> {
    /// Reads `declared`: at the commit `previous` pins when given (its catalog must still be
    /// the one locked), else at its `ref` (the default branch without one) resolved now.
    pub(crate) fn read_marketplace(
        &self,
        declared: &MarketplaceRequest,
        previous: Option<&LockedMarketplace>,
    ) -> Result<ReadMarketplace, ResolveError> {
        let (git, found) = match declared.parsed_source().kind() {
            SourceKind::Local => {
                let Source::Local { path } = declared.parsed_source() else {
                    unreachable!("a local source");
                };
                let dir = existing_dir(&local_dir(path, self.settings))?;
                let mut found = None;
                for rel in CATALOG_PATHS {
                    let read = read_regular_file(&dir, rel, MAX_CATALOG_BYTES);
                    if let Some(bytes) = read.map_err(|e| too_large_in(e, declared, rel))? {
                        found = Some((rel, bytes));
                        break;
                    }
                }
                (None, found)
            }
            _ => {
                let (remote, cache) = self.remote(declared.parsed_source())?;
                let db = GitDb::for_remote(self.store, &remote, &cache, self.reporter)?;
                let wanted = match previous.and_then(|p| p.git.as_ref()) {
                    Some((_, rev)) => Some(rev.to_string()),
                    None => declared.git_ref.clone(),
                };
                let rev = match self.git_rev(&db, &remote, &cache, wanted) {
                    Err(ResolveError::CommitNotFound { .. }) if let Some(previous) = previous => {
                        drop(db);
                        return Err(self.rewritten(declared, previous));
                    }
                    other => other?,
                };
                let (tree, _) = db.plugin_tree(rev, declared.subdir().as_deref())?;
                let mut found = None;
                for rel in CATALOG_PATHS {
                    let read = db.read_file(tree, rel, MAX_CATALOG_BYTES);
                    if let Some(bytes) = read.map_err(|e| too_large_in(e, declared, rel))? {
                        found = Some((rel, bytes));
                        break;
                    }
                }
                db.finish()?;
                let rev = CommitId::parse(&rev.to_string()).expect("a full commit id");
                (Some((remote.url.shown, rev)), found)
            }
        };
        let Some((catalog_path, bytes)) = found else {
            return Err(ResolveError::Marketplace {
                message: format!(
                    "marketplace `{}` (`{}`) has no catalog: looked for {}",
                    declared.name,
                    declared.display_source(),
                    CATALOG_PATHS.map(|p| format!("`{p}`")).join(" and ")
                ),
            });
        };
        let catalog_hash = Sha256Hash::from_bytes(Sha256::digest(&bytes).into());
        if let Some(previous) = previous
            && previous.git.is_some()
            && previous.catalog_hash != catalog_hash
        {
            // The same commit cannot hold other bytes: the lock was edited or the git cache
            // is damaged. (A rewritten history shows as a missing commit, above.)
            return Err(ResolveError::MarketplaceChanged {
                name: declared.name.clone(),
                rev: previous
                    .git
                    .as_ref()
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_default(),
                expected: previous.catalog_hash,
                actual: catalog_hash,
            });
        }
        let catalog = parse_catalog(&declared.name, catalog_path, &bytes).map_err(|e| {
            ResolveError::Marketplace {
                message: e.to_string(),
            }
        })?;
        Ok(ReadMarketplace {
            locked: LockedMarketplace {
                name: declared.name.clone(),
                source: declared.display_source(),
                git_ref: declared.git_ref.clone(),
                repo_path: declared.repo_path.clone(),
                git,
                catalog: catalog_path.to_owned(),
                catalog_hash,
            },
            catalog,
        })
    }

    /// Why the commit `locked` pins cannot be found: the marketplace at its `ref` now,
    /// with both catalog hashes, or the plain error when even that cannot be read.
    pub(crate) fn rewritten(
        &self,
        declared: &MarketplaceRequest,
        locked: &LockedMarketplace,
    ) -> ResolveError {
        let rev = locked
            .git
            .as_ref()
            .map(|(_, r)| r.to_string())
            .unwrap_or_default();
        match self.read_marketplace(declared, None) {
            Ok(now) => ResolveError::MarketplaceRewritten(Box::new(Rewritten {
                name: declared.name.clone(),
                rev,
                expected: locked.catalog_hash,
                git_ref: declared.git_ref.clone(),
                now_rev: now
                    .locked
                    .git
                    .as_ref()
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_default(),
                actual: now.locked.catalog_hash,
            })),
            Err(e) => e,
        }
    }

    /// After a failed `sync`: an entry of a marketplace's own repository whose commit is
    /// gone is explained by the marketplace (see [`Ctx::rewritten`]).
    pub(crate) fn explain_sync_error(
        &self,
        lock: &Lock,
        plugin: &LockedPlugin,
        error: ResolveError,
    ) -> ResolveError {
        let ResolveError::CommitNotFound { url, .. } = &error else {
            return error;
        };
        let Some(Source::Marketplace { marketplace, .. }) = plugin
            .requested
            .as_deref()
            .and_then(|r| Source::parse(r).ok())
        else {
            return error;
        };
        let Some(locked) = lock
            .marketplaces
            .iter()
            .find(|m| m.name == marketplace && m.git.as_ref().is_some_and(|(u, _)| u == url))
        else {
            return error;
        };
        let Ok(declared) = MarketplaceRequest::new(
            &locked.name,
            &locked.source,
            locked.git_ref.as_deref(),
            locked.repo_path.as_deref(),
        ) else {
            return error;
        };
        match self.rewritten(&declared, locked) {
            rewritten @ ResolveError::MarketplaceRewritten(_) => rewritten,
            _ => error,
        }
    }
}

/// A catalog over its size limit, named as the marketplace's catalog.
fn too_large_in(error: ResolveError, declared: &MarketplaceRequest, rel: &str) -> ResolveError {
    match error {
        ResolveError::FileTooLarge { size, limit, .. } => ResolveError::FileTooLarge {
            file: format!("the catalog `{rel}` of marketplace `{}`", declared.name),
            size,
            limit,
        },
        other => other,
    }
}

/// A marketplace's pin and catalog, for `berth marketplace list`: read at the commit
/// `locked` pins when given, else at its `ref` now.
pub fn read_marketplace(
    store: &berth_store::Store,
    settings: &crate::context::Settings,
    reporter: &dyn crate::context::Reporter,
    declared: &MarketplaceRequest,
    locked: Option<&LockedMarketplace>,
) -> Result<(LockedMarketplace, Catalog), ResolveError> {
    let ctx = Ctx::new(store, settings, reporter);
    let read = ctx.read_marketplace(declared, locked.filter(|l| l.git.is_some()))?;
    Ok((read.locked, read.catalog))
}
