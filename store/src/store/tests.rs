use super::*;

fn tree(dir: &Path) {
    fs_err::create_dir_all(dir.join("skills/a")).expect("mkdir");
    fs_err::write(dir.join("skills/a/SKILL.md"), "hi\n").expect("write");
    fs_err::write(dir.join("run.sh"), "#!/bin/sh\n").expect("write");
    set_mode(&dir.join("run.sh"), 0o755).expect("chmod");
    std::os::unix::fs::symlink("run.sh", dir.join("link")).expect("symlink");
    fs_err::create_dir_all(dir.join(".git")).expect("mkdir");
}

#[test]
fn add_dir_is_verified_read_only_and_content_addressed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    tree(&src);
    let store = Store::new(dir.path().join("store"));
    let exclude = Exclude::top_level(&[".git"]);
    let entry = store.add_dir(&src, "demo", None, exclude).expect("add");
    assert_eq!(
        entry.hash,
        nar::hash_path_excluding(&src, exclude).expect("hash")
    );
    assert_eq!(store.lookup(&entry.hash, "demo"), Some(entry.clone()));
    assert!(!entry.path.join(".git").exists());
    let mode = |p: &Path| fs_err::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&entry.path), 0o555);
    assert_eq!(mode(&entry.path.join("run.sh")), 0o555);
    assert_eq!(mode(&entry.path.join("skills/a/SKILL.md")), 0o444);
    assert!(store.verify_entry(&entry).expect("verify"));
    // Adding the same content again is a no-op that yields the same entry.
    assert_eq!(
        store
            .add_dir(&src, "demo", Some(&entry.hash), exclude)
            .expect("again"),
        entry
    );
    // Nothing is left in tmp/.
    assert_eq!(
        fs_err::read_dir(dir.path().join("store/tmp"))
            .expect("tmp")
            .count(),
        0
    );
}

#[test]
fn a_mismatch_adds_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    tree(&src);
    let store = Store::new(dir.path().join("store"));
    let wrong = Sha256Hash::from_bytes([7; 32]);
    let err = store
        .add_dir(&src, "demo", Some(&wrong), Exclude::top_level(&[".git"]))
        .expect_err("mismatch");
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&wrong.to_sri()));
    let entries = dir.path().join("store/store-v1");
    assert!(!entries.exists() || fs_err::read_dir(&entries).expect("ls").count() == 0);
    assert_eq!(
        fs_err::read_dir(dir.path().join("store/tmp"))
            .expect("tmp")
            .count(),
        0
    );
}

#[test]
fn clean_tmp_removes_only_abandoned_staging() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path());
    let live = store.stage().expect("stage");
    fs_err::write(live.path().join("f"), "x").expect("write");
    // What a killed process leaves: a folder and an unlocked lock file.
    let dead = dir.path().join("tmp/stage-1-2-3");
    fs_err::create_dir_all(dead.join("sub")).expect("mkdir");
    make_read_only(&dead, true).expect("chmod");
    fs_err::write(dir.path().join("tmp/stage-1-2-3.lock"), "").expect("write");
    fs_err::write(dir.path().join("tmp/stage-4-5-6.lock"), "").expect("write");
    assert_eq!(store.clean_tmp().expect("clean"), 2);
    assert!(!dead.exists());
    assert!(
        live.path().join("f").exists(),
        "a live staging folder is kept"
    );
    drop(live);
    assert!(
        fs_err::read_dir(dir.path().join("tmp"))
            .expect("ls")
            .next()
            .is_none()
    );
}

#[test]
fn entry_names_are_file_name_safe() {
    assert_eq!(entry_name("review-tools"), "review-tools");
    assert_eq!(entry_name("my plugin/é"), "my_plugin__");
    assert_eq!(entry_name(".hidden"), "_.hidden");
}

/// Makes a tree read-only: files `0444` (`0555` if the owner could execute), folders `0555`.
/// The root folder itself is left alone unless `include_root`.
fn make_read_only(root: &Path, include_root: bool) -> std::io::Result<()> {
    for entry in fs_err::read_dir(root)? {
        let entry = entry?;
        let path = entry.path();
        // An `lstat` relative to the open folder.
        let meta = entry.metadata()?;
        if meta.is_dir() {
            make_read_only(&path, true)?;
        } else if meta.is_file() {
            let mode = meta.permissions().mode() & 0o7777;
            let wanted = if mode & 0o100 != 0 { 0o555 } else { 0o444 };
            // A file written read-only already (a git export) is left as it is.
            if mode != wanted {
                set_mode(&path, wanted)?;
            }
        }
    }
    if include_root {
        set_mode(root, 0o555)?;
    }
    Ok(())
}
