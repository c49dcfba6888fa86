//! Bad input gets one clear line naming the manifest line or plugin, exit status 1, and
//! nothing written: no lockfile, no store entry, no cache (issue #2, docs/spec.md section 6).

use crate::common;

use common::{TestContext, list_dir};

/// Runs `lock` and `sync` on `manifest` and checks the failure contract for both; returns
/// the error line, the same for both (with the test's folder as `[TMP]`), to snapshot.
fn assert_refused(ctx: &TestContext, manifest: &str) -> String {
    ctx.write_manifest(manifest);
    let mut error = None::<String>;
    for command in ["lock", "sync"] {
        let run = ctx.run(&["plugins", command]);
        assert_eq!(run.code, 1, "{command}: {}", run.stderr);
        // Progress lines (a right-aligned verb) may come first; then one `error:` line and
        // no follow-up detail lines but a `hint:` of what to try.
        let lines: Vec<&str> = run
            .messages()
            .into_iter()
            .filter(|l| !l.starts_with("  hint: "))
            .collect();
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
    );
    insta::assert_snapshot!(error, @r#"error: plugins.toml:5:14: invalid TOML: invalid basic string, expected `"`"#);
}

#[test]
fn unknown_source_syntax_suggests_a_form() {
    let ctx = TestContext::new();
    let error = assert_refused(&ctx, "[[plugin]]\nsource = \"acme/tools\"\n");
    insta::assert_snapshot!(error, @"error: plugins.toml:2:10: unknown source `acme/tools`: write `github:acme/tools` for a GitHub repository or `./acme/tools` for a local folder");
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"svn://127.0.0.1/acme/tools\"\n",
    );
    insta::assert_snapshot!(error, @"error: plugins.toml:2:10: unknown source `svn://127.0.0.1/acme/tools`: use an `https://`, `http://`, `git://`, `ssh://` or `file://` URL");
}

#[test]
fn ref_with_version_is_refused() {
    let ctx = TestContext::new();
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/x\"\nref = \"main\"\nversion = \"^1.2\"\n",
    );
    insta::assert_snapshot!(error, @"error: plugins.toml:4:11: `ref` and `version` cannot both be given: pin a branch, tag or commit with `ref`, or a semver range with `version`");
}

#[test]
fn repo_path_leaving_the_repository_is_refused() {
    let ctx = TestContext::new();
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/x\"\nrepo_path = \"plugins/../../etc\"\n",
    );
    insta::assert_snapshot!(error, @r#"error: plugins.toml:3:13: `repo_path = "plugins/../../etc"` contains `..`; it must stay inside the repository"#);
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/x\"\nrepo_path = \"/etc\"\n",
    );
    insta::assert_snapshot!(error, @r#"error: plugins.toml:3:13: `repo_path = "/etc"` is absolute; give a path relative to the repository root"#);
}

#[test]
fn an_unreachable_repository_names_the_entry() {
    let ctx = TestContext::new();
    // A plugin folder (a skills folder), beside the entry that fails.
    std::fs::create_dir_all(ctx.work.join("ok/skills")).expect("mkdir");
    let missing = ctx.root.join("no-such-repo.git");
    let error = assert_refused(
        &ctx,
        &format!(
            "[[plugin]]\nsource = \"./ok\"\n\n[[plugin]]\nsource = \"file://{}\"\n",
            missing.display()
        ),
    );
    insta::assert_snapshot!(error, @r#"
    error: plugins.toml:5: `file://[TMP]/no-such-repo.git`: could not fetch from `file://[TMP]/no-such-repo.git`: "[TMP]/no-such-repo.git" does not appear to be a git repository: Could not retrieve metadata of "[TMP]/no-such-repo.git": No such file or directory (os error 2)
    "#);
    // Connection refused on a local port: nothing listens on the discard port.
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"http://127.0.0.1:9/acme/x.git\"\n",
    );
    insta::assert_snapshot!(error, @"error: plugins.toml:2: `http://127.0.0.1:9/acme/x.git`: could not reach `http://127.0.0.1:9/acme/x.git`: the connection was refused");
}

#[test]
fn a_ref_that_does_not_exist_names_the_ref() {
    let ctx = TestContext::new();
    let repo = ctx.repo("tools");
    repo.copy_fixture("lint", "");
    repo.commit("one");
    repo.tag("v1");
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/tools\"\nref = \"v9\"\n",
    );
    insta::assert_snapshot!(error, @"error: plugins.toml:2: `github:acme/tools`: `file://[TMP]/upstream/acme/tools.git` has no branch or tag named `v9`");
    let missing_commit = "0123456789abcdef0123456789abcdef01234567";
    let error = assert_refused(
        &ctx,
        &format!("[[plugin]]\nsource = \"github:acme/tools\"\nref = \"{missing_commit}\"\n"),
    );
    insta::assert_snapshot!(error, @"error: plugins.toml:2: `github:acme/tools`: commit `0123456789abcdef0123456789abcdef01234567` is not in `file://[TMP]/upstream/acme/tools.git`");
}

#[test]
fn a_missing_repo_path_names_path_and_commit() {
    let ctx = TestContext::new();
    let repo = ctx.repo("mono");
    repo.copy_fixture("lint", "plugins/lint");
    let head = repo.commit("one");
    let error = assert_refused(
        &ctx,
        "[[plugin]]\nsource = \"github:acme/mono\"\nrepo_path = \"plugins/nope\"\n",
    )
    .replace(&head, "[HEAD]");
    insta::assert_snapshot!(error, @"error: plugins.toml:2: `github:acme/mono`: `repo_path` `plugins/nope` does not exist at commit `[HEAD]`");
}

#[test]
fn unknown_keys_are_errors_with_a_did_you_mean() {
    let ctx = TestContext::new();
    std::fs::create_dir_all(ctx.work.join("local/skills")).expect("mkdir");
    ctx.write_manifest("[[plugin]]\nsource = \"./local\"\nrepo-path = \"x\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:3:1: unknown key `repo-path` in `[[plugin]]`; did you mean `repo_path`? (the keys are `source`, `ref`, `version`, `repo_path`, `hash`, `archive_hash`, `name`)
    ");
}

#[test]
fn a_lock_from_a_newer_berth_is_refused() {
    let ctx = TestContext::new();
    std::fs::create_dir_all(ctx.work.join("local/skills")).expect("mkdir");
    ctx.write_manifest("[[plugin]]\nsource = \"./local\"\n");
    std::fs::write(ctx.lock_path(), "version = 7\n").expect("write");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "sync"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.lock has lockfile version 7, but this berth understands version 1 only; upgrade berth
    "#);
    assert_eq!(
        std::fs::read_to_string(ctx.lock_path()).expect("read"),
        "version = 7\n"
    );
}

#[test]
fn a_damaged_lock_is_regenerated_by_lock_but_refused_by_locked_sync() {
    let ctx = TestContext::new();
    std::fs::create_dir_all(ctx.work.join("local/skills")).expect("mkdir");
    ctx.write_manifest("[[plugin]]\nsource = \"./local\"\n");
    std::fs::write(
        ctx.lock_path(),
        "version = 1\n[[plugin]]\nname = \"x\"\nsource = 7\n",
    )
    .expect("write");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "sync", "--locked"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.lock:4:10: invalid type: integer `7`, expected a string; run `berth plugins lock` to regenerate the lockfile
    "#);
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugins.lock:4:10: invalid type: integer `7`, expected a string; run `berth plugins lock` to regenerate the lockfile; it will be regenerated from the manifest
          Adding local sha256-xrjWNYHBTyO+
          Locked 1 plugin in `plugins.lock`
    ");
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
    // It passes for a plugin (a folder that holds none is refused before any of this).
    std::fs::write(
        secret.join("SKILL.md"),
        "---\nname: s\ndescription: d\n---\nb\n",
    )
    .expect("write");
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

/// `berth lock` (as `uv lock` sits at the top) is a usage error that says where the command
/// is; an unknown command gets clap's own error.
#[test]
fn a_plugins_command_at_the_top_says_where_it_is() {
    let ctx = TestContext::new();
    berth_snapshot!(ctx.filters(), ctx.berth().args(["lock"]), @r"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: unrecognized subcommand 'lock'

      tip: `lock` is a command of `berth plugins`: `berth plugins lock`

    Usage: berth [OPTIONS] <COMMAND>

    For more information, try '--help'.
    ");
    let unknown = ctx.run(&["frobnicate"]);
    assert_eq!(unknown.code, 2);
    assert!(!unknown.stderr.contains("tip:"), "{}", unknown.stderr);
}

/// A mistyped name gets the nearest real one (a swap counts as one edit), not a list of
/// everything or a suggestion built on the typo.
#[test]
fn typos_get_a_did_you_mean() {
    let ctx = TestContext::new();
    let refused = |manifest: &str| {
        ctx.write_manifest(manifest);
        let run = ctx.run(&["plugins", "lock"]);
        assert_ne!(run.code, 0, "{manifest}");
        run.stderr
    };
    let scheme = refused("[[plugin]]\nsource = \"gihtub:obra/superpowers\"\n");
    assert!(
        scheme.contains("did you mean `github:obra/superpowers`?"),
        "{scheme}"
    );
    assert!(!scheme.contains("github:gihtub"), "{scheme}");
    let key = refused("[[plugin]]\nsoruce = \"./x\"\n");
    assert!(
        key.contains(
            "plugins.toml:2:1: unknown key `soruce` in `[[plugin]]`; did you mean `source`?"
        ),
        "{key}"
    );

    // A marketplace of 12 plugins, one of them `code-review`.
    let market = ctx.work.join("market");
    let plugins: Vec<serde_json::Value> = std::iter::once("code-review".to_owned())
        .chain((0..11).map(|i| format!("tool-{i}")))
        .map(|name| serde_json::json!({"name": name, "source": format!("./{name}")}))
        .collect();
    std::fs::create_dir_all(market.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        serde_json::json!({"name": "official", "plugins": plugins}).to_string(),
    )
    .expect("catalog");
    let declared = "[[marketplace]]\nname = \"official\"\nsource = \"./market\"\n\n";
    let marketplace = refused(&format!(
        "{declared}[[plugin]]\nsource = \"code-review@offical\"\n"
    ));
    assert!(
        marketplace.contains("did you mean `code-review@official`?"),
        "{marketplace}"
    );
    let plugin = refused(&format!(
        "{declared}[[plugin]]\nsource = \"code-reveiw@official\"\n"
    ));
    assert!(
        plugin.contains("lists no plugin `code-reveiw`; did you mean `code-review`?"),
        "{plugin}"
    );
    assert!(
        !plugin.contains("tool-3"),
        "no list of every plugin: {plugin}"
    );
    let far = refused(&format!(
        "{declared}[[plugin]]\nsource = \"zzz@official\"\n"
    ));
    assert!(
        far.contains("it lists 12 plugins (`berth marketplace list official` shows them)"),
        "{far}"
    );
}
