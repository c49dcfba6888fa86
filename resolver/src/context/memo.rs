//! Resolutions the runs of one process share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use berth_store::lock_unpoisoned;
use gix::ObjectId;

/// Ref resolutions and tag listings, keyed by git cache, shared by the lock runs of one
/// process. A run only reuses what was resolved after it started, which is as fresh as
/// resolving again: concurrent runs (a server starting many conversations) then share one
/// listing and one fetch per repository, and a later run still sees upstream's changes.
#[derive(Debug, Clone, Default)]
pub struct SharedResolutions {
    refs: Arc<Mutex<HashMap<RefKey, (Instant, ObjectId)>>>,
    tags: Arc<Mutex<HashMap<String, (Instant, TagList)>>>,
}

/// A git cache and a ref in it (`""`: the default branch).
pub(crate) type RefKey = (String, String);
/// Tag names and the commits they point to.
pub(crate) type TagList = Vec<(String, ObjectId)>;

impl SharedResolutions {
    /// Where `key` pointed, when resolved since `since`.
    pub(crate) fn rev(&self, key: &RefKey, since: Instant) -> Option<ObjectId> {
        lock_unpoisoned(&self.refs)
            .get(key)
            .filter(|(at, _)| *at >= since)
            .map(|(_, id)| *id)
    }

    pub(crate) fn remember_rev(&self, key: RefKey, id: ObjectId) {
        lock_unpoisoned(&self.refs).insert(key, (Instant::now(), id));
    }

    /// The tags of the git cache `cache`, when listed since `since`.
    pub(crate) fn tags(&self, cache: &str, since: Instant) -> Option<TagList> {
        lock_unpoisoned(&self.tags)
            .get(cache)
            .filter(|(at, _)| *at >= since)
            .map(|(_, tags)| tags.clone())
    }

    pub(crate) fn remember_tags(&self, cache: &str, tags: TagList) {
        lock_unpoisoned(&self.tags).insert(cache.to_owned(), (Instant::now(), tags));
    }
}
