//! Conversations on disk: `<data-dir>/conversations/<id>/{plugins.lock,meta.json}`, created
//! in a staging folder and renamed into place, and an in-memory index of them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use berth_lockfile_schema::{Lock, parse_lock};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::api::ConversationSummary;

/// The folder of a data folder that holds one folder per conversation, named by its id.
pub const CONVERSATIONS_DIR: &str = "conversations";
/// A conversation's lock, in its folder.
pub const LOCK_FILE: &str = "plugins.lock";

/// `meta.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub id: Uuid,
    pub created_at: u64,
    #[serde(default)]
    pub metadata: serde_json::Value,
}

/// The conversations of one data folder.
#[derive(Debug)]
pub struct Conversations {
    root: PathBuf,
    index: RwLock<BTreeMap<Uuid, Indexed>>,
}

/// What the index keeps of a conversation: enough to answer every read but the metadata
/// without touching the disk. Conversations with the same lock share one copy of it.
#[derive(Debug, Clone)]
pub struct Indexed {
    pub summary: ConversationSummary,
    pub lock: Arc<LockedText>,
}

/// A lock and its exact text.
#[derive(Debug)]
pub struct LockedText {
    pub lock: Lock,
    pub text: String,
}

/// One conversation as read back from disk.
#[derive(Debug)]
pub struct Stored {
    pub meta: Meta,
    pub lock: Lock,
    pub lock_text: String,
}

impl Conversations {
    /// The conversations under `data_dir`, read from disk (with their locks, for the caller
    /// to check against the store).
    pub fn open(data_dir: &Path) -> std::io::Result<(Self, Vec<Stored>)> {
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
        // Reading many small files is I/O bound: a few threads, each on a slice.
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 8);
        let chunk = dirs.len().div_ceil(threads).max(1);
        let loaded: Vec<Stored> = std::thread::scope(|scope| {
            let handles: Vec<_> = dirs
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .filter_map(|(id, dir)| match read_one(dir) {
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
        let mut shared: HashMap<&str, Arc<LockedText>> = HashMap::new();
        let index = loaded
            .iter()
            .map(|s| {
                let lock = shared
                    .entry(s.lock_text.as_str())
                    .or_insert_with(|| {
                        Arc::new(LockedText {
                            lock: s.lock.clone(),
                            text: s.lock_text.clone(),
                        })
                    })
                    .clone();
                (
                    s.meta.id,
                    Indexed {
                        summary: summary(&s.meta, &s.lock),
                        lock,
                    },
                )
            })
            .collect();
        Ok((
            Self {
                root,
                index: RwLock::new(index),
            },
            loaded,
        ))
    }

    /// Saves a new conversation atomically: written in a staging folder, `meta.json` last,
    /// then renamed to its id.
    /// On failure (a full disk, say) the staging folder is removed at once, so nothing is
    /// left for the next start to clean.
    pub fn create(&self, meta: &Meta, lock: Arc<LockedText>) -> std::io::Result<()> {
        let tmp = self.root.join(format!(".tmp-{}", meta.id));
        let written = Self::write_staged(&tmp, meta, &lock.text)
            .and_then(|()| fs_err::rename(&tmp, self.root.join(meta.id.to_string())));
        if let Err(e) = written {
            if let Err(cleanup) = std::fs::remove_dir_all(&tmp)
                && cleanup.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(
                    "could not remove the staging folder `{}`: {cleanup}",
                    tmp.display()
                );
            }
            return Err(e);
        }
        self.index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(
                meta.id,
                Indexed {
                    summary: summary(meta, &lock.lock),
                    lock,
                },
            );
        Ok(())
    }

    /// Writes a conversation's files into `tmp`, `meta.json` last.
    fn write_staged(tmp: &Path, meta: &Meta, lock_text: &str) -> std::io::Result<()> {
        fs_err::create_dir_all(tmp)?;
        write_synced(&tmp.join(LOCK_FILE), lock_text.as_bytes())?;
        let meta_text = serde_json::to_vec_pretty(meta).map_err(std::io::Error::other)?;
        write_synced(&tmp.join("meta.json"), &meta_text)
    }

    /// A conversation's lock, from memory.
    pub fn lock(&self, id: Uuid) -> Option<Arc<LockedText>> {
        self.index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
            .map(|e| e.lock.clone())
    }

    /// Reads one conversation, if it exists.
    pub fn get(&self, id: Uuid) -> std::io::Result<Option<Stored>> {
        if !self.contains(id) {
            return Ok(None);
        }
        read_one(&self.root.join(id.to_string())).map(Some)
    }

    pub fn contains(&self, id: Uuid) -> bool {
        self.index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&id)
    }

    pub fn list(&self) -> Vec<ConversationSummary> {
        self.index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .map(|e| e.summary.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Removes a conversation: renamed away first, so it vanishes at once, then deleted.
    pub fn delete(&self, id: Uuid) -> std::io::Result<bool> {
        let removed = self
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id)
            .is_some();
        if removed {
            let dir = self.root.join(id.to_string());
            let trash = self.root.join(format!(".trash-{id}"));
            fs_err::rename(&dir, &trash)?;
            fs_err::remove_dir_all(&trash)?;
        }
        Ok(removed)
    }
}

fn read_one(dir: &Path) -> std::io::Result<Stored> {
    let meta: Meta = serde_json::from_slice(&fs_err::read(dir.join("meta.json"))?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let lock_path = dir.join(LOCK_FILE);
    let lock_text = fs_err::read_to_string(&lock_path)?;
    let lock = parse_lock(&lock_path.display().to_string(), &lock_text)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    Ok(Stored {
        meta,
        lock,
        lock_text,
    })
}

fn summary(meta: &Meta, lock: &Lock) -> ConversationSummary {
    ConversationSummary {
        id: meta.id,
        created_at: meta.created_at,
        plugins: lock.plugins.iter().map(|p| p.name.clone()).collect(),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = fs_err::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
