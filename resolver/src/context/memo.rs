//! Resolutions the runs of one process share.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use berth_lockfile_schema::Sha256Hash;
use berth_store::unpoisoned;
use gix::ObjectId;

/// Ref resolutions and tag listings, keyed by git cache, shared by the lock runs of one
/// process. A run only reuses what was resolved after it started, which is as fresh as
/// resolving again: concurrent runs (a server starting many conversations) then share one
/// listing and one fetch per repository, and a later run still sees upstream's changes.
///
/// It also keeps the trees a lock serialised while hashing them ([`KeptTree`]), so that
/// the sync that follows in the same process (`berth plugins lock` stores what it locked,
/// to review it) writes them out without reading the source again.
#[derive(Debug, Clone, Default)]
pub struct SharedResolutions {
    refs: Arc<Mutex<HashMap<RefKey, (Instant, ObjectId)>>>,
    tags: Arc<Mutex<HashMap<String, (Instant, TagList)>>>,
    trees: Arc<Mutex<KeptTrees>>,
    /// The signature objects a lock read while it had a repository on this machine open:
    /// reading who signed then needs no second opening.
    objects: Arc<Mutex<HashMap<ObjectsKey, (Instant, SignedObjects)>>>,
}

/// A repository on this machine (its cache's name), a commit and the tag the plugin
/// names.
pub(crate) type ObjectsKey = (String, ObjectId, Option<String>);

/// A commit object and, if the tag is an annotated tag of it, the tag object.
pub(crate) type SignedObjects = (Vec<u8>, Option<Vec<u8>>);

/// A plugin tree as a NAR, serialised when it was hashed (the walk that hashed it warned of
/// the submodules left out; writing it out does not warn again).
#[derive(Debug, Clone)]
pub(crate) struct KeptTree {
    pub(crate) nar: Vec<u8>,
}

/// The kept trees by NAR hash, oldest first, within a memory budget.
#[derive(Debug, Default)]
struct KeptTrees {
    trees: HashMap<Sha256Hash, KeptTree>,
    order: VecDeque<Sha256Hash>,
    bytes: usize,
}

/// The most a process keeps of the trees it hashed: past it the oldest go (their sync
/// then reads them from the source again).
const KEPT_TREES_BYTES: usize = 128 << 20;

/// The largest tree a lock keeps as a NAR.
pub(crate) const KEPT_TREE_BYTES: usize = 32 << 20;

/// A git cache and a ref in it (`""`: the default branch).
pub(crate) type RefKey = (String, String);
/// Tag names and the commits they point to.
pub(crate) type TagList = Vec<(String, ObjectId)>;

impl SharedResolutions {
    /// Where `key` pointed, when resolved since `since`.
    pub(crate) fn rev(&self, key: &RefKey, since: Instant) -> Option<ObjectId> {
        unpoisoned(self.refs.lock())
            .get(key)
            .filter(|(at, _)| *at >= since)
            .map(|(_, id)| *id)
    }

    pub(crate) fn remember_rev(&self, key: RefKey, id: ObjectId) {
        unpoisoned(self.refs.lock()).insert(key, (Instant::now(), id));
    }

    /// The tags of the git cache `cache`, when listed since `since`.
    pub(crate) fn tags(&self, cache: &str, since: Instant) -> Option<TagList> {
        unpoisoned(self.tags.lock())
            .get(cache)
            .filter(|(at, _)| *at >= since)
            .map(|(_, tags)| tags.clone())
    }

    pub(crate) fn remember_tags(&self, cache: &str, tags: TagList) {
        unpoisoned(self.tags.lock()).insert(cache.to_owned(), (Instant::now(), tags));
    }

    /// The memo of a process whose caller shares none of its own (the CLI): the runs of
    /// one command (a lock, then the sync that stores what it locked) share it.
    pub(crate) fn of_process() -> Self {
        static PROCESS: OnceLock<SharedResolutions> = OnceLock::new();
        PROCESS.get_or_init(Self::default).clone()
    }

    /// Keeps `tree`, whose NAR hashes to `hash`, for the sync that adds it.
    pub(crate) fn keep_tree(&self, hash: Sha256Hash, tree: KeptTree) {
        let mut kept = unpoisoned(self.trees.lock());
        if kept.trees.contains_key(&hash) {
            return;
        }
        kept.bytes += tree.nar.len();
        kept.order.push_back(hash);
        kept.trees.insert(hash, tree);
        while kept.bytes > KEPT_TREES_BYTES
            && let Some(oldest) = kept.order.pop_front()
        {
            if let Some(gone) = kept.trees.remove(&oldest) {
                kept.bytes -= gone.nar.len();
            }
        }
    }

    /// Takes the objects read for `key` since `since` (older ones are dropped with it):
    /// the signature step uses them once, and a server's memo does not keep them.
    pub(crate) fn take_objects(&self, key: &ObjectsKey, since: Instant) -> Option<SignedObjects> {
        unpoisoned(self.objects.lock())
            .remove(key)
            .filter(|(at, _)| *at >= since)
            .map(|(_, objects)| objects)
    }

    pub(crate) fn remember_objects(&self, key: ObjectsKey, objects: SignedObjects) {
        unpoisoned(self.objects.lock()).insert(key, (Instant::now(), objects));
    }

    /// Takes the tree kept for `hash`, if any.
    pub(crate) fn take_tree(&self, hash: &Sha256Hash) -> Option<KeptTree> {
        let mut kept = unpoisoned(self.trees.lock());
        let tree = kept.trees.remove(hash)?;
        kept.order.retain(|h| h != hash);
        kept.bytes -= tree.nar.len();
        Some(tree)
    }
}
