//! Checked lookups: an entry is used only once its stat record (see [`crate::record`])
//! says it is unchanged since it was added, or it hashes to its name again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use berth_lockfile_schema::Sha256Hash;

use super::{Store, StoreEntry, StoreError};
use crate::nar;
use crate::record::{
    EntryTree, PINS_SUFFIX, RECORDS_DIR, SUFFIX, VERDICT_SUFFIX, matches_record, read_record,
    stat_walk,
};

/// [`Store::checked_lookup_all`] starts a thread per this many entries,
const ENTRIES_PER_THREAD: usize = 16;
/// up to this many threads (the calling one included).
const MAX_CHECK_THREADS: usize = 4;

/// An entry found unchanged, with its paths when its record was read
/// ([`Store::checked_lookup_all_with_trees`]).
pub type Listed = (StoreEntry, Option<EntryTree>);

impl Store {
    /// The entry with this hash and name if it is present and unchanged since it was
    /// added: the runtime and the server use this, never [`Store::lookup`], before reading
    /// an entry. `Ok(None)` when it is absent; [`StoreError::Tampered`] (naming the entry
    /// and what to run) when its content no longer hashes to its name.
    ///
    /// The check is an `lstat` of each path the entry's stat record lists (see
    /// [`RECORDS_DIR`]); only an entry that differs from its record, or that has no record,
    /// is re-hashed, and the record is then written afresh if the content is intact.
    /// Writing a record is best effort: a read-only store is checked by hashing.
    pub fn checked_lookup(
        &self,
        hash: &Sha256Hash,
        name: &str,
    ) -> Result<Option<StoreEntry>, StoreError> {
        self.checked_lookup_tree(hash, name, None)
    }

    /// [`Store::checked_lookup`], filling `tree` with the entry's paths when its record
    /// was read and matched (left empty when the entry was re-hashed or only its presence
    /// was asked).
    fn checked_lookup_tree(
        &self,
        hash: &Sha256Hash,
        name: &str,
        tree: Option<&mut EntryTree>,
    ) -> Result<Option<StoreEntry>, StoreError> {
        let path = self.entry_path(hash, name);
        let folder = entry_folder(&path);
        let remembered = self
            .recent_checks
            .as_ref()
            .and_then(|r| r.remembered(&folder));
        match (remembered, tree) {
            // Found unchanged within the window: only its presence is asked again (and its
            // paths, when asked for, are those the check listed).
            (Some(known), tree) if tree.is_none() || known.is_some() => {
                Ok(match std::fs::symlink_metadata(&path) {
                    Ok(meta) if meta.is_dir() => {
                        if let (Some(tree), Some(known)) = (tree, known) {
                            tree.clone_from(&known);
                        }
                        Some(StoreEntry { path, hash: *hash })
                    }
                    _ => None,
                })
            }
            (_, mut tree) => {
                let found =
                    self.checked_lookup_uncached(hash, name, path, &folder, tree.as_deref_mut());
                if let Some(recent) = &self.recent_checks {
                    match found {
                        Ok(Some(_)) => recent.found_unchanged(&folder, tree.map(|t| t.clone())),
                        _ => recent.forget(&folder),
                    }
                }
                found
            }
        }
    }

    /// [`Store::checked_lookup`] when it needs no more than an `lstat`, for the entry at
    /// `path` ([`Store::entry_path`]): `Some` (with whether the entry is present) when a
    /// check within the window found it unchanged, `None` when it must be checked in full.
    /// For callers that must not block (an async request handler).
    pub fn remembered_presence(&self, path: &Path) -> Option<bool> {
        let recent = self.recent_checks.as_ref()?;
        if !recent.holds(&entry_folder(path)) {
            return None;
        }
        Some(std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir()))
    }

    /// [`Store::checked_lookup`] without what is remembered.
    fn checked_lookup_uncached(
        &self,
        hash: &Sha256Hash,
        name: &str,
        path: PathBuf,
        folder: &str,
        mut tree: Option<&mut EntryTree>,
    ) -> Result<Option<StoreEntry>, StoreError> {
        // The record's `.` line stands for the entry's folder being there (and a folder).
        if read_record(&self.record_path(folder))
            .is_some_and(|r| matches_record(&path, &r, tree.as_deref_mut()))
        {
            return Ok(Some(StoreEntry { path, hash: *hash }));
        }
        if let Some(tree) = tree {
            tree.paths.clear();
        }
        let Some(entry) = self.lookup(hash, name) else {
            return Ok(None);
        };
        // Walked before hashing, so that the record written below describes content that
        // was hashed after the walk.
        let walk = stat_walk(&entry.path);
        match nar::hash_path(&entry.path) {
            Ok(actual) if actual == *hash => {
                if let Ok(walk) = walk
                    && let Err(e) = self.write_record(folder, &walk)
                {
                    tracing::debug!("could not write the stat record of `{folder}`: {e}");
                }
                Ok(Some(entry))
            }
            Ok(actual) => Err(StoreError::Tampered {
                name: name.to_owned(),
                path: entry.path,
                found: format!("it now hashes to `{}`", actual.to_sri()),
            }),
            // Removed while being hashed: another process repaired or collected it.
            Err(_) if std::fs::symlink_metadata(&entry.path).is_err() => Ok(None),
            Err(e) => Err(StoreError::Tampered {
                name: name.to_owned(),
                path: entry.path,
                found: format!("it cannot be hashed: {e}"),
            }),
        }
    }

    /// [`Store::checked_lookup`] of every `(hash, name)` of `wanted`, in that order, on a
    /// few threads when there are many (a check is mostly waiting on `lstat`), so checking
    /// a whole lock stays cheap: a no-op `sync` and every plugin set do this.
    pub fn checked_lookup_all(
        &self,
        wanted: &[(&Sha256Hash, &str)],
    ) -> Vec<Result<Option<StoreEntry>, StoreError>> {
        self.check_all(wanted, false)
            .into_iter()
            .map(|found| found.map(|entry| entry.map(|(entry, _)| entry)))
            .collect()
    }

    /// [`Store::checked_lookup_all`], each entry found with its paths as its record lists
    /// them (`None` when the entry was re-hashed instead, or only its presence was asked).
    pub fn checked_lookup_all_with_trees(
        &self,
        wanted: &[(&Sha256Hash, &str)],
    ) -> Vec<Result<Option<Listed>, StoreError>> {
        self.check_all(wanted, true)
    }

    fn check_all(
        &self,
        wanted: &[(&Sha256Hash, &str)],
        trees: bool,
    ) -> Vec<Result<Option<Listed>, StoreError>> {
        let check = |(hash, name): &(&Sha256Hash, &str)| {
            let mut tree = EntryTree::default();
            let found = self.checked_lookup_tree(hash, name, trees.then_some(&mut tree));
            found.map(|entry| entry.map(|entry| (entry, (!tree.paths.is_empty()).then_some(tree))))
        };
        let threads = wanted
            .len()
            .div_ceil(ENTRIES_PER_THREAD)
            .min(MAX_CHECK_THREADS);
        if threads <= 1 {
            return wanted.iter().map(check).collect();
        }
        let next = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(wanted) = wanted.get(i) else {
                    return done;
                };
                done.push((i, check(wanted)));
            }
        };
        let mut results = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            let mut results = work();
            for helper in helpers {
                results.extend(helper.join().expect("checking entries does not panic"));
            }
            results
        });
        results.sort_unstable_by_key(|(i, _)| *i);
        results.into_iter().map(|(_, result)| result).collect()
    }

    /// Moves a changed entry out of the way (into `tmp/`, then deleted there, so a process
    /// still reading it keeps its open files) and forgets its record, so the entry is
    /// missing and can be added again. The caller holds the entry's lock.
    pub fn discard_entry(&self, hash: &Sha256Hash, name: &str) -> Result<(), StoreError> {
        self.remove_entry(&entry_folder(&self.entry_path(hash, name)))
    }

    /// Forgets that the entry `folder` was found unchanged (it is being removed).
    pub(crate) fn forget_check(&self, folder: &str) {
        if let Some(recent) = &self.recent_checks {
            recent.forget(folder);
        }
    }

    /// `meta-v1/<folder>.stat`, for the entry folder `<nix32>-<name>`.
    fn record_path(&self, folder: &str) -> PathBuf {
        self.root()
            .join(RECORDS_DIR)
            .join(format!("{folder}{SUFFIX}"))
    }

    /// `meta-v1/<folder>.verdict`, for the entry folder `<nix32>-<name>` (see `verdicts.rs`).
    pub(super) fn verdict_path(&self, folder: &str) -> PathBuf {
        self.root()
            .join(RECORDS_DIR)
            .join(format!("{folder}{VERDICT_SUFFIX}"))
    }

    /// Records how the entry `folder` looks now: every line of `record` must have been
    /// taken before what it vouches for was read.
    pub(crate) fn write_record(&self, folder: &str, record: &[u8]) -> std::io::Result<()> {
        self.write_meta(&self.record_path(folder), folder, record)
    }

    /// Writes `content` to `path` under `meta-v1/` for the entry `folder`: beside it first,
    /// then renamed over it, so a reader sees the old file or the new one.
    pub(super) fn write_meta(
        &self,
        path: &Path,
        folder: &str,
        content: &[u8],
    ) -> std::io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = self.root().join(RECORDS_DIR);
        fs_err::create_dir_all(&dir)?;
        let tmp = dir.join(format!(
            ".{folder}.{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = fs_err::File::create(&tmp)
            .and_then(|mut file| file.write_all(content))
            .and_then(|()| fs_err::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// Makes `path` under `meta-v1/` a symlink to `target` for the entry `folder`: made
    /// beside it first, then renamed over it, so a reader sees the old one or the new one.
    pub(super) fn link_meta(&self, path: &Path, folder: &str, target: &str) -> std::io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = self.root().join(RECORDS_DIR);
        fs_err::create_dir_all(&dir)?;
        let tmp = dir.join(format!(
            ".{folder}.{}-{}.link.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let made =
            std::os::unix::fs::symlink(target, &tmp).and_then(|()| fs_err::rename(&tmp, path));
        if made.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        made
    }

    /// Forgets the record, the verdict and the pin records of the entry `folder` (its
    /// entry is gone).
    pub(crate) fn remove_record(&self, folder: &str) -> std::io::Result<()> {
        for path in [self.record_path(folder), self.verdict_path(folder)] {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let pins = self
            .root()
            .join(RECORDS_DIR)
            .join(format!("{folder}{PINS_SUFFIX}"));
        match std::fs::remove_dir_all(pins) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes the records and verdicts whose entry is gone, and those left half-written
    /// by a process that died; returns how many. Called by `gc`, which holds the store
    /// exclusively, so no entry is being added meanwhile.
    pub(crate) fn remove_stale_records(&self) -> Result<usize, StoreError> {
        let dir = self.root().join(RECORDS_DIR);
        let files = match std::fs::read_dir(&dir) {
            Ok(files) => files,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let entries = self.root().join(crate::ENTRIES_DIR);
        let mut removed = 0;
        for file in files {
            let file = file?;
            let name = file.file_name();
            let name = name.to_string_lossy();
            let stale = match name
                .strip_suffix(SUFFIX)
                .or_else(|| name.strip_suffix(VERDICT_SUFFIX))
                .or_else(|| name.strip_suffix(PINS_SUFFIX))
            {
                Some(folder) if !name.starts_with('.') => {
                    std::fs::symlink_metadata(entries.join(folder)).is_err()
                }
                _ => true,
            };
            if !stale {
                continue;
            }
            if file.file_type()?.is_dir() {
                fs_err::remove_dir_all(file.path())?;
            } else {
                fs_err::remove_file(file.path())?;
            }
            removed += 1;
        }
        Ok(removed)
    }
}

/// The folder name `<nix32>-<name>` of an entry path.
fn entry_folder(path: &Path) -> String {
    path.file_name()
        .expect("entry paths end in their folder")
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests;
