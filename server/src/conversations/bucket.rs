//! Reading conversations from object storage: one on demand, and the live ones by listing
//! the bucket's keys (removing the lock a killed server left without its metadata).

use std::collections::HashMap;

use berth_transport::objects::ObjectStore;
use uuid::Uuid;

use super::{
    CONVERSATIONS_DIR, Conversations, DELETED_MARKER, LOCK_FILE, MAX_LOCK_BYTES, MAX_META_BYTES,
    META_FILE, Meta, Stored, indexed, invalid, key, summary,
};
use crate::api::ConversationSummary;

/// How old a conversation's lock without its metadata must be to be taken for the leftover
/// of a server killed mid-start. The metadata follows the lock at once, so an hour is far
/// past any start still under way.
const ORPHAN_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// What a bucket listing showed of one conversation id.
struct Seen {
    id: Uuid,
    meta: bool,
    deleted: bool,
    /// When its lock was written, if it has one.
    lock_written: Option<std::time::SystemTime>,
}

impl Conversations {
    /// Reads a conversation from the bucket (its lock from memory when known) and indexes
    /// it; `None` when it has no metadata yet, or a delete marker.
    pub(super) fn fetch(
        &self,
        store: &dyn ObjectStore,
        id: Uuid,
    ) -> std::io::Result<Option<Stored>> {
        let Some(meta_bytes) = get_limited(store, &key(id, META_FILE), MAX_META_BYTES)? else {
            self.write_index().remove(&id);
            return Ok(None);
        };
        if store.exists(&key(id, DELETED_MARKER))? {
            self.write_index().remove(&id);
            return Ok(None);
        }
        let meta_key = key(id, META_FILE);
        let meta: Meta = serde_json::from_slice(&meta_bytes).map_err(|e| {
            invalid(format!(
                "`{meta_key}` is not a conversation's metadata: {e}"
            ))
        })?;
        let lock_key = key(id, LOCK_FILE);
        let known = self.read_index().get(&id).map(|e| e.lock.clone());
        let lock = match known {
            Some(lock) => lock,
            None => {
                let text = get_limited(store, &lock_key, MAX_LOCK_BYTES)?.ok_or_else(|| {
                    invalid(format!(
                        "`{lock_key}` is missing, though its meta.json is there"
                    ))
                })?;
                let text = String::from_utf8(text).map_err(invalid)?;
                let lock = self.parse_once(&lock_key, &text).map_err(invalid)?;
                // Anyone with write access to the bucket may have written it: it passes
                // this server's source policy as a posted lock does, before anything in it
                // is fetched or served.
                (self.check)(&lock.lock).map_err(|why| {
                    invalid(format!("conversation {id}: `{lock_key}` is refused: {why}"))
                })?;
                lock
            }
        };
        // The lock is the one this metadata was written with (and, with the fleet's key,
        // the metadata is a server's): else one of them was written by someone else. A
        // lock read before is checked against the metadata as it is now.
        meta.check(id, (&meta_key, &lock_key), lock.digest(), self.key.as_ref())
            .map_err(super::Refused::into_io)?;
        self.write_index().insert(id, indexed(&meta, lock.clone()));
        Ok(Some(Stored { meta, lock }))
    }

    /// The ids of live conversations after `cursor` in the bucket, at most `want`.
    pub(super) fn list_ids(
        &self,
        store: &dyn ObjectStore,
        cursor: Option<Uuid>,
        want: usize,
    ) -> std::io::Result<Vec<Uuid>> {
        let prefix = format!("{CONVERSATIONS_DIR}/");
        // `<id>0` sorts after every `<id>/…` key and before the next id.
        let mut after = cursor.map(|c| format!("{prefix}{c}0"));
        let mut ids = Vec::new();
        // The keys of the id being read.
        let mut current: Option<Seen> = None;
        loop {
            let listing = store.list(&prefix, after.as_deref(), 1000)?;
            for object in &listing.objects {
                let Some((id, file)) = object
                    .key
                    .strip_prefix(&prefix)
                    .and_then(|rest| rest.split_once('/'))
                else {
                    continue;
                };
                let Ok(id) = Uuid::parse_str(id) else {
                    continue;
                };
                if current.as_ref().is_none_or(|seen| seen.id != id) {
                    if let Some(seen) = current.take() {
                        self.finish_listed(store, seen, &mut ids);
                    }
                    if ids.len() >= want {
                        return Ok(ids);
                    }
                    current = Some(Seen {
                        id,
                        meta: false,
                        deleted: false,
                        lock_written: None,
                    });
                }
                if let Some(seen) = &mut current {
                    match file {
                        META_FILE => seen.meta = true,
                        DELETED_MARKER => seen.deleted = true,
                        LOCK_FILE => {
                            seen.lock_written =
                                Some(object.modified.unwrap_or(std::time::SystemTime::now()));
                        }
                        _ => {}
                    }
                }
            }
            match listing.objects.last() {
                Some(last) if listing.truncated => after = Some(last.key.clone()),
                _ => break,
            }
        }
        if let Some(seen) = current {
            self.finish_listed(store, seen, &mut ids);
        }
        ids.truncate(want);
        Ok(ids)
    }

    /// Adds a listed id whose keys are all read, if it is a conversation. A lock without
    /// metadata older than [`ORPHAN_AGE`] was left by a server killed between the two
    /// writes (which follow each other at once): it is removed, best effort.
    fn finish_listed(&self, store: &dyn ObjectStore, seen: Seen, ids: &mut Vec<Uuid>) {
        if seen.meta && !seen.deleted {
            ids.push(seen.id);
            return;
        }
        let orphaned = !seen.meta
            && !seen.deleted
            && seen
                .lock_written
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age > ORPHAN_AGE);
        if orphaned {
            match store.delete(&key(seen.id, LOCK_FILE)) {
                Ok(()) => tracing::info!(
                    "removed the lock of conversation {}, left without its metadata by a server stopped mid-start",
                    seen.id
                ),
                Err(e) => tracing::warn!(
                    "could not remove the lock of conversation {} left without its metadata: {e}",
                    seen.id
                ),
            }
        }
    }

    /// Reads the conversations `ids` from the bucket, eight at a time; the deleted ones are
    /// left out.
    pub(super) fn fetch_many(
        &self,
        store: &dyn ObjectStore,
        ids: &[Uuid],
    ) -> std::io::Result<HashMap<Uuid, ConversationSummary>> {
        let chunk = ids.len().div_ceil(8).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = ids
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut out = Vec::new();
                        for id in part {
                            match self.fetch(store, *id) {
                                Ok(Some(stored)) => {
                                    out.push((*id, summary(&stored.meta, &stored.lock.lock)));
                                }
                                Ok(None) => {}
                                // A corrupt or refused object is one conversation's
                                // problem: logged, and the rest are listed.
                                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                                    tracing::warn!("listing conversations: skipped {id}: {e}");
                                }
                                Err(e) => return Err(e),
                            }
                        }
                        Ok::<_, std::io::Error>(out)
                    })
                })
                .collect();
            let mut all = HashMap::new();
            for handle in handles {
                let part = handle
                    .join()
                    .map_err(|_| std::io::Error::other("a listing thread panicked"))??;
                all.extend(part);
            }
            Ok(all)
        })
    }
}

/// The object `key`, refused unread past `limit` bytes: a bucket object may have been
/// written by anyone with access to the bucket.
fn get_limited(store: &dyn ObjectStore, key: &str, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(reader) = store.open(key)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(invalid(format!(
            "`{key}` is over berth's limit of {limit} bytes for this object; it was not read"
        )));
    }
    Ok(Some(bytes))
}
