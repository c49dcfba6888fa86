//! A binary cache in a local folder (`file:///path`), the layout `nix copy --to file://`
//! writes. Objects are written beside their place and renamed into it.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::Backend;

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

impl Backend for FileBackend {
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

    fn is_local(&self) -> bool {
        true
    }

    fn scratch(&self) -> io::Result<PathBuf> {
        // Objects are copied into place from here (see `put_file`), so any folder does.
        Ok(std::env::temp_dir())
    }
}
