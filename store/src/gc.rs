//! The store's life cycle: roots (registered like Nix's indirect roots), garbage
//! collection of what no root uses, and verification of every entry.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::lock::{FileLock, SharedUse};
use crate::store::{ENTRIES_DIR, GIT_DIR, LOCKS_DIR, Store, StoreError};

/// Where roots are registered, under the store root.
pub const ROOTS_DIR: &str = "roots";
/// Downloaded archives (a cache).
pub const ARCHIVES_DIR: &str = "archives-v1";
/// Plugin-set files of `berth run` (a cache).
pub const RUN_DIR: &str = "run-v1";
/// How old a `berth run` plugin-set file must be before `gc` removes it: a command started
/// from it may still read it.
pub const RUN_FILE_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// A registered root: a link in `roots/` to a lockfile or a server's data folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The link in `roots/`.
    pub link: PathBuf,
    /// What it points at.
    pub target: PathBuf,
}

/// What `gc` must keep: every entry, git cache and archive some root uses.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Store entry folder names (`<nix32>-<name>`).
    pub entries: HashSet<String>,
    /// Git cache folder names (under `git-v1/db/`).
    pub git_caches: HashSet<String>,
    /// nix32 of the archive hashes.
    pub archives: HashSet<String>,
    /// sha256 (hex) of agent wheels.
    pub wheels: HashSet<String>,
    /// Agent environment folder names (under `envs-v1/`).
    pub envs: HashSet<String>,
}

/// One thing `gc` removed (or would remove).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freed {
    /// Relative to the store root.
    pub path: String,
    /// Bytes of the files under it.
    pub bytes: u64,
}

/// The state of one store entry after re-hashing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryStatus {
    /// Its content hashes to its name.
    Intact,
    /// Its content hashes to something else.
    Corrupt {
        /// What it hashes to now (SRI).
        actual: String,
    },
    /// It cannot be read or hashed, or its name is not `<nix32>-<name>`.
    Unreadable(String),
}

impl Store {
    /// Registers `target` (a lockfile or a server data folder) as a root. The link is
    /// named by a digest of the absolute path, so registering again is a no-op.
    pub fn register_root(&self, target: &Path) -> Result<(), StoreError> {
        let target = match target.canonicalize() {
            Ok(path) => path,
            Err(_) => std::env::current_dir()?.join(target),
        };
        let name = digest16(target.as_os_str().as_encoded_bytes());
        let dir = self.root().join(ROOTS_DIR);
        let link = dir.join(&name);
        if std::fs::read_link(&link).is_ok_and(|t| t == target) {
            return Ok(());
        }
        fs_err::create_dir_all(&dir)?;
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        fs_err::os::unix::fs::symlink(&target, &tmp)?;
        fs_err::rename(&tmp, &link)?;
        Ok(())
    }

    /// The registered roots.
    pub fn roots(&self) -> Result<Vec<Root>, StoreError> {
        let dir = self.root().join(ROOTS_DIR);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut roots = Vec::new();
        for entry in entries {
            let link = entry?.path();
            if link
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            if let Ok(target) = std::fs::read_link(&link) {
                roots.push(Root { link, target });
            }
        }
        roots.sort_by(|a, b| a.link.cmp(&b.link));
        Ok(roots)
    }

    /// Forgets a root whose target is gone (a lockfile deleted or moved).
    pub fn remove_root(&self, root: &Root) -> Result<(), StoreError> {
        Ok(fs_err::remove_file(&root.link)?)
    }

    /// A shared hold on the store for as long as the value lives (see [`SharedUse`]).
    pub fn shared_use(&self, on_wait: impl FnOnce()) -> Result<SharedUse, StoreError> {
        Ok(SharedUse::acquire(&self.gc_lock_path(), on_wait)?)
    }

    /// [`Store::shared_use`] if no `gc` holds the store, else `None` at once.
    pub fn try_shared_use(&self) -> Result<Option<SharedUse>, StoreError> {
        Ok(SharedUse::try_acquire(&self.gc_lock_path())?)
    }

    fn gc_lock_path(&self) -> PathBuf {
        self.root().join(LOCKS_DIR).join("gc.lock")
    }

    /// Takes the store exclusively (waiting for running syncs), then removes every entry,
    /// git cache and archive that `live` does not name, abandoned staging folders, `berth
    /// run` files older than a day and the stat records of entries that are gone. With
    /// `dry_run`, only reports. `live` is computed by the caller from the roots while it
    /// holds the returned lock (see [`Store::gc_lock`]).
    pub fn collect_garbage(&self, live: &Live, dry_run: bool) -> Result<Vec<Freed>, StoreError> {
        let mut freed = Vec::new();
        let mut consider = |relative: String, path: PathBuf| -> Result<(), StoreError> {
            let bytes = disk_usage(&path);
            if !dry_run {
                self.remove_atomically(&path)?;
            }
            freed.push(Freed {
                path: relative,
                bytes,
            });
            Ok(())
        };
        for name in list(&self.root().join(ENTRIES_DIR))? {
            if !live.entries.contains(&name) {
                let nix32 = name.split('-').next().unwrap_or_default().to_owned();
                consider(
                    format!("{ENTRIES_DIR}/{name}"),
                    self.root().join(ENTRIES_DIR).join(&name),
                )?;
                if !dry_run {
                    let _ = std::fs::remove_file(
                        self.root()
                            .join(LOCKS_DIR)
                            .join(format!("entry-{nix32}.lock")),
                    );
                }
            }
        }
        let dbs = self.root().join(GIT_DIR).join("db");
        for name in list(&dbs)? {
            if !live.git_caches.contains(&name) {
                consider(format!("{GIT_DIR}/db/{name}"), dbs.join(&name))?;
            }
        }
        let archives = self.root().join(ARCHIVES_DIR);
        for name in list(&archives)? {
            let nix32 = name.split('.').next().unwrap_or_default();
            if !live.archives.contains(nix32) {
                consider(format!("{ARCHIVES_DIR}/{name}"), archives.join(&name))?;
            }
        }
        let wheels = self.root().join(crate::WHEELS_DIR);
        for name in list(&wheels)? {
            if !live.wheels.contains(&name) {
                consider(format!("{}/{name}", crate::WHEELS_DIR), wheels.join(&name))?;
            }
        }
        let envs = self.root().join(crate::ENVS_DIR);
        for name in list(&envs)? {
            if !live.envs.contains(&name) {
                consider(format!("{}/{name}", crate::ENVS_DIR), envs.join(&name))?;
            }
        }
        // A view is only links; it goes when an entry it leads to goes.
        let views = self.root().join(crate::VIEWS_DIR);
        for name in list(&views)? {
            if !Store::view_is_live(&views.join(&name), &live.entries) {
                consider(format!("{}/{name}", crate::VIEWS_DIR), views.join(&name))?;
            }
        }
        let runs = self.root().join(RUN_DIR);
        for name in list(&runs)? {
            let path = runs.join(&name);
            let old = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > RUN_FILE_MAX_AGE);
            if old {
                consider(format!("{RUN_DIR}/{name}"), path)?;
            }
        }
        if !dry_run {
            self.clean_tmp()?;
            // Stat records are bookkeeping, not reported: each goes with its entry.
            self.remove_stale_records()?;
        }
        Ok(freed)
    }

    /// The store-wide exclusive lock `gc` holds while it computes what is live and removes
    /// the rest; `on_wait` fires if a sync holds the store.
    pub fn gc_lock(&self, on_wait: impl FnOnce()) -> Result<FileLock, StoreError> {
        let path = self.gc_lock_path();
        Ok(FileLock::acquire(&path, on_wait)?)
    }

    /// Every entry folder name in `store-v1/`, sorted.
    pub fn entry_names(&self) -> Result<Vec<String>, StoreError> {
        list(&self.root().join(ENTRIES_DIR))
    }

    /// Re-hashes the entry `name` and compares with the hash in its name.
    pub fn check_entry(&self, name: &str) -> EntryStatus {
        let Some((nix32, _)) = name.split_once('-') else {
            return EntryStatus::Unreadable("the name is not `<nix32 hash>-<name>`".into());
        };
        match crate::nar::hash_path(&self.root().join(ENTRIES_DIR).join(name)) {
            Ok(actual) if actual.to_nix32() == nix32 => EntryStatus::Intact,
            Ok(actual) => EntryStatus::Corrupt {
                actual: actual.to_sri(),
            },
            Err(e) => EntryStatus::Unreadable(e.to_string()),
        }
    }

    /// Re-hashes the wheel `wheels-v1/<sha256>/<file>` and compares with its folder's name.
    pub fn check_wheel(&self, sha256: &str, file: &str) -> EntryStatus {
        match crate::sha256_file(&self.wheel_path(sha256, file)) {
            Ok(actual) if actual == sha256 => EntryStatus::Intact,
            Ok(actual) => EntryStatus::Corrupt { actual },
            Err(e) => EntryStatus::Unreadable(e.to_string()),
        }
    }

    /// Removes a wheel (`store verify --repair`).
    pub fn remove_wheel(&self, sha256: &str) -> Result<(), StoreError> {
        self.remove_atomically(&self.root().join(crate::WHEELS_DIR).join(sha256))
    }

    /// Removes an entry and its stat record (`store verify --repair`, and `sync` replacing
    /// a changed entry).
    pub fn remove_entry(&self, name: &str) -> Result<(), StoreError> {
        self.forget_check(name);
        self.remove_atomically(&self.root().join(ENTRIES_DIR).join(name))?;
        Ok(self.remove_record(name)?)
    }

    /// Removes a tree so that an interruption never leaves part of it in place: it is first
    /// renamed into `tmp/` (one atomic step), then deleted there. A process killed in
    /// between leaves only a folder in `tmp/`, which the next sync cleans.
    fn remove_atomically(&self, path: &Path) -> Result<(), StoreError> {
        let trash = self.stage()?;
        let target = trash.path().join("trash");
        // Moving a folder to a new parent needs write permission on it (for `..`).
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            use std::os::unix::fs::PermissionsExt;
            fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
        }
        fs_err::rename(path, &target)?;
        crate::fault::pause_at(crate::fault::GC_VICTIM_IN_TMP);
        drop(trash);
        Ok(())
    }
}

/// Names in `dir` not starting with `.`, sorted; empty if it does not exist.
fn list(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    Ok(names)
}

/// `bytes` for people: `512 B`, `64.0 KiB`, `256.0 MiB`.
pub fn format_size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// Bytes of the regular files under `path` (symlinks not followed).
pub fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| disk_usage(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}

fn digest16(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::Exclude;

    #[test]
    fn gc_keeps_live_entries_and_removes_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path().join("store"));
        let src = dir.path().join("src");
        fs_err::create_dir_all(&src).expect("mkdir");
        fs_err::write(src.join("a"), "a").expect("write");
        let keep = store
            .add_dir(&src, "keep", None, Exclude::NOTHING)
            .expect("add");
        fs_err::write(src.join("a"), "b").expect("write");
        let drop = store
            .add_dir(&src, "drop", None, Exclude::NOTHING)
            .expect("add");
        let keep_name = keep
            .path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let drop_name = drop
            .path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let live = Live {
            entries: [keep_name.clone()].into_iter().collect(),
            ..Live::default()
        };
        let dry = store.collect_garbage(&live, true).expect("dry run");
        assert_eq!(dry.len(), 1);
        assert!(drop.path.exists(), "a dry run removes nothing");
        let freed = store.collect_garbage(&live, false).expect("gc");
        assert_eq!(freed[0].path, format!("store-v1/{drop_name}"));
        assert_eq!(freed[0].bytes, 1);
        assert!(!drop.path.exists() && keep.path.exists());
        assert_eq!(store.check_entry(&keep_name), EntryStatus::Intact);
    }

    #[test]
    fn roots_are_links_to_absolute_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path().join("store"));
        let lock = dir.path().join("plugins.lock");
        fs_err::write(&lock, "version = 1\n").expect("write");
        store.register_root(&lock).expect("register");
        store.register_root(&lock).expect("idempotent");
        let roots = store.roots().expect("roots");
        assert_eq!(roots.len(), 1);
        assert_eq!(roots[0].target, lock.canonicalize().expect("canonical"));
    }
}
