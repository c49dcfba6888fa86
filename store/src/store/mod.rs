//! The content-addressed store of docs/spec.md section 4.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use berth_lockfile_schema::Sha256Hash;

use crate::fault;
use crate::lock::FileLock;
use crate::nar::{self, Exclude, NarError};
use crate::record;

mod checked;
mod pins;
mod verdicts;
pub use checked::Listed;
pub use pins::pin_digest;

/// Where store entries live, under the store root.
pub const ENTRIES_DIR: &str = "store-v1";
/// Staging folders, on the same filesystem as the entries so a finished one can be renamed.
pub const TMP_DIR: &str = "tmp";
/// Lock files.
pub const LOCKS_DIR: &str = "locks";
/// Bare git databases (a cache).
pub const GIT_DIR: &str = "git-v1";

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed (the message carries the path).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The tree could not be hashed.
    #[error(transparent)]
    Nar(#[from] NarError),
    /// The content does not hash to what the lock says: nothing was added.
    #[error("hash mismatch for `{name}`: expected `{expected}`, got `{actual}`")]
    HashMismatch {
        /// The plugin.
        name: String,
        /// What the lock or manifest says.
        expected: Sha256Hash,
        /// What the content hashes to.
        actual: Sha256Hash,
    },
    /// A store entry no longer hashes to its name: something changed it after it was
    /// added (see [`Store::checked_lookup`]).
    #[error(
        "store entry `{}` of plugin `{name}` was changed after it was added ({found}); run `berth plugins sync` to fetch it again (`berth store verify` checks every entry)",
        path.display()
    )]
    Tampered {
        /// The plugin.
        name: String,
        /// The entry's folder.
        path: PathBuf,
        /// What it is now: the hash it has, or why it cannot be hashed.
        found: String,
    },
}

/// A store rooted at one folder. Cheap to clone; holds no open files.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    /// Entries found unchanged recently, when checks are remembered (a server).
    pub(crate) recent_checks: Option<std::sync::Arc<record::RecentChecks>>,
}

/// An entry known to be in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreEntry {
    /// The entry's folder, `<root>/store-v1/<nix32>-<name>`.
    pub path: PathBuf,
    /// Its NAR hash.
    pub hash: Sha256Hash,
}

/// The store berth uses when none is named: `BERTH_STORE`, else `$XDG_CACHE_HOME/berth`,
/// else `~/.cache/berth` (`home`); `None` when none of them is set.
pub fn default_root(home: Option<&Path>) -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|d| !d.is_empty());
    if let Some(dir) = set("BERTH_STORE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = set("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("berth"));
    }
    home.map(|home| home.join(".cache").join("berth"))
}

impl Store {
    /// A store at `root`. Nothing is created until something is written.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            recent_checks: None,
        }
    }

    /// This store, remembering for `window` that an entry was found unchanged, so that
    /// [`Store::checked_lookup`] of it within the window is an `lstat` of its folder
    /// instead of a check of every path. For a long-running process that uses the same
    /// entries many times a second (the server); clones share what is remembered.
    #[must_use]
    pub fn remembering_checks_for(self, window: std::time::Duration) -> Self {
        Self {
            recent_checks: Some(std::sync::Arc::new(record::RecentChecks::new(window))),
            ..self
        }
    }

    /// The store root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the bare git databases live.
    pub fn git_dir(&self) -> PathBuf {
        self.root.join(GIT_DIR)
    }

    /// The path an entry with this hash and name has, whether or not it exists.
    pub fn entry_path(&self, hash: &Sha256Hash, name: &str) -> PathBuf {
        self.root
            .join(ENTRIES_DIR)
            .join(format!("{}-{}", hash.to_nix32(), entry_name(name)))
    }

    /// The entry with this hash and name, if present. Entries are only ever renamed into
    /// place after their content was verified, so presence means complete; whether it was
    /// changed since is [`Store::checked_lookup`]'s question, which whatever reads an
    /// entry's files asks instead.
    pub fn lookup(&self, hash: &Sha256Hash, name: &str) -> Option<StoreEntry> {
        let path = self.entry_path(hash, name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => Some(StoreEntry { path, hash: *hash }),
            _ => None,
        }
    }

    /// A fresh, empty staging folder under `tmp/`, removed when dropped unless committed.
    pub fn stage(&self) -> Result<Staging, StoreError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = self.root.join(TMP_DIR);
        fs_err::create_dir_all(&tmp)?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = tmp.join(format!(
            "stage-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        // The lock file marks the folder as in use for as long as this process lives; a
        // folder whose lock is free belongs to a process that died (see `clean_tmp`).
        // Linked: `clean_tmp` deletes the lock files it could lock, and one it deleted
        // between this `open` and this `flock` must not be the one held.
        let lock = FileLock::acquire_linked(&lock_of(&path), || {})?;
        fs_err::create_dir(&path)?;
        Ok(Staging {
            path: Some(path),
            lock: Some(lock),
        })
    }

    /// Removes staging folders left by processes that died (killed mid-sync, say). Folders
    /// still in use are locked by their owner and left alone.
    pub fn clean_tmp(&self) -> Result<usize, StoreError> {
        let tmp = self.root.join(TMP_DIR);
        let entries = match std::fs::read_dir(&tmp) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let mut removed = 0;
        for entry in entries {
            let path = entry?.path();
            // A lock file alone is left when a process died just before making its folder
            // or just after renaming it into place.
            let (folder, lock_path) = match path.to_str().and_then(|p| p.strip_suffix(".lock")) {
                Some(folder) => (PathBuf::from(folder), path.clone()),
                None => (path.clone(), lock_of(&path)),
            };
            if path == lock_path && folder.exists() {
                continue; // handled with its folder
            }
            if let Some(_lock) = FileLock::try_acquire(&lock_path)? {
                remove_tree(&folder)?;
                let _ = std::fs::remove_file(&lock_path);
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Hashes the staged tree and, if it matches `expected` (when given), makes it read-only
    /// and renames it into place as `<nix32>-<name>`. On a mismatch nothing is added.
    pub fn commit(
        &self,
        mut staging: Staging,
        name: &str,
        expected: Option<&Sha256Hash>,
    ) -> Result<StoreEntry, StoreError> {
        let staged = staging.path().to_owned();
        // Made read-only and its stat record taken by the walk that hashes it, each path's
        // line before its contents are read: the record vouches only for content hashed
        // after it was taken (see `record/mod.rs`).
        let mut sealed = nar::Sealing::default();
        let hash = nar::hash_path_sealing(&staged, &mut sealed)?;
        if let Some(expected) = expected
            && *expected != hash
        {
            return Err(StoreError::HashMismatch {
                name: name.to_owned(),
                expected: *expected,
                actual: hash,
            });
        }
        let target = self.entry_path(&hash, name);
        if self.lookup(&hash, name).is_some() {
            // Another process added the same content meanwhile: content-addressed, so equal.
            return Ok(StoreEntry { path: target, hash });
        }
        fs_err::create_dir_all(target.parent().expect("entries have a parent"))?;
        fault::pause_at(fault::COMMIT_BEFORE_RENAME);
        match std::fs::rename(&staged, &target) {
            Ok(()) => {
                staging.path = None;
                fault::pause_at(fault::COMMIT_AFTER_RENAME);
            }
            Err(_) if self.lookup(&hash, name).is_some() => {
                return Ok(StoreEntry { path: target, hash });
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!(
                        "{e} (renaming `{}` to `{}`)",
                        staged.display(),
                        target.display()
                    ),
                )
                .into());
            }
        }
        // The entry's own folder is made read-only last: renaming a read-only folder to a
        // new parent is refused to non-root users.
        set_mode(&target, 0o555)?;
        // Renaming keeps the inodes and ctimes of everything under the entry's own folder;
        // the folder's own line is taken now. Without a record the entry is re-hashed once.
        let folder = format!("{}-{}", hash.to_nix32(), entry_name(name));
        let written =
            record::committed_record(&target, &sealed.top, &sealed.lines).and_then(|record| {
                record.map_or(Ok(None), |r| {
                    self.write_record(&folder, &r).map(|()| Some(r))
                })
            });
        match written {
            // Just hashed from disk, its record just taken: remembered as checked.
            Ok(Some(record)) => {
                if let Some(recent) = &self.recent_checks {
                    recent.found_unchanged(&folder, record::tree_of_record(&record));
                }
            }
            Ok(None) => {}
            Err(e) => tracing::debug!("could not write the stat record of `{folder}`: {e}"),
        }
        Ok(StoreEntry { path: target, hash })
    }

    /// Copies the folder `source` (leaving out `exclude`) into the store, verified.
    pub fn add_dir(
        &self,
        source: &Path,
        name: &str,
        expected: Option<&Sha256Hash>,
        exclude: Exclude<'_>,
    ) -> Result<StoreEntry, StoreError> {
        let staging = self.stage()?;
        copy_tree(source, staging.path(), exclude)?;
        self.commit(staging, name, expected)
    }

    /// Takes the cross-process lock named `key` (a file under `locks/`); calls `on_wait`
    /// first if another process holds it.
    pub fn lock(&self, key: &str, on_wait: impl FnOnce()) -> Result<FileLock, StoreError> {
        let path = self.root.join(LOCKS_DIR).join(format!("{key}.lock"));
        Ok(FileLock::acquire(&path, on_wait)?)
    }

    /// Re-hashes an entry and says whether it still matches its name.
    pub fn verify_entry(&self, entry: &StoreEntry) -> Result<bool, StoreError> {
        Ok(nar::hash_path(&entry.path)? == entry.hash)
    }
}

/// The name part of a store entry: the plugin name with characters that are awkward in
/// file names replaced by `_` (Nix's store-name alphabet, plus a non-leading `.`).
pub fn entry_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.' | '_' | '?' | '=') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with('.') || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// A staging folder under the store's `tmp/`; removed on drop unless committed.
#[derive(Debug)]
pub struct Staging {
    path: Option<PathBuf>,
    lock: Option<FileLock>,
}

impl Staging {
    /// The folder to write the tree into.
    pub fn path(&self) -> &Path {
        self.path
            .as_deref()
            .expect("a staging folder has a path until committed")
    }

    /// Moves the staged folder to `dest` (on the same filesystem) as it is, for caches
    /// that need no verification, such as a new git database once its first fetch worked.
    pub fn persist_to(mut self, dest: &Path) -> std::io::Result<()> {
        let staged = self.path().to_owned();
        if let Some(parent) = dest.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fault::pause_at(fault::PERSIST_BEFORE_RENAME);
        fs_err::rename(&staged, dest)?;
        self.path = None;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = remove_tree(&path);
        }
        if let Some(lock) = self.lock.take() {
            let path = lock.path().to_owned();
            drop(lock);
            let _ = std::fs::remove_file(path);
        }
    }
}

fn lock_of(staging: &Path) -> PathBuf {
    let mut name = staging.file_name().unwrap_or_default().to_owned();
    name.push(".lock");
    staging.with_file_name(name)
}

/// Copies a tree: folders, regular files (keeping the execute bits) and symlinks (as links).
/// Anything else is an error naming it.
pub fn copy_tree(source: &Path, dest: &Path, exclude: Exclude<'_>) -> Result<(), StoreError> {
    copy_dir(source, dest, exclude, 0)
}

fn copy_dir(
    source: &Path,
    dest: &Path,
    exclude: Exclude<'_>,
    depth: usize,
) -> Result<(), StoreError> {
    fs_err::create_dir_all(dest)?;
    for entry in fs_err::read_dir(source)? {
        let entry = entry?;
        let name = entry.file_name();
        if exclude.skips_name(depth, &name) {
            continue;
        }
        let from = entry.path();
        let to = dest.join(&name);
        let kind = fs_err::symlink_metadata(&from)?.file_type();
        if kind.is_symlink() {
            fs_err::os::unix::fs::symlink(fs_err::read_link(&from)?, &to)?;
        } else if kind.is_dir() {
            copy_dir(&from, &to, exclude, depth + 1)?;
        } else if kind.is_file() {
            fs_err::copy(&from, &to)?;
        } else {
            return Err(NarError::UnsupportedFileType(from).into());
        }
    }
    Ok(())
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Removes a tree that may be read-only (a store entry or a half-made staging folder).
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(meta) if !meta.is_dir() => return fs_err::remove_file(path),
        Ok(_) => {}
    }
    make_writable(path)?;
    fs_err::remove_dir_all(path)
}

fn make_writable(dir: &Path) -> std::io::Result<()> {
    set_mode(dir, 0o755)?;
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            make_writable(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
