//! Faults (issue #6): processes killed at each named step (`BERTH_FAULT_PAUSE`, see
//! `berth_store::fault`) and at arbitrary points, a full disk, a read-only store. After
//! every fault the store verifies and the next sync completes.

use crate::common;

use std::path::{Path, PathBuf};
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

/// What a kill round runs: which project, after what preparation.
#[derive(Debug, Clone, Copy)]
enum Round {
    /// Project a's entries gone (and, with `caches`, its git caches): sync a.
    SyncA { caches: bool },
    /// Project b's entries gone: sync b.
    SyncB,
    /// Project b's lockfile parked for a moment: gc has b's entries and caches to remove.
    Gc,
    /// Project a's lock without its second plugin, so the sync locks again and rewrites it.
    Relock,
}

/// The kills at named steps (`BERTH_FAULT_PAUSE`), each with the round that reaches it.
const STEP_ROUNDS: &[(&str, Round)] = {
    use berth_store::fault::*;
    &[
        (PERSIST_BEFORE_RENAME, Round::SyncA { caches: true }),
        (GIT_EXPORT_MID, Round::SyncA { caches: false }),
        (GIT_EXPORT_MID, Round::SyncA { caches: true }),
        (COMMIT_BEFORE_RENAME, Round::SyncA { caches: false }),
        (COMMIT_BEFORE_RENAME, Round::SyncB),
        (COMMIT_AFTER_RENAME, Round::SyncA { caches: true }),
        (COMMIT_AFTER_RENAME, Round::SyncB),
        (GC_VICTIM_IN_TMP, Round::Gc),
        (FILE_BEFORE_RENAME, Round::Relock),
    ]
};

/// The store and the projects after a SIGKILL: the store verifies, a lockfile is whole,
/// and the next sync completes.
struct Projects<'a> {
    ctx: &'a TestContext,
    a: PathBuf,
    b: PathBuf,
}

impl Projects<'_> {
    /// Prepares `round` and returns the command it runs and the texts a's lockfile may
    /// have after it (empty: a's lockfile is not touched).
    fn prepare(&self, round: Round) -> (std::process::Command, Vec<String>) {
        let b_lock = self.b.join("plugins.lock");
        let (dir, args, locks): (&Path, &[&str], Vec<String>) = match round {
            Round::SyncA { caches } => {
                wipe(self.ctx, &[0, 1], caches);
                (&self.a, &["plugins", "sync"], Vec::new())
            }
            Round::SyncB => {
                wipe(self.ctx, &[2, 3], false);
                (&self.b, &["plugins", "sync"], Vec::new())
            }
            Round::Gc => {
                std::fs::rename(&b_lock, self.b.join("plugins.lock.parked")).expect("park");
                (&self.ctx.work, &["store", "gc"], Vec::new())
            }
            Round::Relock => {
                let path = self.a.join("plugins.lock");
                let full = std::fs::read_to_string(&path).expect("read lock");
                // The lock's entries are `[[plugin]]` tables; keep the first only.
                let second = full
                    .match_indices("[[plugin]]")
                    .nth(1)
                    .expect("two plugins")
                    .0;
                let short = full[..second].trim_end().to_owned() + "\n";
                std::fs::write(&path, &short).expect("write lock");
                (&self.a, &["plugins", "sync"], vec![short, full])
            }
        };
        let mut cmd = self.ctx.berth();
        cmd.current_dir(dir).args(args);
        (cmd, locks)
    }

    /// What holds after every kill, `what` naming the round in messages: the store
    /// verifies, a's lockfile is one of `locks` (when given), whole, and the next syncs
    /// complete and leave no staging behind.
    fn check_after_kill(&self, what: &str, locks: &[String]) {
        let verify = self.ctx.run(&["store", "verify"]);
        assert_eq!(verify.code, 0, "{what}: {}", verify.stderr);
        if !locks.is_empty() {
            let now = std::fs::read_to_string(self.a.join("plugins.lock")).expect("read lock");
            assert!(locks.contains(&now), "{what}: a torn lockfile:\n{now}");
        }
        let parked = self.b.join("plugins.lock.parked");
        if parked.exists() {
            std::fs::rename(&parked, self.b.join("plugins.lock")).expect("unpark");
        }
        for dir in [&self.a, &self.b] {
            let next = run_in(self.ctx, dir, &["plugins", "sync"]);
            assert!(
                next.status.success(),
                "{what}: the next sync in {}: {}",
                dir.display(),
                String::from_utf8_lossy(&next.stderr)
            );
        }
        assert_eq!(
            list_dir(&self.ctx.store.join("store-v1")).len(),
            4,
            "{what}: every entry is back"
        );
        // Every sync, even one with nothing to add, removes the staging folders killed
        // processes left in `tmp/`, and gc cleans `tmp/` too (and here must keep all four
        // entries).
        let tmp = self.ctx.store.join("tmp");
        let folders: Vec<String> = list_dir(&tmp)
            .into_iter()
            .filter(|f| !f.ends_with(".lock"))
            .collect();
        assert!(
            folders.is_empty(),
            "{what}: staging left behind: {folders:?}"
        );
        self.ctx.ok(&["store", "gc"]);
        assert_eq!(
            list_dir(&self.ctx.store.join("store-v1")).len(),
            4,
            "{what}"
        );
        assert_eq!(list_dir(&tmp), Vec::<String>::new(), "{what}: after gc");
    }
}

#[test]
fn syncs_and_gcs_killed_at_each_step_never_leave_a_corrupt_store() {
    let ctx = TestContext::new();
    setup(&ctx);
    // Over HTTP, so fetches fill git caches (a `file://` repository is read in place and
    // never cached), and the kills at a new cache's steps have a cache to make.
    let _server = ctx.serve_github_over_http();
    let projects = Projects {
        ctx: &ctx,
        a: ctx.root.join("a"),
        b: ctx.root.join("b"),
    };
    for dir in [&projects.a, &projects.b] {
        let first = run_in(&ctx, dir, &["plugins", "sync"]);
        assert!(
            first.status.success(),
            "{}",
            String::from_utf8_lossy(&first.stderr)
        );
    }
    // Steps outside the store's own life cycle have their kill tests beside their feature.
    let elsewhere = [
        berth_store::fault::PUSH_BEFORE_NARINFO, // tests/it/binary_cache.rs
        berth_store::fault::CONVERSATION_BEFORE_META, // tests/it/fleet_bucket.rs
    ];
    for step in berth_store::fault::STEPS {
        assert!(
            STEP_ROUNDS.iter().any(|(s, _)| s == step) || elsewhere.contains(step),
            "fault step `{step}` has no kill round here"
        );
    }
    for (step, round) in STEP_ROUNDS {
        let (mut cmd, locks) = projects.prepare(*round);
        common::kill_at_step(&mut cmd, step);
        // Killed before the rename, the old lockfile must be there as it was.
        let old_lock = &locks[..locks.len().min(1)];
        projects.check_after_kill(&format!("killed at `{step}` in {round:?}"), old_lock);
    }
    // Then kills at arbitrary points (0 to 60 ms in: a sync here takes about that long),
    // which reach places no step names, such as the middle of a fetch. Whether a round
    // was interrupted depends on timing, so only the outcome is asserted, never a count.
    let mut seed: u32 = 12345;
    let rounds = [
        Round::SyncA { caches: true },
        Round::SyncB,
        Round::Gc,
        Round::SyncA { caches: false },
        Round::Relock,
    ];
    for i in 0..30 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let delay = Duration::from_millis(u64::from(seed >> 16) % 60);
        let round = rounds[i % rounds.len()];
        let (mut cmd, locks) = projects.prepare(round);
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        projects.check_after_kill(
            &format!("round {i}, {round:?} killed after {delay:?}"),
            &locks,
        );
    }
    ctx.ok(&["store", "verify"]);
}

#[test]
fn a_full_disk_fails_clearly_and_leaves_no_partial_entry() {
    let ctx = TestContext::new();
    setup(&ctx);
    let store = ctx.root.join("small-store");
    let Some(_mount) = common::mount::tmpfs(&store, "size=1500k") else {
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
    let Some(_mount) = common::mount::tmpfs(&store, "size=8m,ro") else {
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
