//! Local directory sources.

mod checks;
mod source;

pub(crate) use source::LocalSource;

use std::path::{Path, PathBuf};

use berth_lockfile_schema::Sha256Hash;
use berth_store::{Exclude, hash_path_excluding};

use crate::context::Settings;
use crate::error::{LocalPathProblem, ResolveError};
use crate::meta::plugin_name_from_manifest;

/// A local folder's top-level `.git` is not part of the plugin (docs/spec.md section 3).
pub(crate) const LOCAL_EXCLUDED: &[&str] = &[".git"];
/// [`LOCAL_EXCLUDED`] as the store's hashing and copying take it.
pub(crate) const LOCAL_EXCLUDE: Exclude<'static> = Exclude::top_level(LOCAL_EXCLUDED);

/// The folder a local source names: `~/` from the home folder, relative paths from the
/// manifest's folder.
pub(crate) fn local_dir(written: &str, settings: &Settings) -> PathBuf {
    let path = if written == "~" {
        settings
            .home_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("~"))
    } else if let Some(rest) = written.strip_prefix("~/") {
        match &settings.home_dir {
            Some(home) => home.join(rest),
            None => PathBuf::from(written),
        }
    } else {
        PathBuf::from(written)
    };
    if path.is_absolute() || settings.base_dir == Path::new(".") {
        path
    } else {
        settings
            .base_dir
            .join(path.strip_prefix(".").unwrap_or(&path))
    }
}

/// Checks the folder exists and returns its canonical path.
pub(crate) fn existing_dir(path: &Path) -> Result<PathBuf, ResolveError> {
    // A link to a folder is fine; a bad one is named as a symlink, never as a file.
    let link = std::fs::read_link(path).ok();
    let refuse = |problem: LocalPathProblem| ResolveError::LocalPath {
        path: path.to_owned(),
        link: link.clone(),
        problem,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(refuse(LocalPathProblem::NotAFolder)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse(LocalPathProblem::Missing));
        }
        Err(e) => return Err(refuse(LocalPathProblem::Unreadable(e))),
    }
    Ok(fs_err::canonicalize(path)?)
}

/// Refuses the folder a manifest's `source` names (`written`) when it holds no plugin.
/// (A folder a marketplace entry names is what the entry defines, and the agent's is a
/// Python package: neither is held to the layout.) A folder that does not exist is
/// left to the lock, which says so.
pub(crate) fn check_requested_folder(
    written: &str,
    settings: &Settings,
) -> Result<(), ResolveError> {
    match existing_dir(&local_dir(written, settings)) {
        Ok(dir) => checks::check_holds_a_plugin(&dir),
        Err(_) => Ok(()),
    }
}

/// Refuses a folder whose files are not all readable by every user, before it is locked
/// or copied into the store.
pub(crate) fn check_readable(dir: &Path) -> Result<(), ResolveError> {
    checks::check_readable_by_all(dir, LOCAL_EXCLUDED)
}

/// The name and NAR hash of a local plugin folder.
pub(crate) fn name_and_hash(dir: &Path) -> Result<(String, Sha256Hash), ResolveError> {
    let fallback = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin".to_owned());
    let name = plugin_name_from_manifest(
        |rel| read_regular_file(dir, rel, MAX_METADATA_BYTES),
        &fallback,
    )?;
    let hash = hash_path_excluding(dir, LOCAL_EXCLUDE)?;
    Ok((name, hash))
}

/// The largest plugin metadata file (`plugin.json`, `package.json`, ...) berth reads whole.
pub(crate) const MAX_METADATA_BYTES: u64 = 1 << 20;

/// A regular file's content, or `None` if absent. A symlink counts as absent: the name
/// must come from the plugin's own files, and a link could point anywhere. A file over
/// `limit` bytes is [`ResolveError::FileTooLarge`], refused before it is read.
pub(crate) fn read_regular_file(
    dir: &Path,
    rel: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, ResolveError> {
    use std::io::Read;
    let path = dir.join(rel);
    let too_large = |size: u64| ResolveError::FileTooLarge {
        file: format!("`{}`", path.display()),
        size,
        limit,
    };
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => {
            if meta.len() > limit {
                return Err(too_large(meta.len()));
            }
            // The file may grow between the check and the read: read one byte past the limit.
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            fs_err::File::open(&path)?
                .take(limit + 1)
                .read_to_end(&mut bytes)?;
            if bytes.len() as u64 > limit {
                return Err(too_large(bytes.len() as u64));
            }
            Ok(Some(bytes))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Ok(None),
        Err(e) => Err(fs_err::read(&path).map_or_else(Into::into, |_| e.into())),
    }
}
