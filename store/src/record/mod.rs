//! Stat records: what each store entry's files looked like when berth last knew the entry
//! to be intact, so that a changed entry is noticed before it is used without re-hashing
//! every entry on every use.
//!
//! A record lives beside the entries, in `meta-v1/<nix32>-<name>.stat` (an entry itself
//! stays exactly its NAR content). It lists the entry's folder (as `.`) and every path
//! under it, in NAR order, each with its mode, size, inode, mtime and ctime. Checking an
//! entry is one `lstat` per recorded path, compared with the record, and nothing else: a
//! writer can set mtime back (`touch -d`) but not ctime, which the kernel sets on every
//! change to a file's content, mode or links; a file replaced gets a new inode; a file
//! removed is missing; a file added, removed or renamed changes its folder's mtime and
//! ctime (POSIX), so the folders' lines stand for their listings and no folder is read.
//! A path that differs, or an entry without a record (a store written by an older berth),
//! sends the entry to be re-hashed: when the content still hashes to the entry's name (a
//! `chmod`, a `touch`, a copied store), the record is written afresh; otherwise the entry
//! is reported as changed.
//!
//! Every line of a record is taken *before* the content it vouches for is read: a file's
//! stat before it is hashed, a folder's stat before it is listed. A change made after that
//! shows in the next check. The one change this cannot see is a rewrite of a file to the
//! same size within the same clock tick (a few milliseconds) as berth's own last change to
//! it, since the kernel may give both the same ctime (newer kernels give a changed file a
//! newer time once its time has been read); `berth store verify` re-hashes everything.
//! Nor does a record stop someone who can write the store from rewriting the record too:
//! it catches changes made behind berth's back (an editor, a script, a process running as
//! root), it is not a signature.

pub(crate) mod format;

pub(crate) use format::{Stat, committed_record, stat_walk, tree_of_record};
pub(crate) use format::{matches_record, read_record};

/// An entry's paths as its stat record lists them, handed out right after every one was
/// found unchanged on disk ([`crate::Store::checked_lookup_all_with_trees`]): a reader of
/// the entry learns what is in it without listing its folders or asking for each path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryTree {
    /// In NAR order (a folder before its contents, names sorted bytewise), the entry
    /// itself first as `.`.
    pub paths: Vec<TreePath>,
}

/// One path of an [`EntryTree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreePath {
    /// Relative to the entry, `/`-separated; `.` for the entry itself.
    pub path: Vec<u8>,
    /// `st_mode`, with the file type bits.
    pub mode: u32,
    /// `st_size`.
    pub size: u64,
    /// `st_mtime` and its nanoseconds: a copy of the file made with its time compares
    /// equal without asking the disk for the store file's again.
    pub mtime: (i64, i64),
}

/// Where stat records live, under the store root.
pub const RECORDS_DIR: &str = "meta-v1";

/// What a record file is named after: the entry's folder name plus this.
pub(crate) const SUFFIX: &str = ".stat";

/// What an entry's verdict file is named after, beside its record (`store/verdicts.rs`).
pub(crate) const VERDICT_SUFFIX: &str = ".verdict";

/// What the folder of an entry's pin records is named after, beside its record
/// (`store/pins.rs`).
pub(crate) const PINS_SUFFIX: &str = ".pins";

/// When entries were last found unchanged, with their paths when the check listed them
/// (the server remembers this for a second, so a burst of requests for one set checks its
/// entries once; a command remembers it while it runs, so the entries it has just added
/// or checked are not checked again by the next step of the same command).
#[derive(Debug)]
pub(crate) struct RecentChecks {
    window: std::time::Duration,
    checked: std::sync::Mutex<Remembered>,
}

type Remembered =
    std::collections::HashMap<String, (std::time::Instant, Option<std::sync::Arc<EntryTree>>)>;

impl RecentChecks {
    pub(crate) fn new(window: std::time::Duration) -> Self {
        Self {
            window,
            checked: std::sync::Mutex::default(),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Remembered> {
        crate::poison::unpoisoned(self.checked.lock())
    }

    /// Whether the entry `folder` was found unchanged within the window.
    pub(crate) fn holds(&self, folder: &str) -> bool {
        self.remembered(folder).is_some()
    }

    /// `Some` when the entry `folder` was found unchanged within the window, with its
    /// paths if that check listed them.
    pub(crate) fn remembered(&self, folder: &str) -> Option<Option<std::sync::Arc<EntryTree>>> {
        self.entries()
            .get(folder)
            .filter(|(at, _)| at.elapsed() < self.window)
            .map(|(_, tree)| tree.clone())
    }

    /// Remembers that `folder` was found unchanged now, with its paths if they were listed.
    pub(crate) fn found_unchanged(&self, folder: &str, tree: Option<EntryTree>) {
        let at = std::time::Instant::now();
        let tree = tree
            .filter(|t| !t.paths.is_empty())
            .map(std::sync::Arc::new);
        self.entries().insert(folder.to_owned(), (at, tree));
    }

    /// Forgets that `folder` was found unchanged.
    pub(crate) fn forget(&self, folder: &str) {
        self.entries().remove(folder);
    }
}
