//! Objects in a local folder (`file:///path`): for a binary cache, the layout `nix copy
//! --to file://` writes. Objects are written beside their place and renamed into it.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::{Listed, Listing, ObjectStore};

pub(super) struct FileBackend {
    root: PathBuf,
}

impl FileBackend {
    pub(super) fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }
}

impl ObjectStore for FileBackend {
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn Read + Send>>> {
        match fs_err::File::open(self.path(key)) {
            Ok(file) => Ok(Some(Box::new(file))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn exists(&self, key: &str) -> io::Result<bool> {
        self.path(key).try_exists()
    }

    fn put_file(&self, key: &str, path: &Path) -> io::Result<()> {
        let target = self.path(key);
        let parent = target.parent().expect("objects live in the cache folder");
        fs_err::create_dir_all(parent)?;
        // Durable before it is visible: a crash leaves the old object or the whole new one.
        fs_err::File::open(path)?.sync_all()?;
        let tmp = tempfile::NamedTempFile::new_in(parent)?;
        fs_err::copy(path, tmp.path())?;
        tmp.as_file().sync_all()?;
        tmp.persist(&target).map_err(|e| e.error)?;
        // Nix and web servers read caches as other users: objects are world-readable.
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&target, std::fs::Permissions::from_mode(0o644))?;
        Ok(())
    }

    fn put_bytes(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let target = self.path(key);
        let parent = target.parent().expect("objects live in the store folder");
        fs_err::create_dir_all(parent)?;
        let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
        tmp.write_all(bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&target).map_err(|e| e.error)?;
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&target, std::fs::Permissions::from_mode(0o644))?;
        // The new name is durable too: a crash after this returns keeps the object.
        fs_err::File::open(parent)?.sync_all()
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        match fs_err::remove_file(self.path(key)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn list(&self, prefix: &str, start_after: Option<&str>, max: usize) -> io::Result<Listing> {
        // Every key under the folder that holds the prefix, walked in full and sorted: a
        // local folder is small next to a bucket.
        let (dir, _) = prefix.rsplit_once('/').unwrap_or(("", prefix));
        let mut keys = Vec::new();
        let mut pending = vec![dir.to_owned()];
        while let Some(rel) = pending.pop() {
            let path = if rel.is_empty() {
                self.root.clone()
            } else {
                self.root.join(&rel)
            };
            let entries = match fs_err::read_dir(&path) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                // Files being written (`NamedTempFile`'s `.tmp…`) are not objects yet.
                if name.starts_with(".tmp") {
                    continue;
                }
                let key = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                if entry.file_type()?.is_dir() {
                    if key.starts_with(prefix) || prefix.starts_with(&key) {
                        pending.push(key);
                    }
                } else if key.starts_with(prefix) && start_after.is_none_or(|after| *key > *after) {
                    let modified = entry.metadata().and_then(|m| m.modified()).ok();
                    keys.push(Listed { key, modified });
                }
            }
        }
        keys.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        let truncated = keys.len() > max;
        keys.truncate(max);
        Ok(Listing {
            objects: keys,
            truncated,
        })
    }

    fn is_local(&self) -> bool {
        true
    }

    fn scratch(&self) -> io::Result<PathBuf> {
        // Objects are copied into place from here (see `put_file`), so any folder does.
        Ok(std::env::temp_dir())
    }
}
