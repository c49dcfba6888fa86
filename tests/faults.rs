//! Faults (issue #6): processes killed at random points, a full disk, a read-only store.
//! After every fault the store verifies and the next sync completes.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{TestContext, list_dir};

/// Three repositories of about a megabyte each, and two projects on them.
fn setup(ctx: &TestContext) {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..4 {
        let repo = ctx.repo(&format!("r{i}"));
        repo.copy_fixture("lint", "");
        let mut blob = Vec::with_capacity(1 << 20);
        while blob.len() < 1 << 20 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            blob.extend_from_slice(&seed.to_le_bytes());
        }
        std::fs::write(repo.path.join("blob.bin"), &blob).expect("write");
        for j in 0..30 {
            repo.write(&format!("docs/{j}.md"), &format!("{i} {j}\n"));
        }
        repo.write(".plugin/plugin.json", &format!("{{\"name\": \"r{i}\"}}"));
        repo.commit("plugin");
    }
    for (name, plugins) in [("a", [0, 1]), ("b", [2, 3])] {
        let dir = ctx.root.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let manifest: String = plugins
            .iter()
            .map(|i| format!("[[plugin]]\nsource = \"github:acme/r{i}\"\n\n"))
            .collect();
        std::fs::write(dir.join("plugins.toml"), manifest).expect("write");
    }
}

fn run_in(ctx: &TestContext, dir: &Path, args: &[&str]) -> std::process::Output {
    ctx.berth()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run")
}

/// Removes project `plugins`' store entries (and, with `caches`, their git caches), so the
/// next sync has real work to do.
fn wipe(ctx: &TestContext, plugins: &[usize], caches: bool) {
    for plugin in plugins {
        for entry in list_dir(&ctx.store.join("store-v1")) {
            if entry.ends_with(&format!("-r{plugin}")) {
                berth_store::remove_tree(&ctx.store.join("store-v1").join(entry))
                    .expect("wipe entry");
            }
        }
        if caches {
            for db in list_dir(&ctx.store.join("git-v1/db")) {
                if db.starts_with(&format!("r{plugin}-")) {
                    berth_store::remove_tree(&ctx.store.join("git-v1/db").join(db))
                        .expect("wipe cache");
                }
            }
        }
    }
}

#[test]
fn killed_syncs_and_gcs_never_leave_a_corrupt_store() {
    let ctx = TestContext::new();
    setup(&ctx);
    let (a, b) = (ctx.root.join("a"), ctx.root.join("b"));
    for dir in [&a, &b] {
        let first = run_in(&ctx, dir, &["plugins", "sync"]);
        assert!(
            first.status.success(),
            "{}",
            String::from_utf8_lossy(&first.stderr)
        );
    }
    // Deterministic pseudo-random kill points, 0 to 60 ms: a sync here takes about that long.
    let mut seed: u32 = 12345;
    let mut kills = 0;
    for round in 0..100 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let delay = Duration::from_millis(u64::from(seed >> 16) % 60);
        let b_lock = b.join("plugins.lock");
        let parked = b.join("plugins.lock.parked");
        let (dir, args): (&Path, &[&str]) = match round % 3 {
            0 => {
                wipe(&ctx, &[0, 1], round % 2 == 0);
                (&a, &["plugins", "sync"])
            }
            1 => {
                wipe(&ctx, &[2, 3], round % 2 == 0);
                (&b, &["plugins", "sync"])
            }
            _ => {
                // b's lockfile is gone for a moment: gc has b's entries and caches to remove.
                std::fs::rename(&b_lock, &parked).expect("park");
                (&ctx.work, &["store", "gc"])
            }
        };
        let mut child = ctx
            .berth()
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(delay);
        if child.try_wait().expect("poll").is_none() {
            kills += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        let verify = ctx.run(&["store", "verify"]);
        assert_eq!(
            verify.code, 0,
            "round {round} ({args:?} killed after {delay:?}): {}",
            verify.stderr
        );
        if parked.exists() {
            std::fs::rename(&parked, &b_lock).expect("unpark");
        }
        let next_dir = if dir == ctx.work { &b } else { dir };
        let next = run_in(&ctx, next_dir, &["plugins", "sync"]);
        assert!(
            next.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&next.stderr)
        );
    }
    eprintln!("{kills} of 100 rounds were killed mid-work");
    assert!(
        kills >= 30,
        "the loop really interrupted work ({kills} of 100 rounds)"
    );
    ctx.ok(&["store", "verify"]);
    assert_eq!(list_dir(&ctx.store.join("store-v1")).len(), 4);
}

/// Mounts a tmpfs of `size` at `dir` (root only); `None` when this machine cannot, unless
/// `BERTH_REQUIRE_TMPFS` is set (CI sets it, so a skipped test cannot pass unnoticed).
fn tmpfs(dir: &Path, options: &str) -> Option<Mount> {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", options, "tmpfs"])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted && std::env::var_os("BERTH_REQUIRE_TMPFS").is_some() {
        panic!("BERTH_REQUIRE_TMPFS is set but mounting a tmpfs failed (run as root)");
    }
    mounted.then(|| Mount(dir.to_owned()))
}

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_full_disk_fails_clearly_and_leaves_no_partial_entry() {
    let ctx = TestContext::new();
    setup(&ctx);
    let store = ctx.root.join("small-store");
    let Some(_mount) = tmpfs(&store, "size=1500k") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let out = ctx
        .berth()
        .current_dir(ctx.root.join("a"))
        .env("BERTH_STORE", &store)
        .args(["plugins", "sync"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.lines().any(|l| l.starts_with("error:")), "{stderr}");
    for entry in list_dir(&store.join("store-v1")) {
        let actual = berth_store::hash_path(&store.join("store-v1").join(&entry)).expect("hash");
        assert!(entry.starts_with(&actual.to_nix32()), "{entry} is complete");
    }
    let staging: Vec<String> = list_dir(&store.join("tmp"))
        .into_iter()
        .filter(|f| !f.ends_with(".lock"))
        .collect();
    assert!(staging.is_empty(), "no staging left: {staging:?}");
}

#[test]
fn a_read_only_store_fails_clearly() {
    let ctx = TestContext::new();
    setup(&ctx);
    let store = ctx.root.join("ro-store");
    let Some(_mount) = tmpfs(&store, "size=8m,ro") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let out = ctx
        .berth()
        .current_dir(ctx.root.join("a"))
        .env("BERTH_STORE", &store)
        .args(["plugins", "sync"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains("Read-only file system") && error.contains(&store.display().to_string()),
        "{error}"
    );
}
