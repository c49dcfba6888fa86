//! The first hour, fixed (issue #57, part 5): each surprise a new user met is a test here.

use crate::common;

use common::TestContext;

/// A local plugin folder `name` in the work folder, with one skill.
pub(super) fn local_plugin(ctx: &TestContext, name: &str) {
    let skill = ctx.work.join(name).join("skills").join(name);
    std::fs::create_dir_all(&skill).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {name}\n---\nDo {name}.\n"),
    )
    .expect("write skill");
}

/// b: `[[plugins]]` (a typo of `[[plugin]]`) locked nothing and exited 0; now it is an
/// error naming the file, the line and the table, with what was meant.
#[test]
fn an_unknown_table_is_an_error_with_a_did_you_mean() {
    let ctx = TestContext::new();
    local_plugin(&ctx, "notes");
    ctx.write_manifest("[[plugins]]\nsource = \"./notes\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:1:3: unknown table `[[plugins]]`; did you mean `[[plugin]]`? (a manifest holds `[[plugin]]` and `[[marketplace]]` tables, an optional `[agent]` and `exclude-newer`)
    ");
    assert!(!ctx.lock_path().exists(), "nothing locked");
    ctx.write_manifest("[[plugin]]\nsource = \"./notes\"\n\n[marketplaces]\nname = \"x\"\n");
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "plugins.toml:4:2: unknown table `[marketplaces]`; did you mean `[[marketplace]]`?"
        ),
        "{}",
        run.stderr
    );
}

/// b: an unknown key in an entry (`tag = "v1"`, as Cargo spells a git tag) was ignored and
/// the default branch locked; now it is an error at its line naming the key to use.
#[test]
fn an_unknown_key_in_an_entry_is_an_error_with_a_did_you_mean() {
    let ctx = TestContext::new();
    let repo = ctx.repo("review");
    repo.copy_fixture("review", "");
    repo.commit("first");
    repo.tag("v1");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\ntag = \"v1\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:3:1: unknown key `tag` in `[[plugin]]`; did you mean `ref`? (the keys are `source`, `ref`, `version`, `repo_path`, `hash`, `archive_hash`, `name`)
    ");
    assert!(!ctx.lock_path().exists(), "nothing locked");
    for (key, meant) in [
        ("repo-path", "repo_path"),
        ("sorce", "source"),
        ("branch", "ref"),
    ] {
        ctx.write_manifest(&format!(
            "[[plugin]]\nsource = \"github:acme/review\"\n{key} = \"x\"\n"
        ));
        let run = ctx.run(&["plugins", "sync"]);
        assert_eq!(run.code, 1, "{key}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "plugins.toml:3:1: unknown key `{key}` in `[[plugin]]`; did you mean `{meant}`?"
            )),
            "{key}: {}",
            run.stderr
        );
    }
}

/// c: after the manifest changes, `show` and `list` print the lock as it is with a
/// warning saying it is stale, and refuse under `--locked` (as `run` refuses).
#[test]
fn show_and_list_say_the_lock_is_stale() {
    let ctx = TestContext::new();
    local_plugin(&ctx, "notes");
    local_plugin(&ctx, "extra");
    ctx.write_manifest("[[plugin]]\nsource = \"./notes\"\n");
    ctx.ok(&["plugins", "sync"]);
    for command in [["plugins", "show"], ["plugins", "list"]] {
        let fresh = ctx.ok(&command);
        assert!(!fresh.stderr.contains("warning"), "{}", fresh.stderr);
        assert_eq!(ctx.ok(&[command[0], command[1], "--locked"]).code, 0);
    }
    ctx.write_manifest("[[plugin]]\nsource = \"./notes\"\n\n[[plugin]]\nsource = \"./extra\"\n");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "list"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    NAME   VERSION  REF  REV  SOURCE   PATH  STATE
    notes  -        -    -    ./notes  -     synced

    ----- stderr -----
    warning: `plugins.lock` is out of date with `plugins.toml` (entry 2 (`./extra`) is not in the lock); this is the lock as it is: run `berth plugins lock` to update it
    ");
    let show = ctx.ok(&["plugins", "show"]);
    assert!(
        show.stderr
            .contains("warning: `plugins.lock` is out of date"),
        "{}",
        show.stderr
    );
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "show", "--locked"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `--locked` was given but `plugins.lock` is out of date with `plugins.toml`
      entry 2 (`./extra`) is not in the lock
      hint: run `berth plugins lock` (or `berth plugins sync`) to update it
    ");
    let list = ctx.run(&["plugins", "list", "--locked", "--json"]);
    assert_eq!(list.code, 1, "{}", list.stderr);
    assert_eq!(list.stdout, "", "nothing printed when refused");
}

/// d: from a subfolder of a project berth finds `plugins.toml` upward, as Cargo finds
/// `Cargo.toml`, and the lock beside it; with no manifest anywhere the hints say how to
/// start one instead of sending `show` to `lock` and `lock` back.
#[test]
fn the_manifest_is_found_upward() {
    let ctx = TestContext::new();
    local_plugin(&ctx, "notes");
    ctx.write_manifest("[[plugin]]\nsource = \"./notes\"\n");
    let deep = ctx.work.join("src/deeper");
    std::fs::create_dir_all(&deep).expect("mkdir");
    ctx.ok_in(&deep, &["plugins", "sync"]);
    assert!(ctx.lock_path().is_file(), "the lock is beside the manifest");
    assert!(!deep.join("plugins.lock").exists());
    let list = ctx.ok_in(&deep, &["plugins", "list"]);
    assert!(list.stdout.contains("notes"), "{}", list.stdout);
    assert_eq!(ctx.ok_in(&deep, &["run", "true"]).code, 0);

    // No manifest here or above: every command says how to start a project.
    let empty = ctx.root.join("elsewhere");
    std::fs::create_dir_all(&empty).expect("mkdir");
    for command in [
        &["plugins", "show"][..],
        &["plugins", "list"],
        &["plugins", "lock"],
        &["plugins", "sync"],
        &["run", "true"],
    ] {
        let run = common::Run::from(
            ctx.berth()
                .current_dir(&empty)
                .args(command)
                .output()
                .expect("run"),
        );
        assert_eq!(run.code, 1, "{command:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("no `plugins.toml` in this folder or any folder above it")
                && run.stderr.contains("`berth init`"),
            "{command:?}: {}",
            run.stderr
        );
    }
}

/// f: on a terminal each status line ends in a newline, not in spaces up to the terminal's
/// width (what a copy of the terminal held), while a fetch's progress is drawn; off a
/// terminal the lines are plain.
#[test]
fn status_lines_end_in_newlines_on_a_terminal() {
    if !common::on_path("script") {
        common::require_or_skip(
            "`script` (a terminal)",
            "install util-linux's `script` (Debian: `bsdutils`)",
        );
        return;
    }
    let ctx = TestContext::new();
    let repo = ctx.repo("review");
    repo.copy_fixture("review", "");
    repo.commit("first");
    local_plugin(&ctx, "notes");
    // Long enough to hash that its spinner is drawn (64 MiB, about 40 ms).
    std::fs::write(ctx.work.join("notes/data.bin"), vec![7u8; 64 << 20]).expect("write data");
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/review\"\n\n[[plugin]]\nsource = \"./notes\"\n",
    );
    let command = format!(
        "stty cols 200 rows 40; {} plugins sync",
        common::berth_bin().display()
    );
    // The keyboard stays open until berth is done: `script` ends its session when its
    // input ends.
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(&ctx.work)
        .env("HOME", &ctx.home)
        .env("BERTH_STORE", &ctx.store)
        .env("BERTH_GITHUB_URL", ctx.github_url())
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script (util-linux)");
    let keyboard = child.stdin.take();
    let terminal = child.wait_with_output().expect("script");
    drop(keyboard);
    let seen = String::from_utf8_lossy(&terminal.stdout).into_owned();
    assert!(terminal.status.success(), "{seen}");
    // What the screen shows once berth is done: a bar's line is erased (`\r`, then
    // `ESC [2K`) before the line that replaces it.
    let escapes = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("regex");
    let screen: Vec<String> = seen
        .split('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let shown = line.rsplit(['\r']).next().unwrap_or(line);
            let shown = shown.rsplit("\x1b[2K").next().unwrap_or(shown);
            escapes.replace_all(shown, "").into_owned()
        })
        .filter(|line| !line.is_empty())
        .collect();
    assert!(
        screen
            .iter()
            .any(|l| l.contains("Synced 2 plugins (2 added) in ")),
        "{screen:#?}\n{seen:?}"
    );
    for line in &screen {
        assert!(
            !line.ends_with(' ') && !line.contains(&" ".repeat(24)),
            "padded: {line:?}\n{seen:?}"
        );
    }
    // Hashing a local folder shows a spinner while it runs.
    assert!(seen.contains("Hashing ./notes"), "{seen:?}");
    // Off a terminal: plain lines, no escape sequences, no padding.
    ctx.wipe_store_entries();
    std::fs::remove_file(ctx.lock_path()).expect("remove lock");
    let plain = ctx.ok(&["plugins", "sync"]);
    assert!(!plain.stderr.contains('\x1b'), "{:?}", plain.stderr);
    assert!(!plain.stderr.contains("Hashing"), "{:?}", plain.stderr);
    assert!(
        plain.stderr.lines().all(|l| !l.ends_with(' ')),
        "{:?}",
        plain.stderr
    );
}

/// g: a test skipped for a missing tool said so through `eprintln!`, which the test
/// harness hides for a passing test, so a plain `cargo test` counted it as passed in
/// silence; the line now reaches the terminal, naming the test, the tool and what to do.
#[test]
fn a_skipped_test_says_so_on_the_terminal_of_a_plain_cargo_test() {
    let test = "materialize::claude_code_lists_and_details_exactly_the_locked_plugins";
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([test, "--exact"])
        .env_remove("CI")
        .env_remove("BERTH_CLAUDE")
        .env_remove("BERTH_CLAUDE_PREVIOUS")
        .env_remove("BERTH_CLAUDE_NEWEST")
        .output()
        .expect("run the test binary");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "skipped: {test}: BERTH_CLAUDE is missing; see .ci/run"
        )),
        "{stderr}"
    );
}
