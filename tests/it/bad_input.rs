//! Bad input gets one clear line naming the manifest line or plugin, exit status 1, and
//! nothing written: no lockfile, no store entry, no cache (issue #2, docs/spec.md section 6).

use crate::common;

use common::{TestContext, list_dir};

/// Runs `lock` and `sync` on `manifest` and checks the failure contract for both; returns
/// the error line, the same for both (with the test's folder as `[TMP]`), to snapshot.
fn assert_refused(ctx: &TestContext, manifest: &str, needles: &[&str]) -> String {
    ctx.write_manifest(manifest);
    let mut error = None::<String>;
    for command in ["lock", "sync"] {
        let run = ctx.run(&["plugins", command]);
        assert_eq!(run.code, 1, "{command}: {}", run.stderr);
        // Progress lines (a right-aligned verb) may come first; then one `error:` line and
        // no follow-up detail lines.
        let lines = run.messages();
        assert_eq!(
            lines.len(),
            1,
            "{command}: one line expected:\n{}",
            run.stderr
        );
        assert!(lines[0].starts_with("error: "), "{}", lines[0]);
        let redacted = ctx.redact(lines[0]);
        assert_eq!(
            error.get_or_insert_with(|| redacted.clone()),
            &redacted,
            "lock and sync say the same"
        );
        for needle in needles {
            assert!(
                lines[0].contains(needle),
                "{command}: `{needle}` not in: {}",
                lines[0]
            );
        }
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert!(!ctx.lock_path().exists(), "{command} wrote a lockfile");
        assert!(
            ctx.store_entries().is_empty(),
            "{command} added store entries"
        );
        assert!(
            list_dir(&ctx.store.join("git-v1/db")).is_empty(),
            "{command} left a git cache"
        );
        assert!(
            list_dir(&ctx.store.join("tmp"))
                .iter()
                .all(|f| f.ends_with(".lock"))
                || list_dir(&ctx.store.join("tmp")).is_empty()
        );
    }
    error.expect("two runs")
}

#[test]
fn malformed_toml_names_line_and_column() {
    let ctx = TestContext::new();
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/x\"\n\n[[plugin]]\nsource = \"./a\nref = 1\n",
        &["plugins.toml:5:", "invalid TOML"],
    );
    insta::assert_snapshot!("malformed_toml", error);
}

#[test]
fn unknown_source_syntax_suggests_a_form() {
    let ctx = TestContext::new();
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"acme/tools\"\n",
        &[
            "plugins.toml:2:10",
            "`acme/tools`",
            "github:acme/tools",
            "./acme/tools",
        ],
    );
    insta::assert_snapshot!("unknown_source_syntax", error);
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"svn://127.0.0.1/acme/tools\"\n",
        &["plugins.toml:2:10", "`svn://127.0.0.1/acme/tools`"],
    );
    insta::assert_snapshot!("unknown_source_scheme", error);
}

#[test]
fn ref_with_version_is_refused() {
    let ctx = TestContext::new();
    assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/x\"\nref = \"main\"\nversion = \"^1.2\"\n",
        &["plugins.toml:4:", "`ref` and `version`"],
    );
}

#[test]
fn repo_path_leaving_the_repository_is_refused() {
    let ctx = TestContext::new();
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/x\"\nrepo_path = \"plugins/../../etc\"\n",
        &["plugins.toml:3:", "`repo_path", "`..`"],
    );
    insta::assert_snapshot!("repo_path_dot_dot", error);
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/x\"\nrepo_path = \"/etc\"\n",
        &["plugins.toml:3:", "absolute"],
    );
    insta::assert_snapshot!("repo_path_absolute", error);
}

#[test]
fn an_unreachable_repository_names_the_entry() {
    let ctx = TestContext::new();
    std::fs::create_dir_all(ctx.work.join("ok")).expect("mkdir");
    let missing = ctx.root.join("no-such-repo.git");
    assert_refused(
        &ctx,
        &format!(
            "[[plugin]]\nsource = \"./ok\"\n\n[[plugin]]\nsource = \"file://{}\"\n",
            missing.display()
        ),
        &["plugins.toml:5:", "could not fetch", "no-such-repo.git"],
    );
    // Connection refused on a local port: nothing listens on the discard port.
    assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"http://127.0.0.1:9/acme/x.git\"\n",
        &[
            "plugins.toml:2:",
            "could not fetch from `http://127.0.0.1:9/acme/x.git`",
        ],
    );
}

#[test]
fn a_ref_that_does_not_exist_names_the_ref() {
    let ctx = TestContext::new();
    let repo = ctx.repo("tools");
    repo.copy_fixture("lint", "");
    repo.commit("one");
    repo.tag("v1");
    assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/tools\"\nref = \"v9\"\n",
        &["plugins.toml:2:", "no branch or tag named `v9`"],
    );
    let missing_commit = "0123456789abcdef0123456789abcdef01234567";
    assert_refused(
        &ctx,
        &format!("[[plugin]]\nsource = \"github:acme/tools\"\nref = \"{missing_commit}\"\n"),
        &[
            "plugins.toml:2:",
            &format!("commit `{missing_commit}` is not in"),
        ],
    );
}

#[test]
fn a_missing_repo_path_names_path_and_commit() {
    let ctx = TestContext::new();
    let repo = ctx.repo("mono");
    repo.copy_fixture("lint", "plugins/lint");
    let head = repo.commit("one");
    assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/mono\"\nrepo_path = \"plugins/nope\"\n",
        &["plugins.toml:2:", "`plugins/nope` does not exist", &head],
    );
}

#[test]
fn unknown_keys_warn_but_do_not_fail() {
    let ctx = TestContext::new();
    std::fs::create_dir_all(ctx.work.join("local")).expect("mkdir");
    ctx.write_manifest("[[plugin]]\nsource = \"./local\"\nrepo-path = \"x\"\n");
    let run = ctx.ok(&["plugins", "lock"]);
    assert!(
        run.stderr
            .contains("warning: plugins.toml:3:1: unknown key `repo-path`")
            && run.stderr.contains("did you mean `repo_path`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_lock_from_a_newer_berth_is_refused() {
    let ctx = TestContext::new();
    std::fs::create_dir_all(ctx.work.join("local")).expect("mkdir");
    ctx.write_manifest("[[plugin]]\nsource = \"./local\"\n");
    std::fs::write(ctx.lock_path(), "version = 7\n").expect("write");
    let run = ctx.run(&["plugins", "sync"]);
    assert_eq!(run.code, 1);
    assert!(
        run.errors()[0].contains("version 7") && run.errors()[0].contains("upgrade berth"),
        "{}",
        run.stderr
    );
    let messages = ctx.redact(&run.messages().join("\n"));
    insta::assert_snapshot!("lock_from_a_newer_berth", messages);
    assert_eq!(
        std::fs::read_to_string(ctx.lock_path()).expect("read"),
        "version = 7\n"
    );
}

#[test]
fn a_damaged_lock_is_regenerated_by_lock_but_refused_by_locked_sync() {
    let ctx = TestContext::new();
    std::fs::create_dir_all(ctx.work.join("local")).expect("mkdir");
    ctx.write_manifest("[[plugin]]\nsource = \"./local\"\n");
    std::fs::write(
        ctx.lock_path(),
        "version = 1\n[[plugin]]\nname = \"x\"\nsource = 7\n",
    )
    .expect("write");
    let locked = ctx.run(&["plugins", "sync", "--locked"]);
    assert_eq!(locked.code, 1);
    assert!(
        locked.errors()[0].starts_with("error: plugins.lock:4:"),
        "{}",
        locked.stderr
    );
    let lock = ctx.ok(&["plugins", "lock"]);
    assert!(
        lock.stderr.contains("warning: plugins.lock:4:"),
        "{}",
        lock.stderr
    );
    assert!(lock.stderr.contains("regenerated"), "{}", lock.stderr);
    ctx.ok(&["plugins", "lock", "--check"]);
}

#[test]
fn usage_errors_exit_2() {
    let ctx = TestContext::new();
    let run = ctx.run(&["plugins", "sync", "--locked", "--frozen"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = ctx.run(&["plugins", "frobnicate"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// A lock cannot point a local entry at another folder (issue #17): `path` is the folder
/// its `source` names, or the lock is invalid, whatever the hash says.
#[test]
fn a_lock_sending_a_local_entry_elsewhere_is_refused() {
    let ctx = TestContext::new();
    let plugin = ctx.work.join("plugins/p1/skills/s");
    std::fs::create_dir_all(&plugin).expect("mkdir");
    std::fs::write(
        plugin.join("SKILL.md"),
        "---\nname: s\ndescription: d\n---\nbody\n",
    )
    .expect("write");
    // The folder the forged lock points at, with the hash `lock` gives it.
    let secret = ctx.root.join("secret");
    std::fs::create_dir_all(&secret).expect("mkdir");
    std::fs::write(secret.join("id_ed25519"), "PRIVATE KEY\n").expect("write");
    let other = ctx.root.join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(
        other.join("plugins.toml"),
        format!("[[plugin]]\nsource = \"{}\"\n", secret.display()),
    )
    .expect("write");
    ctx.ok_in(&other, &["plugins", "lock"]);
    let secret_lock = std::fs::read_to_string(other.join("plugins.lock")).expect("read");
    let secret_hash = secret_lock
        .lines()
        .find_map(|l| l.strip_prefix("hash = "))
        .expect("a hash")
        .to_owned();

    ctx.write_manifest("[[plugin]]\nsource = \"./plugins/p1\"\n");
    ctx.ok(&["plugins", "lock"]);
    let honest = ctx.lock_text();
    let forged: String = honest
        .lines()
        .map(|l| {
            if l.starts_with("path = ") {
                format!("path = \"{}\"", secret.display())
            } else if l.starts_with("hash = ") {
                format!("hash = {secret_hash}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_ne!(forged, honest);
    std::fs::write(ctx.lock_path(), &forged).expect("write");
    // Both locks stored what they locked; what follows must copy nothing.
    ctx.wipe_store_entries();
    for args in [
        &["plugins", "sync", "--frozen"][..],
        &["plugins", "show"],
        &["plugins", "verify"],
        &["run", "--", "true"],
    ] {
        let run = ctx.run(args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("`p1`") && run.stderr.contains("is not the folder its source"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stdout.contains("PRIVATE KEY"), "{}", run.stdout);
    }
    assert!(
        ctx.store_entries().is_empty(),
        "nothing was copied: {:?}",
        ctx.store_entries()
    );
    assert_eq!(ctx.lock_text(), forged, "the lock is left as it is");
}
