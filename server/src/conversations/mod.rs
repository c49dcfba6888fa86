//! Where conversations are kept, and an in-memory index of them.
//!
//! - A **folder** (`--data-dir /var/lib/berth`): `<dir>/conversations/<id>/{plugins.lock,
//!   meta.json}`, written in a staging folder and renamed into place. Concurrent starts
//!   commit in groups: every request of a group writes its files, one `syncfs` makes them
//!   all durable, the renames follow and one `fsync` of the folder makes those durable;
//!   each request is answered once its own conversation is. The folder is this server's:
//!   everything is read into memory at start.
//! - **Object storage** (`file:///path` or `s3://bucket/prefix`), shared by a fleet: the
//!   objects `conversations/<id>/plugins.lock`, then `conversations/<id>/meta.json` (last:
//!   a conversation exists once its metadata does, and its lock is there by then), and
//!   `conversations/<id>/deleted`, the marker a delete writes before removing the rest.
//!   A server reads a conversation it has not seen on demand, lists the bucket's keys for
//!   `GET /api/conversations`, and checks the marker on every read, so a delete on one
//!   server is seen by all. Nothing another server needs is kept only in memory.
//!
//! Conversations are immutable, so the index is a cache that never goes stale, except for
//! deletions, which object storage's readers check for. A lock text is parsed once and
//! shared by every conversation that has it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use berth_lockfile_schema::{Lock, parse_lock};
use berth_transport::objects::ObjectStore;
use uuid::Uuid;

use crate::api::ConversationSummary;

mod bucket;
mod commit;
mod folder;
mod record;
mod types;

pub use crate::refused::{Refused, TooLarge};
pub use record::{MIN_RECORD_KEY_BYTES, RecordKey};
pub use types::{AnswerFields, DataDir, Indexed, LockedText, Meta, Page, SetJson, Stored};

use berth_store::unpoisoned;
use commit::{Done, GroupCommit, Job};

/// What [`Conversations::replace_lock`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// The new lock is stored.
    Done,
    /// There is no such conversation (any more).
    Gone,
    /// Its lock changed meanwhile; nothing was written.
    Moved,
}

/// The folder of a data folder that holds one folder per conversation, named by its id.
pub const CONVERSATIONS_DIR: &str = "conversations";
/// A conversation's lock, in its folder.
pub const LOCK_FILE: &str = "plugins.lock";
/// A conversation's metadata, written last.
pub const META_FILE: &str = "meta.json";
/// On object storage, the marker of a deleted conversation.
pub const DELETED_MARKER: &str = "deleted";

/// The largest `meta.json` any server reads: its metadata came in a request body, which is
/// at most [`crate::MAX_BODY_BYTES`], and a start whose record would be larger is refused
/// (413) before anything is written, so what one server writes every server can read.
pub const MAX_META_BYTES: u64 = crate::MAX_BODY_BYTES as u64;
/// The largest `plugins.lock` read from object storage (a conversation has at most
/// [`crate::MAX_PLUGINS`] plugins, a few hundred bytes each).
pub const MAX_LOCK_BYTES: u64 = 4 * 1024 * 1024;

/// Checks a lock read from object storage, which anyone with write access to the bucket
/// may have written: `Err` says why it is refused.
pub type LockCheck = Arc<dyn Fn(&Lock) -> Result<(), String> + Send + Sync>;

/// The conversations of one data folder or bucket.
pub struct Conversations {
    backing: Backing,
    /// The checks a lock read from object storage must pass (the server's source policy).
    check: LockCheck,
    /// The fleet's record key: every `meta.json` written carries its HMAC, and one read
    /// must.
    key: Option<RecordKey>,
    index: RwLock<BTreeMap<Uuid, Indexed>>,
    /// Lock texts already parsed, shared by every conversation (and request) with them.
    locks: Mutex<HashMap<String, std::sync::Weak<LockedText>>>,
}

impl std::fmt::Debug for Conversations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversations")
            .field("backing", &self.backing.label())
            .finish_non_exhaustive()
    }
}

enum Backing {
    Folder {
        root: PathBuf,
        group: GroupCommit,
    },
    Objects {
        url: String,
        store: Box<dyn ObjectStore>,
    },
}

impl Backing {
    fn label(&self) -> String {
        match self {
            Self::Folder { root, .. } => root.display().to_string(),
            Self::Objects { url, .. } => url.clone(),
        }
    }
}

fn invalid(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
}

fn key(id: Uuid, file: &str) -> String {
    format!("{CONVERSATIONS_DIR}/{id}/{file}")
}

impl Conversations {
    /// Opens `data`: a folder's conversations are all read (and returned, for the caller to
    /// check against the store); object storage is only checked to be reachable, and read
    /// on demand.
    pub fn open(
        data: &DataDir,
        check: LockCheck,
        key: Option<RecordKey>,
    ) -> std::io::Result<(Self, Vec<Stored>)> {
        match data {
            DataDir::Folder(dir) => Self::open_folder(dir, check, key),
            DataDir::Objects(url) => {
                let store = berth_transport::objects::open(url).map_err(|why| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("`{url}` is not a data folder berth can use: {why}"),
                    )
                })?;
                if store.read_only() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("`{url}` is read-only; conversations need `file://` or `s3://`"),
                    ));
                }
                // Reachable, and readable with the credentials given: fail at start, not
                // on the first request.
                store.list(&format!("{CONVERSATIONS_DIR}/"), None, 1)?;
                Ok((
                    Self {
                        backing: Backing::Objects {
                            url: url.clone(),
                            store,
                        },
                        check,
                        key,
                        index: RwLock::default(),
                        locks: Mutex::default(),
                    },
                    Vec::new(),
                ))
            }
        }
    }

    fn write_index(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<Uuid, Indexed>> {
        unpoisoned(self.index.write())
    }

    fn read_index(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Uuid, Indexed>> {
        unpoisoned(self.index.read())
    }

    /// Whether reads may need the bucket (and so a blocking thread); a folder's are all in
    /// memory but [`Conversations::get`]'s metadata.
    pub fn shared(&self) -> bool {
        matches!(self.backing, Backing::Objects { .. })
    }

    /// Whether the data folder or bucket answers.
    pub fn reachable(&self) -> Result<(), String> {
        match &self.backing {
            Backing::Folder { root, .. } => {
                if root.is_dir() {
                    Ok(())
                } else {
                    Err(format!(
                        "the data folder `{}` is not reachable",
                        root.display()
                    ))
                }
            }
            Backing::Objects { url, store } => store
                .list(&format!("{CONVERSATIONS_DIR}/"), None, 1)
                .map(drop)
                .map_err(|e| format!("the data store `{url}` is not reachable: {e}")),
        }
    }

    /// `text` parsed, or the copy already parsed by an earlier conversation or request.
    /// `label` names the text in a parse error.
    pub fn parse_once(
        &self,
        label: &str,
        text: &str,
    ) -> Result<Arc<LockedText>, berth_lockfile_schema::LockError> {
        if let Some(known) = self.known_lock(text) {
            return Ok(known);
        }
        let lock = parse_lock(label, text)?;
        Ok(self.intern(LockedText::new(lock, text.to_owned())))
    }

    /// The parsed copy of `text`, if one is alive.
    fn known_lock(&self, text: &str) -> Option<Arc<LockedText>> {
        unpoisoned(self.locks.lock())
            .get(text)
            .and_then(std::sync::Weak::upgrade)
    }

    /// The shared copy of `locked` (itself, when its text is new).
    pub fn intern(&self, locked: LockedText) -> Arc<LockedText> {
        let mut locks = unpoisoned(self.locks.lock());
        if let Some(known) = locks.get(&locked.text).and_then(std::sync::Weak::upgrade) {
            return known;
        }
        if locks.len() >= 4096 {
            locks.retain(|_, weak| weak.strong_count() > 0);
        }
        let text = locked.text.clone();
        let shared = Arc::new(locked);
        locks.insert(text, Arc::downgrade(&shared));
        shared
    }

    /// `meta` bound to the lock text `lock_text` (its digest, and with a record key its
    /// HMAC), as the bytes written, refused ([`TooLarge`], as an `InvalidInput` I/O
    /// error) past what readers read.
    pub fn record(&self, meta: &mut Meta, lock_text: &str) -> std::io::Result<Vec<u8>> {
        meta.bind(lock_text, self.key.as_ref());
        let text = meta.to_record();
        if text.len() as u64 > MAX_META_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                TooLarge {
                    bytes: text.len(),
                    limit: MAX_META_BYTES,
                },
            ));
        }
        Ok(text)
    }

    /// Refuses `metadata` whose record would be too large ([`TooLarge`]), before any work
    /// is done for it: a record is its metadata's text and a part of fixed size (an id, a
    /// time, a digest and an HMAC, whatever the lock).
    pub fn check_size(&self, metadata: &serde_json::value::RawValue) -> std::io::Result<()> {
        let null =
            serde_json::value::RawValue::from_string("null".to_owned()).expect("`null` is JSON");
        let rest = self.record(&mut Meta::new(null), "")?.len() - "null".len();
        let bytes = rest + metadata.get().len();
        if bytes as u64 > MAX_META_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                TooLarge {
                    bytes,
                    limit: MAX_META_BYTES,
                },
            ));
        }
        Ok(())
    }

    /// Saves a new conversation: its lock first, its metadata last, each durable before
    /// this returns. On failure nothing of it is visible, and nothing is left for the
    /// next start to clean.
    pub fn create(&self, meta: &mut Meta, lock: Arc<LockedText>) -> std::io::Result<()> {
        let meta_text = self.record(meta, &lock.text)?;
        match &self.backing {
            Backing::Folder { group, .. } => {
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                group.submit(Job {
                    id: meta.id,
                    lock_text: lock.clone(),
                    meta_text,
                    done: Done::Blocking(tx),
                })?;
                rx.recv()
                    .map_err(|_| std::io::Error::other("the commit thread is gone"))??;
            }
            Backing::Objects { store, .. } => {
                store.put_bytes(&key(meta.id, LOCK_FILE), lock.text.as_bytes())?;
                berth_store::fault::pause_at(berth_store::fault::CONVERSATION_BEFORE_META);
                store.put_bytes(&key(meta.id, META_FILE), &meta_text)?;
            }
        }
        self.write_index().insert(meta.id, indexed(meta, lock));
        Ok(())
    }

    /// [`Conversations::create`] for a folder, awaited instead of blocking a thread;
    /// `None` on object storage (whose writes block: use `create` on a blocking thread).
    pub fn create_async(
        &self,
        meta: &mut Meta,
        lock: Arc<LockedText>,
    ) -> Option<impl std::future::Future<Output = std::io::Result<()>> + use<'_>> {
        let Backing::Folder { group, .. } = &self.backing else {
            return None;
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let submitted = self.record(meta, &lock.text).and_then(|meta_text| {
            group.submit(Job {
                id: meta.id,
                lock_text: lock.clone(),
                meta_text,
                done: Done::Async(tx),
            })
        });
        let entry = indexed(meta, lock);
        Some(async move {
            submitted?;
            rx.await
                .map_err(|_| std::io::Error::other("the commit thread is gone"))??;
            self.write_index().insert(entry.summary.id, entry);
            Ok(())
        })
    }

    /// A conversation's lock: from memory, or (on object storage) from the bucket; `None`
    /// when there is no such conversation, or it was deleted.
    pub fn lock(&self, id: Uuid) -> std::io::Result<Option<Arc<LockedText>>> {
        let known = self.read_index().get(&id).map(|e| e.lock.clone());
        match &self.backing {
            Backing::Folder { .. } => Ok(known),
            Backing::Objects { store, .. } => match known {
                Some(lock) => {
                    if store.exists(&key(id, DELETED_MARKER))? {
                        self.write_index().remove(&id);
                        return Ok(None);
                    }
                    Ok(Some(lock))
                }
                None => Ok(self.fetch(store.as_ref(), id)?.map(|s| s.lock)),
            },
        }
    }

    /// Reads one conversation with its metadata, if it exists.
    pub fn get(&self, id: Uuid) -> std::io::Result<Option<Stored>> {
        match &self.backing {
            Backing::Folder { root, .. } => {
                if !self.read_index().contains_key(&id) {
                    return Ok(None);
                }
                self.read_dir_one(id, &root.join(id.to_string())).map(Some)
            }
            Backing::Objects { store, .. } => self.fetch(store.as_ref(), id),
        }
    }
    /// Up to `limit` conversations with ids after `cursor`, in id order.
    pub fn list(&self, cursor: Option<Uuid>, limit: usize) -> std::io::Result<Page> {
        let limit = limit.max(1);
        match &self.backing {
            Backing::Folder { .. } => {
                let index = self.read_index();
                let range = match cursor {
                    Some(c) => {
                        index.range((std::ops::Bound::Excluded(c), std::ops::Bound::Unbounded))
                    }
                    None => index.range(..),
                };
                let mut conversations: Vec<_> = range
                    .take(limit.saturating_add(1))
                    .map(|(_, e)| e.summary.clone())
                    .collect();
                Ok(page(&mut conversations, limit))
            }
            Backing::Objects { store, .. } => {
                let ids = self.list_ids(store.as_ref(), cursor, limit.saturating_add(1))?;
                let known: Vec<Option<ConversationSummary>> = {
                    let index = self.read_index();
                    ids.iter()
                        .map(|id| index.get(id).map(|e| e.summary.clone()))
                        .collect()
                };
                // The ones this server has not read yet, a few at a time.
                let missing: Vec<Uuid> = ids
                    .iter()
                    .zip(&known)
                    .filter(|(_, k)| k.is_none())
                    .map(|(id, _)| *id)
                    .collect();
                let fetched = self.fetch_many(store.as_ref(), &missing)?;
                let mut conversations: Vec<ConversationSummary> = ids
                    .iter()
                    .zip(known)
                    .filter_map(|(id, known)| known.or_else(|| fetched.get(id).cloned()))
                    .collect();
                Ok(page(&mut conversations, limit))
            }
        }
    }

    /// How many conversations this server knows of (on object storage: has read).
    pub fn len(&self) -> usize {
        self.read_index().len()
    }

    /// Removes a conversation. A folder's is renamed away first, so it vanishes at once,
    /// then deleted; on object storage the delete marker goes first (every server checks
    /// it), then the lock and metadata.
    pub fn delete(&self, id: Uuid) -> std::io::Result<bool> {
        match &self.backing {
            Backing::Folder { root, .. } => {
                let removed = self.write_index().remove(&id).is_some();
                if removed {
                    let dir = root.join(id.to_string());
                    let trash = root.join(format!(".trash-{id}"));
                    fs_err::rename(&dir, &trash)?;
                    fs_err::remove_dir_all(&trash)?;
                }
                Ok(removed)
            }
            Backing::Objects { store, .. } => {
                if self.lock(id)?.is_none() {
                    return Ok(false);
                }
                store.put_bytes(&key(id, DELETED_MARKER), b"")?;
                self.write_index().remove(&id);
                // The marker is the delete; these only free space (a failure is retried
                // by no one, and costs only the bytes).
                for file in [META_FILE, LOCK_FILE] {
                    if let Err(e) = store.delete(&key(id, file)) {
                        tracing::warn!("conversation {id}: could not remove `{file}`: {e}");
                    }
                }
                Ok(true)
            }
        }
    }
}

fn page(conversations: &mut Vec<ConversationSummary>, limit: usize) -> Page {
    let next_cursor = if conversations.len() > limit {
        conversations.truncate(limit);
        conversations.last().map(|c| c.id)
    } else {
        None
    };
    Page {
        conversations: std::mem::take(conversations),
        next_cursor,
    }
}

fn indexed(meta: &Meta, lock: Arc<LockedText>) -> Indexed {
    Indexed {
        summary: summary(meta, &lock.lock),
        lock,
    }
}

fn summary(meta: &Meta, lock: &Lock) -> ConversationSummary {
    ConversationSummary {
        id: meta.id,
        created_at: meta.created_at,
        plugins: lock.plugins.iter().map(|p| p.name.clone()).collect(),
    }
}
