//! Marketplaces: a declared `[[marketplace]]` pinned to a commit (git) and the sha256 of its
//! catalog (`mod.rs`), and a `PLUGIN@MARKETPLACE` request turned into the plain request its
//! catalog entry stands for (`derive.rs`). A marketplace is a source of requests, never of
//! pins.

mod derive;

pub(crate) use derive::{Derived, derive, derive_skill, resolve_derived};

use berth_lockfile_schema::marketplace::{
    CATALOG_PATHS, Catalog, LockedMarketplace, MAX_CATALOG_BYTES, MarketplaceRequest, parse_catalog,
};
use berth_lockfile_schema::{Lock, LockedPlugin, Sha256Hash, Source};
use sha2::{Digest, Sha256};

use crate::context::Env;
use crate::error::{ResolveError, Rewritten};
use crate::sources::git::GitSource;
use crate::sources::local::{existing_dir, local_dir, read_regular_file};

/// A marketplace read for this lock: its pin and its catalog.
#[derive(Debug, Clone)]
pub(crate) struct ReadMarketplace {
    pub(crate) locked: LockedMarketplace,
    pub(crate) catalog: Catalog,
}

/// Reads `declared`: at the commit `previous` pins when given (its catalog must still be
/// the one locked), else at its `ref` (the default branch without one) resolved now.
pub(crate) fn read_marketplace_at(
    env: &Env<'_>,
    declared: &MarketplaceRequest,
    previous: Option<&LockedMarketplace>,
) -> Result<ReadMarketplace, ResolveError> {
    // A marketplace a deny pattern matches is never fetched: nothing picked from it could pass.
    env.settings
        .sources
        .check_marketplace(&declared.display_source())?;
    let (git, found) = match declared.parsed_source() {
        Source::Local { path } => {
            let dir = existing_dir(&local_dir(path, env.settings))?;
            let found = find_catalog(declared, |rel, limit| read_regular_file(&dir, rel, limit))?;
            (None, found)
        }
        source => {
            let git = GitSource::load(env, source)?;
            let wanted = match previous.and_then(|p| p.git.as_ref()) {
                Some((_, rev)) => Some(rev.to_string()),
                None => declared.git_ref.clone(),
            };
            let subdir = declared.subdir();
            let read = git.read_at(wanted, subdir.as_deref(), |read| {
                find_catalog(declared, read)
            });
            let (rev, found) = match read {
                Err(ResolveError::CommitNotFound { .. }) if let Some(previous) = previous => {
                    return Err(rewritten(env, declared, previous));
                }
                other => other?,
            };
            (Some((git.remote.url.shown, rev)), found)
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
    check_unchanged(declared, previous, catalog_hash)?;
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
            auto_load: declared.auto_load.clone(),
        },
        catalog,
    })
}

/// The first catalog file there is, read through `read`.
fn find_catalog(
    declared: &MarketplaceRequest,
    read: impl Fn(&str, u64) -> Result<Option<Vec<u8>>, ResolveError>,
) -> Result<Option<(&'static str, Vec<u8>)>, ResolveError> {
    for rel in CATALOG_PATHS {
        let bytes = read(rel, MAX_CATALOG_BYTES).map_err(|e| too_large_in(e, declared, rel))?;
        if let Some(bytes) = bytes {
            return Ok(Some((rel, bytes)));
        }
    }
    Ok(None)
}

/// Refuses a catalog whose bytes differ from the ones locked at the same commit.
fn check_unchanged(
    declared: &MarketplaceRequest,
    previous: Option<&LockedMarketplace>,
    catalog_hash: Sha256Hash,
) -> Result<(), ResolveError> {
    if let Some(previous) = previous
        && let Some((_, rev)) = &previous.git
        && previous.catalog_hash != catalog_hash
    {
        // The same commit cannot hold other bytes: the lock was edited or the git cache
        // is damaged. (A rewritten history shows as a missing commit, above.)
        return Err(ResolveError::MarketplaceChanged {
            name: declared.name.clone(),
            rev: rev.to_string(),
            expected: previous.catalog_hash,
            actual: catalog_hash,
        });
    }
    Ok(())
}

/// Why the commit `locked` pins cannot be found: the marketplace at its `ref` now,
/// with both catalog hashes, or the plain error when even that cannot be read.
pub(crate) fn rewritten(
    env: &Env<'_>,
    declared: &MarketplaceRequest,
    locked: &LockedMarketplace,
) -> ResolveError {
    let rev = locked
        .git
        .as_ref()
        .map(|(_, r)| r.to_string())
        .unwrap_or_default();
    match read_marketplace_at(env, declared, None) {
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
/// gone is explained by the marketplace (see [`rewritten`]).
pub(crate) fn explain_sync_error(
    env: &Env<'_>,
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
    match rewritten(env, &declared, locked) {
        rewritten @ ResolveError::MarketplaceRewritten(_) => rewritten,
        _ => error,
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
    let env = Env::new(store, settings, reporter);
    let read = read_marketplace_at(&env, declared, locked.filter(|l| l.git.is_some()))?;
    Ok((read.locked, read.catalog))
}
