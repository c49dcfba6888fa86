//! Checked lookups: an entry is used only once its stat record (see [`crate::record`])
//! says it is unchanged since it was added, or it hashes to its name again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use berth_lockfile_schema::Sha256Hash;

use super::{Store, StoreEntry, StoreError};
use crate::nar;
use crate::record::{
    EntryTree, RECORDS_DIR, SUFFIX, VERDICT_SUFFIX, matches_record, read_record, stat_walk,
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
        if let Some(recent) = &self.recent_checks
            && recent.holds(&folder)
        {
            // Found unchanged within the window: only its presence is asked again.
            return Ok(match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_dir() => Some(StoreEntry { path, hash: *hash }),
                _ => None,
            });
        }
        let found = self.checked_lookup_uncached(hash, name, path, &folder, tree);
        if let Some(recent) = &self.recent_checks {
            recent.set(&folder, matches!(found, Ok(Some(_))));
        }
        found
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
            recent.set(folder, false);
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

    /// Forgets the record and the verdict of the entry `folder` (its entry is gone).
    pub(crate) fn remove_record(&self, folder: &str) -> std::io::Result<()> {
        for path in [self.record_path(folder), self.verdict_path(folder)] {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
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
            {
                Some(folder) if !name.starts_with('.') => {
                    std::fs::symlink_metadata(entries.join(folder)).is_err()
                }
                _ => true,
            };
            if stale {
                fs_err::remove_file(file.path())?;
                removed += 1;
            }
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
mod tests {
    use crate::record::format::Stat;
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::nar::Exclude;

    /// A store with one entry, `demo`, of a skill, a script and a folder.
    fn store_with_entry() -> (tempfile::TempDir, Store, StoreEntry) {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("src");
        fs_err::create_dir_all(src.join("skills/a")).expect("mkdir");
        fs_err::write(src.join("skills/a/SKILL.md"), "hi\n").expect("write");
        fs_err::write(src.join("run.sh"), "#!/bin/sh\n").expect("write");
        let store = Store::new(dir.path().join("store"));
        let entry = store
            .add_dir(&src, "demo", None, Exclude::NOTHING)
            .expect("add");
        (dir, store, entry)
    }

    fn record(store: &Store, entry: &StoreEntry) -> Option<Vec<u8>> {
        std::fs::read(store.record_path(&entry_folder(&entry.path))).ok()
    }

    /// Makes a file of the entry writable, as root can write it anyway.
    fn writable(path: &Path) {
        fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }

    #[test]
    fn a_committed_entry_has_a_record_that_matches_it() {
        let (_dir, store, entry) = store_with_entry();
        let written = record(&store, &entry).expect("a record");
        assert_eq!(written, stat_walk(&entry.path).expect("walk"));
        let text = String::from_utf8(written).expect("text");
        let paths: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.rsplit(' ').next().expect("path"))
            .collect();
        assert_eq!(
            paths,
            [".", "run.sh", "skills", "skills/a", "skills/a/SKILL.md"]
        );
        assert_eq!(
            store.checked_lookup(&entry.hash, "demo").expect("check"),
            Some(entry)
        );
    }

    #[test]
    fn a_changed_file_is_refused_and_names_the_entry() {
        let (_dir, store, entry) = store_with_entry();
        let skill = entry.path.join("skills/a/SKILL.md");
        writable(&skill);
        fs_err::OpenOptions::new()
            .append(true)
            .open(&skill)
            .and_then(|mut f| f.write_all(b"evil\n"))
            .expect("append");
        let err = store
            .checked_lookup(&entry.hash, "demo")
            .expect_err("changed");
        assert!(matches!(err, StoreError::Tampered { .. }), "{err}");
        let message = err.to_string();
        for needle in [
            "`demo`",
            &entry.path.display().to_string(),
            "berth plugins sync",
        ] {
            assert!(message.contains(needle), "{needle} not in {message}");
        }
        store.discard_entry(&entry.hash, "demo").expect("discard");
        assert!(!entry.path.exists());
        assert!(record(&store, &entry).is_none(), "its record went with it");
        assert_eq!(
            store.checked_lookup(&entry.hash, "demo").expect("gone"),
            None
        );
    }

    #[test]
    fn a_same_size_rewrite_with_mtime_set_back_is_caught_by_ctime() {
        let (_dir, store, entry) = store_with_entry();
        let skill = entry.path.join("skills/a/SKILL.md");
        let before = fs_err::metadata(&skill).expect("stat");
        writable(&skill);
        fs_err::write(&skill, "ho\n").expect("rewrite");
        let file = fs_err::File::options()
            .write(true)
            .open(&skill)
            .expect("open");
        file.set_modified(before.modified().expect("mtime"))
            .expect("set mtime back");
        fs_err::set_permissions(&skill, before.permissions()).expect("chmod back");
        assert!(matches!(
            store.checked_lookup(&entry.hash, "demo"),
            Err(StoreError::Tampered { .. })
        ));
    }

    #[test]
    fn a_mode_or_time_change_alone_is_rehashed_and_refreshes_the_record() {
        let (_dir, store, entry) = store_with_entry();
        let old = record(&store, &entry).expect("record");
        let script = entry.path.join("run.sh");
        writable(&script);
        fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        assert_eq!(
            store.checked_lookup(&entry.hash, "demo").expect("intact"),
            Some(entry.clone())
        );
        let new = record(&store, &entry).expect("record");
        assert_ne!(new, old, "the record was refreshed");
        assert_eq!(new, stat_walk(&entry.path).expect("walk"));
    }

    #[test]
    fn an_entry_without_a_record_is_hashed_once_and_gets_one() {
        let (_dir, store, entry) = store_with_entry();
        fs_err::remove_file(store.record_path(&entry_folder(&entry.path))).expect("rm");
        assert_eq!(
            store.checked_lookup(&entry.hash, "demo").expect("intact"),
            Some(entry.clone())
        );
        assert_eq!(
            record(&store, &entry),
            Some(stat_walk(&entry.path).expect("walk"))
        );
    }

    #[test]
    fn added_and_removed_files_are_caught() {
        for change in ["add", "remove", "add-dir", "add-top", "rename"] {
            let (_dir, store, entry) = store_with_entry();
            let folder = entry.path.join("skills/a");
            writable(&folder);
            writable(&entry.path);
            match change {
                "add" => fs_err::write(folder.join("extra.md"), "x").expect("add"),
                "remove" => fs_err::remove_file(folder.join("SKILL.md")).expect("remove"),
                "add-dir" => fs_err::create_dir(folder.join("empty")).expect("mkdir"),
                "add-top" => fs_err::write(entry.path.join("extra.md"), "x").expect("add"),
                _ => fs_err::rename(folder.join("SKILL.md"), folder.join("skill.md"))
                    .expect("rename"),
            }
            assert!(
                matches!(
                    store.checked_lookup(&entry.hash, "demo"),
                    Err(StoreError::Tampered { .. })
                ),
                "{change}"
            );
        }
    }

    #[test]
    fn a_file_replaced_by_an_equal_copy_passes_after_a_rehash() {
        let (_dir, store, entry) = store_with_entry();
        let old = record(&store, &entry).expect("record");
        let folder = entry.path.join("skills/a");
        writable(&folder);
        fs_err::write(folder.join("copy"), "hi\n").expect("copy");
        fs_err::set_permissions(folder.join("copy"), std::fs::Permissions::from_mode(0o444))
            .expect("chmod");
        fs_err::rename(folder.join("copy"), folder.join("SKILL.md")).expect("replace");
        assert_eq!(
            store.checked_lookup(&entry.hash, "demo").expect("intact"),
            Some(entry.clone())
        );
        assert_ne!(record(&store, &entry).expect("record"), old);
        assert!(matches_record(
            &entry.path,
            &record(&store, &entry).expect("record"),
            None
        ));
    }

    #[test]
    fn a_checked_entry_comes_with_the_paths_its_record_lists() {
        let (_dir, store, entry) = store_with_entry();
        let wanted = [(&entry.hash, "demo")];
        let found = store.checked_lookup_all_with_trees(&wanted);
        let Some(Ok(Some((got, Some(tree))))) = found.into_iter().next() else {
            panic!("the entry is found with its tree");
        };
        assert_eq!(got, entry);
        let paths: Vec<(&[u8], u32, u64)> = tree
            .paths
            .iter()
            .map(|p| (p.path.as_slice(), p.mode & 0o170_000, p.size))
            .collect();
        assert_eq!(
            paths,
            [
                (b".".as_slice(), 0o040_000, paths[0].2),
                (b"run.sh", 0o100_000, 10),
                (b"skills", 0o040_000, paths[2].2),
                (b"skills/a", 0o040_000, paths[3].2),
                (b"skills/a/SKILL.md", 0o100_000, 3),
            ]
        );
        // A changed entry is re-hashed (and refused): no tree is handed out for it.
        let file = entry.path.join("run.sh");
        writable(&file);
        fs_err::write(&file, "#!/bin/sh\nexit 1\n").expect("tamper");
        let found = store.checked_lookup_all_with_trees(&wanted);
        assert!(
            matches!(found[0], Err(StoreError::Tampered { .. })),
            "{found:?}"
        );
    }

    #[test]
    fn gc_forgets_records_of_removed_entries() {
        let (_dir, store, entry) = store_with_entry();
        let folder = entry_folder(&entry.path);
        fs_err::write(store.root().join(RECORDS_DIR).join(".x.1-2.tmp"), "").expect("w");
        store
            .collect_garbage(&crate::Live::default(), true)
            .expect("dry run");
        assert!(record(&store, &entry).is_some(), "a dry run keeps it");
        store
            .collect_garbage(&crate::Live::default(), false)
            .expect("gc");
        assert!(!entry.path.exists() && record(&store, &entry).is_none());
        let left: Vec<_> = fs_err::read_dir(store.root().join(RECORDS_DIR))
            .expect("ls")
            .collect();
        assert!(left.is_empty(), "{folder}: {left:?}");
    }

    #[test]
    fn paths_with_newlines_and_backslashes_are_escaped() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs_err::write(dir.path().join("a\nb\\c"), "").expect("write");
        let walk = stat_walk(dir.path()).expect("walk");
        let text = String::from_utf8(walk.clone()).expect("text");
        assert!(text.ends_with(" a\\nb\\\\c\n"), "{text:?}");
        assert_eq!(text.lines().count(), 3);
        let mut path = Vec::new();
        let line = text.lines().nth(2).expect("the file's line");
        let stat = Stat::parse_line(line.as_bytes(), &mut path).expect("parses");
        assert_eq!(path, b"a\nb\\c");
        let meta = fs_err::symlink_metadata(dir.path().join("a\nb\\c")).expect("stat");
        assert_eq!(stat, Stat::of_metadata(&meta));
        assert!(matches_record(dir.path(), &walk, None));
    }
}
