use crate::record::format::Stat;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::nar::Exclude;

/// A store with one entry, `demo`, of a skill, a script and a folder.
fn store_with_entry() -> (tempfile::TempDir, Store, StoreEntry) {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = demo_tree(dir.path());
    let store = Store::new(dir.path().join("store"));
    let entry = store
        .add_dir(&src, "demo", None, Exclude::NOTHING)
        .expect("add");
    (dir, store, entry)
}

/// The folder `src` under `dir` with `demo`'s files: a skill, a script, a folder.
fn demo_tree(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("src");
    fs_err::create_dir_all(src.join("skills/a")).expect("mkdir");
    fs_err::write(src.join("skills/a/SKILL.md"), "hi\n").expect("write");
    fs_err::write(src.join("run.sh"), "#!/bin/sh\n").expect("write");
    src
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
fn the_walk_that_hashes_a_commit_seals_it_and_takes_its_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    fs_err::create_dir_all(src.join("a/b/c")).expect("mkdir");
    fs_err::write(src.join("a/b/c/deep.md"), "deep\n").expect("write");
    fs_err::write(src.join("a/run.sh"), "#!/bin/sh\n").expect("write");
    fs_err::set_permissions(src.join("a/run.sh"), std::fs::Permissions::from_mode(0o750))
        .expect("chmod");
    // Already read-only, as a git export writes it: left as it is.
    fs_err::write(src.join("ro.md"), "ro\n").expect("write");
    fs_err::set_permissions(src.join("ro.md"), std::fs::Permissions::from_mode(0o444))
        .expect("chmod");
    std::os::unix::fs::symlink("a/run.sh", src.join("link")).expect("symlink");
    let store = Store::new(dir.path().join("store"));
    let entry = store
        .add_dir(&src, "sealed", None, Exclude::NOTHING)
        .expect("add");
    assert_eq!(entry.hash, nar::hash_path(&src).expect("hash"));
    let mode = |p: &str| {
        fs_err::symlink_metadata(entry.path.join(p))
            .expect("stat")
            .permissions()
            .mode()
            & 0o7777
    };
    let modes: Vec<u32> = ["a", "a/b", "a/b/c", "a/b/c/deep.md", "a/run.sh", "ro.md"]
        .into_iter()
        .map(mode)
        .collect();
    assert_eq!(modes, [0o555, 0o555, 0o555, 0o444, 0o555, 0o444]);
    // The record the walk took is the one a walk of the entry takes now: no re-hash.
    let written = record(&store, &entry).expect("a record");
    assert_eq!(written, stat_walk(&entry.path).expect("walk"));
    assert!(matches_record(&entry.path, &written, None));
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
            _ => fs_err::rename(folder.join("SKILL.md"), folder.join("skill.md")).expect("rename"),
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

#[test]
fn a_store_that_remembers_hands_out_the_paths_of_what_it_added_within_its_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = demo_tree(dir.path());
    let root = dir.path().join("store");
    let hour = std::time::Duration::from_secs(3600);
    let remembering = Store::new(&root).remembering_checks_for(hour);
    let entry = remembering
        .add_dir(&src, "demo", None, Exclude::NOTHING)
        .expect("add");
    let wanted = [(&entry.hash, "demo")];
    let tree_of = |store: &Store| match store.checked_lookup_all_with_trees(&wanted).remove(0) {
        Ok(Some((_, tree))) => tree,
        other => panic!("expected the entry, got {other:?}"),
    };
    // Added by this store: its paths come from the record its commit took, and are those
    // a full check of the entry lists.
    let remembered = tree_of(&remembering).expect("a tree");
    assert_eq!(Some(remembered), tree_of(&Store::new(&root)));
    // Within the window only presence is asked; a store that does not remember, or
    // whose window has passed, checks every path and refuses a changed entry.
    let file = entry.path.join("run.sh");
    writable(&file);
    fs_err::write(&file, "#!/bin/sh\nexit 1\n").expect("tamper");
    assert!(matches!(
        remembering.checked_lookup(&entry.hash, "demo"),
        Ok(Some(_))
    ));
    let passed = Store::new(&root).remembering_checks_for(std::time::Duration::ZERO);
    for store in [Store::new(&root), passed] {
        assert!(matches!(
            store.checked_lookup(&entry.hash, "demo"),
            Err(StoreError::Tampered { .. })
        ));
    }
}
