//! Locking and syncing git and local plugins end to end (issue #2, docs/spec.md sections 1-4, 6).

use crate::common;

use common::{GitRepo, TestContext, copy_tree, fixtures, lock_field};

/// A repository with the `review` fixture at its root: `v1.0.0` (lightweight) on the first
/// commit, `v1.1.0` (annotated) on the second, `main` one commit further.
fn review_repo(ctx: &TestContext) -> (GitRepo, [String; 3]) {
    let repo = ctx.repo("review");
    repo.copy_fixture("review", "");
    let first = repo.commit("first");
    repo.tag("v1.0.0");
    repo.write("skills/code-review/extra.md", "More advice.\n");
    let second = repo.commit("second");
    repo.tag_annotated("v1.1.0");
    repo.write("CHANGELOG.md", "unreleased\n");
    let third = repo.commit("third");
    (repo, [first, second, third])
}

/// A monorepo with two plugins under `plugins/`.
fn mono_repo(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("mono");
    repo.copy_fixture("lint", "plugins/lint");
    repo.copy_fixture("house-rules", "plugins/house");
    repo.write("README.md", "two plugins\n");
    repo.commit("monorepo");
    repo
}

fn mixed_manifest(review: &GitRepo, mono: &GitRepo, pinned: &str) -> String {
    format!(
        r#"# Plugins for the review bot.
[[plugin]]
source = "github:acme/review"
ref = "main"

[[plugin]]
source = "{review}"
ref = "v1.0.0"

[[plugin]]
source = "git+{review}"
ref = "v1.1.0"

[[plugin]]
source = "{review}"
ref = "{pinned}"

[[plugin]]
source = "github:acme/mono/plugins/lint"

[[plugin]]
source = "{mono}"
repo_path = "plugins/house"

[[plugin]]
source = "./local/house-rules"
"#,
        review = review.url(),
        mono = mono.url(),
    )
}

#[test]
fn mixed_manifest_locks_syncs_and_lists() {
    let ctx = TestContext::new();
    let (review, [first, second, third]) = review_repo(&ctx);
    let mono = mono_repo(&ctx);
    copy_tree(
        &fixtures().join("plugins/house-rules"),
        &ctx.work.join("local/house-rules"),
    );
    ctx.write_manifest(&mixed_manifest(&review, &mono, &first));

    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    let names: Vec<String> = (0..7)
        .map(|i| lock_field(&lock, i, "name").expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "review",
            "review",
            "review",
            "review",
            "lint",
            "house",
            "house-rules"
        ]
    );
    assert!(
        lock_field(&lock, 7, "name").is_none(),
        "one entry per manifest entry"
    );
    // Branch, lightweight tag, annotated tag (peeled to its commit), pinned commit.
    let revs: Vec<String> = (0..4)
        .map(|i| lock_field(&lock, i, "rev").expect("rev"))
        .collect();
    assert_eq!(
        revs,
        [third.clone(), first.clone(), second.clone(), first.clone()]
    );
    assert_ne!(
        review.git(&["rev-parse", "v1.1.0"]),
        second,
        "v1.1.0 is an annotated tag object"
    );
    assert_eq!(
        lock_field(&lock, 0, "url").expect("url"),
        format!("file://{}/acme/review.git", ctx.upstream.display())
    );
    assert_eq!(
        lock_field(&lock, 4, "source").as_deref(),
        Some("github:acme/mono/plugins/lint")
    );
    assert_eq!(
        lock_field(&lock, 5, "repo_path").as_deref(),
        Some("plugins/house")
    );
    assert_eq!(
        lock_field(&lock, 6, "path").as_deref(),
        Some("./local/house-rules")
    );
    assert!(lock_field(&lock, 6, "rev").is_none());
    // The same tree hashes alike from git objects and from a local folder.
    let lint_hash = berth_store::hash_path(&fixtures().join("plugins/lint")).expect("hash fixture");
    assert_eq!(lock_field(&lock, 4, "hash"), Some(lint_hash.to_sri()));
    assert_eq!(lock_field(&lock, 5, "hash"), lock_field(&lock, 6, "hash"));
    assert_eq!(lock_field(&lock, 1, "hash"), lock_field(&lock, 3, "hash"));

    let sync = ctx.ok(&["plugins", "sync"]);
    assert!(sync.stderr.contains("Synced 7 plugins"), "{}", sync.stderr);
    // Seven lock entries, six store entries: v1.0.0 and the pinned commit are one tree;
    // `house` and `house-rules` share content but not a name.
    let entries = ctx.store_entries();
    assert_eq!(entries.len(), 6, "{entries:?}");
    for i in 0..7 {
        let hash = berth_lockfile_schema::Sha256Hash::from_sri(
            &lock_field(&lock, i, "hash").expect("hash"),
        )
        .expect("SRI");
        let name = lock_field(&lock, i, "name").expect("name");
        let entry = format!("{}-{name}", hash.to_nix32());
        assert!(entries.contains(&entry), "{entry} missing from {entries:?}");
        let on_disk =
            berth_store::hash_path(&ctx.store.join("store-v1").join(&entry)).expect("hash entry");
        assert_eq!(on_disk, hash, "store entry {entry} hashes to its name");
    }
    // Exported straight from git: modes and content survive, no `.git`.
    let newest = ctx.store.join("store-v1").join(
        entries
            .iter()
            .find(|e| {
                let hash = lock_field(&lock, 0, "hash").expect("hash");
                e.starts_with(
                    &berth_lockfile_schema::Sha256Hash::from_sri(&hash)
                        .expect("SRI")
                        .to_nix32(),
                )
            })
            .expect("entry of main"),
    );
    assert_eq!(
        std::fs::read_to_string(newest.join("CHANGELOG.md")).expect("read"),
        "unreleased\n"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(newest.join("scripts/guard.sh"))
        .expect("stat")
        .permissions()
        .mode();
    assert_ne!(mode & 0o100, 0, "executables stay executable");
    assert!(!newest.join(".git").exists());

    let list = ctx.ok(&["plugins", "list"]);
    for name in ["review", "lint", "house", "house-rules"] {
        assert!(
            list.stdout.contains(name),
            "{name} missing from:\n{}",
            list.stdout
        );
    }
    assert!(list.stdout.contains("v1.0.0"), "{}", list.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&ctx.ok(&["plugins", "list", "--json"]).stdout)
            .expect("list --json is JSON");
    let plugins = json["plugins"].as_array().expect("plugins array");
    assert_eq!(plugins.len(), 7);
    assert_eq!(plugins[2]["rev"], serde_json::json!(second));
    assert_eq!(plugins[6]["kind"], serde_json::json!("local"));
    assert!(
        plugins.iter().all(|p| p["store_path"].is_string()),
        "all synced: {json}"
    );
}

#[test]
fn lockfile_is_byte_identical_across_stores_and_folders() {
    let ctx = TestContext::new();
    let (review, [first, ..]) = review_repo(&ctx);
    let mono = mono_repo(&ctx);
    let manifest = mixed_manifest(&review, &mono, &first);
    let mut locks = Vec::new();
    for n in 0..2 {
        let work = ctx.root.join(format!("work-{n}"));
        copy_tree(
            &fixtures().join("plugins/house-rules"),
            &work.join("local/house-rules"),
        );
        std::fs::write(work.join("plugins.toml"), &manifest).expect("write manifest");
        let out = ctx
            .berth()
            .current_dir(&work)
            .env("BERTH_STORE", ctx.root.join(format!("store-{n}")))
            .args(["plugins", "lock"])
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        locks.push(std::fs::read(work.join("plugins.lock")).expect("read lock"));
    }
    assert_eq!(
        locks[0], locks[1],
        "same manifest and upstream give the same bytes"
    );
    let text = String::from_utf8(locks[0].clone()).expect("UTF-8");
    assert!(text.starts_with(
        "# This file is generated by `berth plugins lock`. Do not edit it by hand.\nversion = 1\n"
    ));
    assert!(text.ends_with("\"\n") && !text.ends_with("\n\n") && !text.contains('\r'));
    assert!(
        !text.contains(&ctx.root.join("work-0").display().to_string()),
        "no absolute local paths"
    );

    // `--check` passes on the fresh lock and on a reformatted, re-commented manifest.
    let work = ctx.root.join("work-0");
    let check = |dir: &std::path::Path| {
        ctx.berth()
            .current_dir(dir)
            .env("BERTH_STORE", ctx.root.join("store-0"))
            .args(["plugins", "lock", "--check"])
            .output()
            .expect("run")
    };
    assert!(check(&work).status.success());
    let reformatted = manifest
        .replace("# Plugins for the review bot.", "# Reformatted.\n\n")
        .replace("ref = \"main\"", "ref   =   'main'   # the branch");
    std::fs::write(work.join("plugins.toml"), &reformatted).expect("write");
    let out = check(&work);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    std::fs::write(
        work.join("plugins.toml"),
        reformatted.replace("ref = \"v1.0.0\"", "ref = \"v1.1.0\""),
    )
    .expect("write");
    let out = check(&work);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("out of date"), "{stderr}");
    assert!(
        stderr.contains("entry 2 (`review`)") && stderr.contains("`v1.1.0`"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(work.join("plugins.lock")).expect("read"),
        locks[0],
        "--check writes nothing"
    );
}

#[test]
fn upstream_moves_keep_locked_commits_until_upgrade() {
    let ctx = TestContext::new();
    let moving = ctx.repo("moving");
    moving.copy_fixture("lint", "");
    let old = moving.commit("one");
    moving.tag("v1");
    let stable = ctx.repo("stable");
    stable.copy_fixture("review", "");
    stable.commit("stable");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{m}\"\nref = \"main\"\nname = \"lint\"\n\n[[plugin]]\nsource = \"{m}\"\nref = \"v1\"\n\n[[plugin]]\nsource = \"{s}\"\n",
        m = moving.url(),
        s = stable.url()
    ));
    ctx.ok(&["plugins", "lock"]);
    let locked = ctx.lock_text();
    let old_hash = lock_field(&locked, 0, "hash").expect("hash");

    // Upstream moves the branch and force-moves the tag.
    moving.write(
        "skills/lint-rules/SKILL.md",
        "---\nname: lint-rules\ndescription: changed\n---\nNew.\n",
    );
    let new = moving.commit("two");
    moving.git(&["tag", "-f", "v1"]);
    assert_ne!(old, new);

    // A fresh store still gets exactly the locked commits.
    let fresh = ctx.root.join("fresh-store");
    let out = ctx
        .berth()
        .env("BERTH_STORE", &fresh)
        .args(["plugins", "sync", "--locked"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ctx.lock_text(), locked, "--locked never writes the lock");
    let hash = berth_lockfile_schema::Sha256Hash::from_sri(&old_hash).expect("SRI");
    let entry = fresh
        .join("store-v1")
        .join(format!("{}-lint", hash.to_nix32()));
    assert_eq!(berth_store::hash_path(&entry).expect("hash"), hash);
    assert!(
        std::fs::read_to_string(entry.join("skills/lint-rules/SKILL.md"))
            .expect("read")
            .contains("Run the linter"),
        "the old content, not the moved branch"
    );

    // An unchanged manifest locks without the network: hide upstream entirely.
    let hidden = ctx.root.join("upstream-hidden");
    std::fs::rename(&ctx.upstream, &hidden).expect("hide upstream");
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(ctx.lock_text(), locked, "byte-identical, nothing fetched");
    std::fs::rename(&hidden, &ctx.upstream).expect("restore upstream");

    // `--upgrade-plugin` moves only the named plugin's entries.
    ctx.ok(&["plugins", "lock", "--upgrade-plugin", "review"]);
    assert_eq!(ctx.lock_text(), locked, "review did not move upstream");

    ctx.ok(&["plugins", "lock", "--upgrade"]);
    let upgraded = ctx.lock_text();
    assert_eq!(lock_field(&upgraded, 0, "rev"), Some(new.clone()));
    assert_eq!(lock_field(&upgraded, 1, "rev"), Some(new));
    let changed: Vec<(&str, &str)> = locked
        .lines()
        .zip(upgraded.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(locked.lines().count(), upgraded.lines().count());
    assert_eq!(
        changed.len(),
        4,
        "rev and hash of the two moved entries: {changed:?}"
    );
    assert!(
        changed
            .iter()
            .all(|(a, _)| a.starts_with("rev = ") || a.starts_with("hash = "))
    );
    assert_eq!(
        lock_field(&upgraded, 2, "rev"),
        lock_field(&locked, 2, "rev")
    );
}

/// A stand-in for `ssh` that runs the remote command locally, whatever the host, and logs
/// what it was asked to run.
fn fake_ssh(ctx: &TestContext) -> std::path::PathBuf {
    let bin = ctx.root.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let script = bin.join("ssh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> {log}\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n    -o|-p|-i|-l|-F) shift 2 ;;\n    -*) shift ;;\n    *) break ;;\n  esac\ndone\nshift\nexec sh -c \"$*\"\n",
            log = bin.join("ssh.log").display()
        ),
    )
    .expect("write ssh");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

#[test]
fn ssh_sources_go_through_the_system_ssh() {
    let ctx = TestContext::new();
    let repo = ctx.repo("remote");
    repo.copy_fixture("lint", "");
    let head = repo.commit("one");
    let bin = fake_ssh(&ctx);
    let path = repo.path.display();
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"git@example.invalid:{path}\"\n\n[[plugin]]\nsource = \"ssh://git@example.invalid:2222{path}\"\n\n[[plugin]]\nsource = \"git+ssh://git@example.invalid{path}\"\n"
    ));
    let with_ssh = |args: &[&str]| {
        let out = ctx
            .berth()
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").expect("PATH")),
            )
            .args(args)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    with_ssh(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    for i in 0..3 {
        assert_eq!(lock_field(&lock, i, "rev").as_deref(), Some(head.as_str()));
    }
    assert_eq!(
        lock_field(&lock, 0, "url"),
        Some(format!("git@example.invalid:{path}"))
    );
    let log = std::fs::read_to_string(bin.join("ssh.log")).expect("ssh was run");
    assert!(log.contains("git@example.invalid git-upload-pack"), "{log}");
    assert!(log.contains("-p2222") || log.contains("-p 2222"), "{log}");
    with_ssh(&["plugins", "sync"]);
    assert_eq!(ctx.store_entries().len(), 1);
}

#[test]
fn submodules_are_skipped_with_a_warning() {
    let ctx = TestContext::new();
    let repo = ctx.repo("with-submodule");
    repo.copy_fixture("lint", "");
    repo.commit("plugin");
    // A gitlink, as `git submodule add` records it, pointing at some commit.
    let some_commit = repo.head();
    repo.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{some_commit},vendor/tool"),
    ]);
    repo.git(&["commit", "-q", "-m", "add submodule"]);
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/with-submodule\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: `lint`: skipped git submodule `vendor/tool` (berth does not fetch submodules)
          Adding lint 3b572148ae57
          Locked 1 plugin in `plugins.lock`
    ");
    ctx.wipe_store_entries();
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "sync"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: `lint`: skipped git submodule `vendor/tool` (berth does not fetch submodules)
           Added lint [TMP]/store/store-v1/0nqk1vbqq223rgdf6y2q2586b8zswnxg5nqfqn8ms515jrn121gv-lint
          Synced 1 plugin (1 added) in [TIME]
    "#);
    // The submodule is an empty folder, as `git archive` leaves it.
    let expected_tree = ctx.root.join("expected");
    copy_tree(&fixtures().join("plugins/lint"), &expected_tree);
    std::fs::create_dir_all(expected_tree.join("vendor/tool")).expect("mkdir");
    let expected = berth_store::hash_path(&expected_tree).expect("hash");
    assert_eq!(
        lock_field(&ctx.lock_text(), 0, "hash"),
        Some(expected.to_sri())
    );
}

#[test]
fn offline_lock_resolves_from_what_the_cache_saw() {
    let ctx = TestContext::new();
    let repo = ctx.repo("tools");
    repo.copy_fixture("lint", "");
    repo.commit("one");
    repo.tag_annotated("v1");
    repo.git(&["checkout", "-q", "-b", "dev"]);
    repo.write("dev.md", "dev\n");
    repo.commit("dev");
    repo.git(&["checkout", "-q", "main"]);
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/tools\"\n\n[[plugin]]\nsource = \"github:acme/tools\"\nref = \"v1\"\n",
    );
    // Over HTTP (a `file://` remote is read in place, with no cache); the repositories
    // are then moved away, so the server has nothing to serve.
    let _server = ctx.serve_github_over_http();
    ctx.ok(&["plugins", "lock"]);
    let online = ctx.lock_text();
    std::fs::remove_file(ctx.lock_path()).expect("rm lock");
    std::fs::rename(&ctx.upstream, ctx.root.join("gone")).expect("upstream gone");
    ctx.ok(&["plugins", "lock", "--offline"]);
    assert_eq!(
        ctx.lock_text(),
        online,
        "the cache remembers the default branch and the tag"
    );

    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/tools\"\nref = \"dev\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock", "--offline"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:2: `github:acme/tools`: `dev` of `http://127.0.0.1:[PORT]/acme/tools.git` is not available offline; run without `--offline` to fetch it
    "#);
}

#[test]
fn a_server_refusing_unadvertised_commits_gets_the_refs_instead() {
    let ctx = TestContext::new();
    let repo = ctx.repo("old-server");
    repo.copy_fixture("lint", "");
    let old = repo.commit("one");
    repo.write("later.md", "later\n");
    repo.commit("two");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"github:acme/old-server\"\nref = \"{old}\"\n"
    ));
    // Protocol v0 over `git daemon` (git://): `upload-pack` refuses to send a commit no ref
    // points at, so berth must fall back to fetching the branches and tags. (A `file://`
    // remote is read in-process, and `git http-backend` lets a client have any commit a
    // ref reaches.)
    let config = ctx.root.join("gitconfig-protocol-v0");
    std::fs::write(&config, "[protocol]\n\tversion = 0\n").expect("write config");
    let daemon = GitDaemon::start(&ctx.upstream);
    let out = ctx
        .berth()
        .env("GIT_CONFIG_GLOBAL", &config)
        .env("BERTH_GITHUB_URL", daemon.url())
        .args(["plugins", "sync"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lock_field(&ctx.lock_text(), 0, "rev"), Some(old));
    assert_eq!(ctx.store_entries().len(), 1);
    let dbs = common::list_dir(&ctx.store.join("git-v1/db"));
    let refs = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(ctx.store.join("git-v1/db").join(&dbs[0]))
        .args(["show-ref"])
        .output()
        .expect("git show-ref");
    let refs = String::from_utf8_lossy(&refs.stdout);
    assert!(
        refs.contains("refs/heads/main"),
        "the fallback fetched the branches: {refs}"
    );
}

/// `git daemon` serving a folder of repositories over git:// on 127.0.0.1, stopped when
/// dropped.
struct GitDaemon {
    child: std::process::Child,
    port: u16,
}

impl GitDaemon {
    fn start(root: &std::path::Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        // `git daemon` runs `git-daemon` as a child: started directly, it is the process
        // that is stopped.
        let exec_path = std::process::Command::new("git")
            .arg("--exec-path")
            .output()
            .expect("git --exec-path");
        let exec_path = String::from_utf8_lossy(&exec_path.stdout).trim().to_owned();
        let child = std::process::Command::new(std::path::Path::new(&exec_path).join("git-daemon"))
            .arg("--reuseaddr")
            .arg("--export-all")
            .arg(format!("--base-path={}", root.display()))
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start git daemon");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "git daemon did not listen"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Self { child, port }
    }

    fn url(&self) -> String {
        format!("git://127.0.0.1:{}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn github_sources_over_smart_http() {
    let ctx = TestContext::new();
    let repo = ctx.repo("web");
    repo.copy_fixture("lint", "plugins/lint");
    let head = repo.commit("one");
    repo.tag_annotated("v1");
    let server = common::GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/web/plugins/lint\"\nref = \"v1\"\n");
    let run = |args: &[&str]| {
        let out = ctx
            .berth()
            .env("BERTH_GITHUB_URL", server.url())
            .args(args)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&["plugins", "sync"]);
    let lock = ctx.lock_text();
    assert_eq!(
        lock_field(&lock, 0, "url"),
        Some(format!("{}/acme/web.git", server.url()))
    );
    assert_eq!(lock_field(&lock, 0, "rev"), Some(head));
    let lint = berth_store::hash_path(&fixtures().join("plugins/lint")).expect("hash");
    assert_eq!(lock_field(&lock, 0, "hash"), Some(lint.to_sri()));
    let served = server.requests();
    assert!(
        served
            .iter()
            .any(|r| r.starts_with("POST /acme/web.git/git-upload-pack")),
        "{served:?}"
    );
    run(&["plugins", "verify"]);
}

/// `sync`'s modes as both front ends share them (`berth_resolver::lock_and_sync`), worded
/// after the flag given: `--locked` and `--frozen` need a lock (and `--locked` an up-to-date
/// one) and never write it; the default locks a stale manifest and writes that lock before
/// syncing, so a sync that then fails leaves the lock current.
#[test]
fn sync_modes_word_their_failures_after_the_flag() {
    let ctx = TestContext::new();
    let (_repo, [.., head]) = review_repo(&ctx);
    copy_tree(
        &fixtures().join("plugins/house-rules"),
        &ctx.work.join("rules"),
    );
    ctx.write_manifest("[[plugin]]\nsource = \"./rules\"\n");
    for flag in ["--locked", "--frozen"] {
        let run = ctx.run(&["plugins", "sync", flag]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_eq!(
            run.stderr,
            format!(
                "error: `{flag}` was given but there is no lockfile at `plugins.lock`; run `berth plugins lock` to create it\n"
            )
        );
    }
    assert!(!ctx.lock_path().exists(), "neither mode writes a lock");
    ctx.ok(&["plugins", "sync"]);
    let locked = ctx.lock_text();

    // The manifest gains an entry and the local folder changes.
    ctx.write_manifest(
        "[[plugin]]\nsource = \"./rules\"\n\n[[plugin]]\nsource = \"github:acme/review\"\n",
    );
    std::fs::write(ctx.work.join("rules/skills/new.md"), "new rule\n").expect("edit");
    // The error, and a note per stale entry.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "sync", "--locked"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `--locked` was given but `plugins.lock` is out of date with `plugins.toml`; run `berth plugins lock` to update it
      entry 2 (`github:acme/review`) is not in the lock
    "#);
    assert_eq!(ctx.lock_text(), locked, "--locked never writes the lock");
    // `--frozen` syncs the lock as it is, the local plugin from the store.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "sync", "--frozen"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
          Synced 1 plugin (0 added) in [TIME]
    "#);

    // The default locks the new entry (keeping the local folder's locked hash), writes the
    // lock, then the sync finds the folder changed.
    let run = ctx.run(&["plugins", "sync"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("Adding review"), "{}", run.stderr);
    assert!(
        run.errors()[0].contains("`rules`")
            && run.errors()[0].contains("changed since it was locked"),
        "{}",
        run.stderr
    );
    let relocked = ctx.lock_text();
    assert_eq!(lock_field(&relocked, 1, "rev"), Some(head));
    assert_eq!(
        lock_field(&relocked, 0, "hash"),
        lock_field(&locked, 0, "hash"),
        "the local folder keeps its locked hash"
    );
}

#[test]
fn a_plugin_name_mixing_scripts_is_warned_about() {
    let ctx = TestContext::new();
    for (dir, name) in [("lookalike", "g\u{43e}\u{43e}d"), ("plain", "good")] {
        let plugin = ctx.work.join(dir);
        std::fs::create_dir_all(plugin.join(".claude-plugin")).expect("mkdir");
        std::fs::write(
            plugin.join(".claude-plugin/plugin.json"),
            format!("{{\"name\": \"{name}\"}}"),
        )
        .expect("write");
    }
    ctx.write_manifest(
        "[[plugin]]\nsource = \"./lookalike\"\n\n[[plugin]]\nsource = \"./plain\"\n",
    );
    let run = ctx.ok(&["plugins", "lock"]);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: plugin `g\u{43e}\u{43e}d`: its name mixes Latin and Cyrillic letters, so it can pass for another name; check it is the plugin you meant"
        ],
        "{}",
        run.stderr
    );
}

/// A `file://` remote is read in-process and in place (no `git upload-pack` per fetch, no
/// cache: the repository is on this machine): `lock`, `sync`, `verify` and `lock
/// --offline` work with no `git` on `PATH`; `verify`'s fresh fetch gets what a depth-1
/// fetch would, which git finds sound.
#[test]
fn a_file_remote_is_read_in_process_without_git() {
    let ctx = TestContext::new();
    let repo = ctx.repo("tools");
    repo.copy_fixture("lint", "plugins/lint");
    repo.commit("one");
    repo.tag_annotated("v1");
    repo.write("later.md", "later\n");
    let head = repo.commit("two");
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/tools/plugins/lint\"\nref = \"v1\"\n\n[[plugin]]\nsource = \"github:acme/tools\"\n",
    );
    let without_git = |args: &[&str]| {
        let out = ctx
            .berth()
            .env("PATH", "/nonexistent")
            .args(args)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    without_git(&["plugins", "sync"]);
    let lock = ctx.lock_text();
    let lint = berth_store::hash_path(&fixtures().join("plugins/lint")).expect("hash");
    assert_eq!(lock_field(&lock, 0, "hash"), Some(lint.to_sri()));
    assert_eq!(lock_field(&lock, 1, "rev"), Some(head.clone()));
    assert!(
        !ctx.store.join("git-v1/db").exists()
            || common::list_dir(&ctx.store.join("git-v1/db")).is_empty(),
        "nothing is cached of a repository on this machine"
    );
    without_git(&["plugins", "lock", "--offline", "--check"]);
    let verified = without_git(&["plugins", "verify", "-v"]);
    assert!(
        verified.contains("lint") && verified.contains("tools"),
        "{verified}"
    );
    // A locked commit the repository no longer has is named as missing.
    std::fs::remove_dir_all(ctx.store.join("store-v1")).expect("empty the store");
    std::fs::remove_dir_all(ctx.store.join("meta-v1")).expect("forget records");
    let lock = ctx.lock_text().replace(&head, &"1".repeat(40));
    std::fs::write(ctx.lock_path(), lock).expect("write lock");
    let out = ctx.run(&["plugins", "sync", "--frozen"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains(&"1".repeat(40)), "{}", out.stderr);
}
