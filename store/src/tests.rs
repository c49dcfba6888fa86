//! berth's NAR hash must equal what the real `nix hash path` prints, on trees with every
//! feature NAR encodes. Runs when `nix` is on PATH, else skips, except in CI (`CI` set),
//! where a missing `nix` fails (`.ci/run` installs it).

// The CI rule for a missing tool, shared with the end-to-end tests.
#[path = "../../tests/it/common/skip.rs"]
mod common;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;

fn nix_hash_path(dir: &Path, home: &Path) -> Option<String> {
    let out = Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command",
            "hash",
            "path",
        ])
        .arg(dir)
        .env("HOME", home)
        .output();
    match out {
        Ok(out) if out.status.success() => {
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        Ok(out) => panic!(
            "nix hash path failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("could not run nix: {e}"),
    }
}

fn write(path: &Path, content: &[u8], mode: u32) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A tree with executables, symlinks of every kind, nested and empty folders, non-ASCII
/// names and names whose byte order differs from git's tree order.
fn handmade(root: &Path) {
    write(&root.join("a.txt"), b"hello\n", 0o644);
    write(&root.join("run.sh"), b"#!/bin/sh\necho hi\n", 0o755);
    write(&root.join("group-exec-only"), b"x", 0o654);
    write(&root.join("empty-file"), b"", 0o644);
    write(&root.join("sub/b"), b"x", 0o600);
    write(&root.join("sub/deeper/still/c.md"), b"# deep\n", 0o644);
    std::fs::create_dir_all(root.join("empty-dir")).expect("mkdir");
    std::fs::create_dir_all(root.join("sub/empty")).expect("mkdir");
    symlink("a.txt", root.join("link")).expect("symlink");
    symlink("../a.txt", root.join("sub/up-link")).expect("symlink");
    symlink("/etc/hostname", root.join("absolute-link")).expect("symlink");
    symlink("does/not/exist", root.join("dangling")).expect("symlink");
    symlink("sub", root.join("dir-link")).expect("symlink");
    write(
        &root.join("unicodé/ß-ø-日本.md"),
        "non-ASCII ✓\n".as_bytes(),
        0o644,
    );
    // Git sorts a folder `foo` as `foo/`, after `foo.bar`; NAR sorts raw bytes.
    write(&root.join("foo.bar"), b"1", 0o644);
    write(&root.join("foo/x"), b"2", 0o644);
    write(&root.join("foo-"), b"3", 0o644);
    write(&root.join("Upper"), b"4", 0o644);
    // Contents whose length is and is not a multiple of 8 (NAR pads to 8 bytes).
    write(&root.join("eight"), b"12345678", 0o644);
    write(&root.join("nine"), b"123456789", 0o644);
    let big: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    write(&root.join("big.bin"), &big, 0o755);
}

/// A pseudo-random tree from `seed`: a few levels of folders, files of varied sizes and
/// modes, and links.
fn random_tree(root: &Path, seed: u64) {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let names = [
        "a",
        "b",
        "A",
        "z-",
        "z.z",
        "é",
        "日",
        "with space",
        ".hidden",
        "x_y",
    ];
    let mut dirs = vec![root.to_owned()];
    for i in 0..40 {
        let dir = dirs[next(dirs.len() as u64) as usize].clone();
        let name = format!("{}{}", names[next(names.len() as u64) as usize], i);
        match next(6) {
            0 => {
                let path = dir.join(&name);
                std::fs::create_dir_all(&path).expect("mkdir");
                dirs.push(path);
            }
            1 => symlink(
                format!("../{}", names[next(names.len() as u64) as usize]),
                dir.join(&name),
            )
            .expect("symlink"),
            _ => {
                let len = next(5000) as usize;
                let content: Vec<u8> = (0..len).map(|_| next(256) as u8).collect();
                let mode = if next(3) == 0 { 0o755 } else { 0o644 };
                write(&dir.join(&name), &content, mode);
            }
        }
    }
}

#[test]
fn nar_hash_matches_nix_hash_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    let probe = dir.path().join("probe");
    std::fs::create_dir_all(&probe).expect("mkdir");
    if nix_hash_path(&probe, &home).is_none() {
        common::require_or_skip("`nix`", "apt-get install nix-bin");
        return;
    }
    let mut trees = Vec::new();
    let handmade_root = dir.path().join("handmade");
    handmade(&handmade_root);
    trees.push(handmade_root.clone());
    trees.push(handmade_root.join("sub"));
    trees.push(handmade_root.join("a.txt"));
    trees.push(handmade_root.join("link"));
    for seed in 0..12 {
        let root = dir.path().join(format!("random-{seed}"));
        std::fs::create_dir_all(&root).expect("mkdir");
        random_tree(&root, seed);
        trees.push(root);
    }
    for tree in &trees {
        let ours = crate::hash_path(tree).expect("hash").to_sri();
        let nix = nix_hash_path(tree, &home).expect("nix is installed");
        assert_eq!(ours, nix, "tree {}", tree.display());
    }
}
