//! Conversations in a local folder only this server uses: everything read into memory at
//! start, each conversation read from its folder.

use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::{
    Backing, CONVERSATIONS_DIR, Conversations, GroupCommit, LOCK_FILE, LockCheck, META_FILE, Meta,
    Mutex, RwLock, Stored, indexed, invalid,
};

impl Conversations {
    pub(super) fn open_folder(
        data_dir: &Path,
        check: LockCheck,
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
                            .filter_map(|(id, dir)| match this.read_dir_one(dir) {
                                Ok(stored) if stored.meta.id == *id => Some(stored),
                                Ok(_) => {
                                    tracing::warn!(
                                        "conversation {id}: meta.json names another id; skipped"
                                    );
                                    None
                                }
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

    pub(super) fn read_dir_one(&self, dir: &Path) -> std::io::Result<Stored> {
        let meta: Meta =
            serde_json::from_slice(&fs_err::read(dir.join(META_FILE))?).map_err(invalid)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock_text = fs_err::read_to_string(&lock_path)?;
        let lock = self
            .parse_once(&lock_path.display().to_string(), &lock_text)
            .map_err(invalid)?;
        Ok(Stored { meta, lock })
    }
}
