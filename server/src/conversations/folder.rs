//! Conversations in a local folder only this server uses: everything read into memory at
//! start, each conversation read from its folder (its lock checked against the digest its
//! metadata records), and a conversation's lock replaced with its metadata in one step.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use uuid::Uuid;

use super::{
    Backing, CONVERSATIONS_DIR, Conversations, GroupCommit, LOCK_FILE, LockCheck, LockedText,
    META_FILE, Meta, Mutex, RecordKey, Replaced, RwLock, Stored, indexed, invalid, key,
};

impl Conversations {
    pub(super) fn open_folder(
        data_dir: &Path,
        check: LockCheck,
        key: Option<RecordKey>,
    ) -> std::io::Result<(Self, Vec<Stored>)> {
        let root = data_dir.join(CONVERSATIONS_DIR);
        fs_err::create_dir_all(&root)?;
        let mut dirs: Vec<(Uuid, PathBuf)> = Vec::new();
        for entry in fs_err::read_dir(&root)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Ok(id) = Uuid::parse_str(&name) {
                dirs.push((id, entry.path()));
            } else if name.starts_with(".tmp-") || name.starts_with(".trash-") {
                // Left by a crash mid-create or mid-delete: never a visible conversation.
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let this = Self {
            backing: Backing::Folder {
                group: GroupCommit::start(root.clone())?,
                root,
            },
            check,
            key,
            index: RwLock::default(),
            locks: Mutex::default(),
        };
        // Reading many small files is I/O bound: a few threads, each on a slice.
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 8);
        let chunk = dirs.len().div_ceil(threads).max(1);
        let loaded: Vec<Stored> = std::thread::scope(|scope| {
            let handles: Vec<_> = dirs
                .chunks(chunk)
                .map(|part| {
                    let this = &this;
                    scope.spawn(move || {
                        part.iter()
                            .filter_map(|(id, dir)| match this.read_dir_one(*id, dir) {
                                Ok(stored) => Some(stored),
                                Err(e) => {
                                    tracing::warn!("conversation {id}: unreadable ({e}); skipped");
                                    None
                                }
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        {
            let mut index = this.write_index();
            for s in &loaded {
                index.insert(s.meta.id, indexed(&s.meta, s.lock.clone()));
            }
        }
        Ok((this, loaded))
    }

    /// Reads the conversation `id` in `dir`, its lock checked against its metadata.
    pub(super) fn read_dir_one(&self, id: Uuid, dir: &Path) -> std::io::Result<Stored> {
        let meta: Meta =
            serde_json::from_slice(&fs_err::read(dir.join(META_FILE))?).map_err(invalid)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock_text = fs_err::read_to_string(&lock_path)?;
        let lock = self
            .parse_once(&lock_path.display().to_string(), &lock_text)
            .map_err(invalid)?;
        let objects = (key(id, META_FILE), key(id, LOCK_FILE));
        meta.check(
            id,
            (&objects.0, &objects.1),
            lock.digest(),
            self.key.as_ref(),
        )
        .map_err(super::Refused::into_io)?;
        Ok(Stored { meta, lock })
    }

    /// Replaces conversation `id`'s lock `previous` with `lock` (a plugin loaded
    /// mid-conversation), with its metadata bound to the new lock, durable before this
    /// returns: both written into a staging folder that is swapped with the conversation's
    /// in one step (`RENAME_EXCHANGE`), so a reader or a crash sees the old pair or the new
    /// one. [`Replaced::Moved`] when its lock is no longer `previous` (another load stored
    /// first). Object storage's conversations are shared by a fleet whose servers keep
    /// them as immutable: refused there (`Unsupported`).
    pub fn replace_lock(
        &self,
        id: Uuid,
        previous: &Arc<LockedText>,
        lock: Arc<LockedText>,
    ) -> std::io::Result<Replaced> {
        let Backing::Folder { root, .. } = &self.backing else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "loading a plugin into a conversation needs a data folder: on object storage a fleet keeps conversations as they started",
            ));
        };
        // Held while writing: replacements of one data folder go one at a time.
        let mut index = self.write_index();
        let Some(entry) = index.get_mut(&id) else {
            return Ok(Replaced::Gone);
        };
        if !Arc::ptr_eq(&entry.lock, previous) {
            return Ok(Replaced::Moved);
        }
        let dir = root.join(id.to_string());
        let mut meta = self.read_dir_one(id, &dir)?.meta;
        let meta_text = self.record(&mut meta, &lock.text)?;
        // Left by a crash, like a start's staging folder: removed at the next start.
        let staged = root.join(format!(".tmp-{id}-load"));
        let _ = std::fs::remove_dir_all(&staged);
        fs_err::create_dir(&staged)?;
        for (name, bytes) in [(LOCK_FILE, lock.text.as_bytes()), (META_FILE, &meta_text)] {
            let mut file = fs_err::File::create(staged.join(name))?;
            std::io::Write::write_all(&mut file, bytes)?;
            file.sync_all()?;
        }
        fs_err::File::open(&staged)?.sync_all()?;
        swap(&staged, &dir)?;
        fs_err::File::open(root)?.sync_all()?;
        // The old pair, now in the staging folder.
        let _ = std::fs::remove_dir_all(&staged);
        entry.summary.plugins = lock.lock.plugins.iter().map(|p| p.name.clone()).collect();
        entry.lock = lock;
        Ok(Replaced::Done)
    }
}

/// Swaps two folders in one step (Linux's `RENAME_EXCHANGE`); elsewhere, moves `b` aside
/// and `a` into its place.
fn swap(a: &Path, b: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(|e| {
            std::io::Error::new(
                std::io::Error::from(e).kind(),
                format!("swapping `{}` and `{}`: {e}", a.display(), b.display()),
            )
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let aside = b.with_extension("swap");
        fs_err::rename(b, &aside)?;
        fs_err::rename(a, b)?;
        fs_err::rename(&aside, a)
    }
}
