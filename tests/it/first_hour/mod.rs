//! A newcomer's first hour (issue #42): the flags people bring from uv, Cargo and npm point
//! the way, every command that prints data follows one output convention, `-v` shows
//! each step and `-q` only errors, `plugins list` is a table with a header, and a fetch
//! that cannot reach its host says what to do next.

use crate::common;

use common::{GitRepo, Run, TestContext};

mod fixed;
mod read_only;

/// What a snapshot with commits in it replaces: a commit's first 12 digits (`[rev-12-hex]`, as wide), a content hash, a store path's digest.
fn filters_with_revs(ctx: &TestContext) -> Vec<(String, String)> {
    let mut filters = ctx.filters();
    filters.push((r"\b[0-9a-f]{12}\b".to_owned(), "[rev-12-hex]".to_owned()));
    filters.push((
        r"sha256-[A-Za-z0-9+/]{43}=".to_owned(),
        "sha256-[HASH]".to_owned(),
    ));
    filters.push((
        r"store-v1/[0-9a-z]{52}-".to_owned(),
        "store-v1/[NIX]-".to_owned(),
    ));
    filters
}

/// The `review` fixture tagged `v1.0.0`, then one commit more on `main`; a monorepo with
/// `lint` under `plugins/lint`; `house-rules` at the root of its own repository.
fn repos(ctx: &TestContext) -> GitRepo {
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("first");
    review.tag("v1.0.0");
    review.write("NOTES.md", "more\n");
    review.commit("second");
    let mono = ctx.repo("mono");
    mono.copy_fixture("lint", "plugins/lint");
    mono.commit("monorepo");
    let house = ctx.repo("house");
    house.copy_fixture("house-rules", "");
    house.commit("rules");
    review
}

/// A project of every pin form: a tag a range chose, a branch with a folder of the
/// repository, the default branch, a local folder.
fn every_form(ctx: &TestContext) {
    repos(ctx);
    let notes = ctx.work.join("notes/skills/notes");
    std::fs::create_dir_all(&notes).expect("mkdir");
    std::fs::write(
        notes.join("SKILL.md"),
        "---\nname: notes\ndescription: Notes\n---\nKeep notes.\n",
    )
    .expect("write skill");
    ctx.write_manifest(
        r#"[[plugin]]
source = "github:acme/review"
version = "^1"

[[plugin]]
source = "github:acme/mono"
ref = "main"
repo_path = "plugins/lint"

[[plugin]]
source = "github:acme/house"

[[plugin]]
source = "./notes"
"#,
    );
}

/// Item 5: a header, the version the plugin declares, what was asked for (the tag a range
/// chose, a branch, `default`), the short commit once, the source and `repo_path`, the
/// state; `--format json` keeps its shape.
#[test]
fn list_is_a_table_with_a_header() {
    let ctx = TestContext::new();
    every_form(&ctx);
    ctx.ok(&["plugins", "lock"]);
    berth_snapshot!(filters_with_revs(&ctx), ctx.berth().args(["plugins", "list"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----
    NAME    VERSION  REF          REV           SOURCE              PATH          STATE
    review  1.2.0    v1.0.0 (^1)  [rev-12-hex]  github:acme/review  -             synced
    lint    0.3.0    main         [rev-12-hex]  github:acme/mono    plugins/lint  synced
    house   -        default      [rev-12-hex]  github:acme/house   -             synced
    notes   -        -            -             ./notes             -             synced

    ----- stderr -----
    ");
    let json: serde_json::Value =
        serde_json::from_str(&ctx.ok(&["plugins", "list", "--format", "json"]).stdout)
            .expect("JSON");
    assert_eq!(json["plugins"].as_array().map(Vec::len), Some(4), "{json}");
    assert_eq!(json["plugins"][0]["resolved_ref"], "v1.0.0", "{json}");
}

/// Item 3: a flag uv or Cargo has that berth spells otherwise says what to write; `run`
/// takes its command without `--`.
#[test]
fn flags_from_other_tools_point_the_way() {
    let ctx = TestContext::new();
    ctx.write_manifest("");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock", "--locked"]), @r"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: unexpected argument '--locked' found

      tip: to fail when plugins.lock is out of date (uv's and Cargo's `--locked`), use `berth plugins lock --check`; `--locked` is a flag of `berth plugins sync`

    Usage: berth plugins lock [OPTIONS]

    For more information, try '--help'.
    ");
    let tag = ctx.run(&["plugins", "add", "github:acme/review", "--tag", "v1"]);
    assert_eq!(tag.code, 2);
    assert!(tag.stderr.contains("`--ref NAME`"), "{}", tag.stderr);
    // A flag berth has no tip for stays clap's own error.
    let other = ctx.run(&["plugins", "lock", "--frobnicate"]);
    assert_eq!(other.code, 2);
    assert!(!other.stderr.contains("tip: to"), "{}", other.stderr);

    ctx.ok(&["plugins", "lock"]);
    assert_eq!(ctx.ok(&["run", "echo", "hi"]).stdout, "hi\n");
    assert_eq!(
        ctx.ok(&["run", "echo", "-v", "--frozen"]).stdout,
        "-v --frozen\n"
    );
    assert_eq!(ctx.ok(&["run", "--", "echo", "-q"]).stdout, "-q\n");
}

/// Item 4: every command that prints data takes `--format json` and `--json` alike, and
/// `--format text` is for people.
#[test]
fn every_data_command_takes_format_and_json() {
    let ctx = TestContext::new();
    every_form(&ctx);
    ctx.ok(&["plugins", "sync"]);
    std::fs::copy(ctx.lock_path(), ctx.work.join("old.lock")).expect("copy lock");
    let commands: [&[&str]; 7] = [
        &["plugins", "list"],
        &["plugins", "show"],
        &["plugins", "verify"],
        &["plugins", "diff", "--from", "old.lock"],
        &["audit"],
        &["store", "verify"],
        &["store", "gc", "--dry-run"],
    ];
    for command in commands {
        let with = |extra: &[&str]| {
            let args: Vec<&str> = command.iter().chain(extra).copied().collect();
            ctx.ok(&args).stdout
        };
        let long = with(&["--format", "json"]);
        let short = with(&["--json"]);
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(&long);
        assert!(parsed.is_ok(), "{command:?} --format json:\n{long}");
        assert_eq!(long, short, "{command:?}: --json is --format json");
        let text = with(&["--format", "text"]);
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_err() || text.is_empty(),
            "{command:?} --format text printed JSON"
        );
    }
}

/// Item 4: `--help` lists only the options a command reads: fetching options on the
/// commands that fetch, not on `run`, `show`, `list` or `materialize`.
#[test]
fn help_lists_only_the_options_a_command_reads() {
    let ctx = TestContext::new();
    let fetching = [
        "--jobs",
        "--index-url",
        "--substituter",
        "--trusted-public-key",
    ];
    for command in [
        &["run", "--help"][..],
        &["plugins", "show", "--help"],
        &["plugins", "list", "--help"],
        &["materialize", "--help"],
        &["hooks", "run", "--help"],
        &["audit", "--help"],
    ] {
        let help = ctx.ok(command).stdout;
        for option in fetching {
            assert!(
                !help.contains(option),
                "{command:?} lists {option}:\n{help}"
            );
        }
        assert!(help.contains("--color"), "{command:?}:\n{help}");
    }
    for command in [
        &["plugins", "sync", "--help"][..],
        &["plugins", "lock", "--help"],
    ] {
        let help = ctx.ok(command).stdout;
        for option in fetching {
            assert!(help.contains(option), "{command:?} lacks {option}:\n{help}");
        }
    }
}

/// Item 4: `--color always|never` win over the environment; `auto` follows `NO_COLOR`
/// and `CLICOLOR_FORCE`.
#[test]
fn color_follows_the_flag_then_the_environment() {
    let ctx = TestContext::new();
    ctx.write_manifest("[[plugin]]\nsource = \"./missing\"\n");
    let colored = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = ctx.berth();
        cmd.env_remove("NO_COLOR")
            .args(args)
            .args(["plugins", "lock"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run");
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).contains("\x1b[")
    };
    assert!(colored(&["--color", "always"], &[("NO_COLOR", "1")]));
    assert!(!colored(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]));
    assert!(colored(&[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!colored(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
    assert!(!colored(&[], &[]), "stderr is not a terminal here");
    let bad = ctx.run(&["--color", "sometimes", "plugins", "list"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

/// Item 4: `-v` shows what each entry resolved to and how long it took, and what `sync`
/// found already present; `-q` prints only errors.
#[test]
fn verbose_shows_each_step_and_quiet_only_errors() {
    let ctx = TestContext::new();
    every_form(&ctx);
    let filters = filters_with_revs(&ctx);
    let lock = ctx
        .berth()
        .args(["-v", "plugins", "lock", "-j", "1"])
        .output()
        .expect("run");
    let stderr = common::apply_filters(&String::from_utf8_lossy(&lock.stderr), &filters);
    for line in [
        "    Resolved review ^1 to v1.0.0 ([rev-12-hex]) in [TIME]",
        "    Resolved lint main to [rev-12-hex] in [TIME]",
        "    Resolved house to [rev-12-hex] in [TIME]",
        "    Resolved notes to sha256-[HASH] in [TIME]",
    ] {
        assert!(
            stderr.lines().any(|l| l == line),
            "{line:?} missing:\n{stderr}"
        );
    }
    let again = ctx
        .berth()
        .args(["-v", "plugins", "lock", "--upgrade-plugin", "lint"])
        .output()
        .expect("run");
    let stderr = common::apply_filters(&String::from_utf8_lossy(&again.stderr), &filters);
    assert!(
        stderr.contains("        Kept review at v1.0.0 ([rev-12-hex])"),
        "{stderr}"
    );
    assert!(
        stderr.contains("    Resolved lint main to [rev-12-hex] (unchanged) in [TIME]"),
        "{stderr}"
    );

    ctx.ok(&["plugins", "sync"]);
    let sync = ctx.ok(&["-v", "plugins", "sync"]);
    assert!(
        sync.stderr
            .lines()
            .filter(|l| l.trim_start().starts_with("Present "))
            .count()
            == 4,
        "{}",
        sync.stderr
    );
    assert!(!ctx.ok(&["plugins", "sync"]).stderr.contains("Present"));

    // A warning (the lock is behind the manifest) is shown, and left out by `-q`.
    ctx.write_manifest(
        &std::fs::read_to_string(ctx.manifest_path())
            .expect("manifest")
            .replace("version = \"^1\"", "version = \"^1.0\""),
    );
    assert!(ctx.ok(&["plugins", "list"]).stderr.contains("warning:"));
    let quiet = ctx.ok(&["-q", "plugins", "list"]);
    assert_eq!(quiet.stderr, "", "-q prints only errors");
    ctx.write_manifest("[[plugin]]\nsource = \"./missing\"\n");
    let failed = ctx.run(&["-q", "plugins", "lock"]);
    assert_eq!(failed.code, 1);
    assert!(failed.stderr.starts_with("error: "), "{}", failed.stderr);
}

/// Item 6: a host that cannot be reached is one short line naming why, then what to try
/// (no library log line before it, no line number the file does not have); an offline
/// error names the plugin once.
#[test]
fn an_unreachable_host_says_what_to_do_next() {
    let ctx = TestContext::new();
    ctx.write_manifest("[[plugin]]\nsource = \"github:obra/superpowers\"\n");
    let refused = || {
        let mut cmd = ctx.berth();
        cmd.env("BERTH_GITHUB_URL", "http://127.0.0.1:9");
        cmd
    };
    berth_snapshot!(ctx.filters(), refused().args(["plugins", "lock"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:2: `github:obra/superpowers`: could not reach `http://127.0.0.1:9/obra/superpowers.git`: the connection was refused
      hint: check the network and any proxy (`HTTPS_PROXY`); `--offline` uses only what the store and git cache hold, `--substituter URL` tries a binary cache first, and `BERTH_GITHUB_URL` points `github:` at a mirror
    ");

    // `plugins add` names the entry it would add, not a line of text never written.
    ctx.write_manifest("# our plugins\n");
    berth_snapshot!(ctx.filters(), refused().args(["plugins", "add", "github:obra/superpowers"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: the new entry `github:obra/superpowers`: could not reach `http://127.0.0.1:9/obra/superpowers.git`: the connection was refused
      hint: check the network and any proxy (`HTTPS_PROXY`); `--offline` uses only what the store and git cache hold, `--substituter URL` tries a binary cache first, and `BERTH_GITHUB_URL` points `github:` at a mirror
    ");
    assert_eq!(
        std::fs::read_to_string(ctx.manifest_path()).expect("manifest"),
        "# our plugins\n"
    );

    // A certificate no root vouches for: the error says so, and nothing is logged first.
    if !common::on_path("openssl") {
        common::require_or_skip(
            "openssl",
            "install it (Debian: `openssl`) for the https forge",
        );
        return;
    }
    let certs = crate::ssrf::Certs::make(&ctx.root.join("tls")).expect("openssl and python3");
    repos(&ctx);
    let forge = crate::ssrf::Forge::start(&ctx.upstream, &certs, &ctx.root.join("forge.log"), &[]);
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\n");
    let tls = Run::from(
        ctx.berth()
            .env(
                "BERTH_GITHUB_URL",
                format!("https://localhost:{}", forge.port),
            )
            .args(["plugins", "lock"])
            .output()
            .expect("run"),
    );
    assert_eq!(tls.code, 1);
    let first = tls.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: plugins.toml:2: `github:acme/review`: could not reach")
            && first.contains("its TLS certificate is not trusted"),
        "{}",
        tls.stderr
    );
    assert!(tls.stderr.contains("  hint: "), "{}", tls.stderr);
}

/// Item 7: `berth init` writes a manifest that explains itself and locks to an empty set;
/// it never writes over one.
#[test]
fn init_writes_a_manifest_that_explains_itself() {
    let ctx = TestContext::new();
    berth_snapshot!(ctx.filters(), ctx.berth().args(["init"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
         Created `plugins.toml`
            Next `berth plugins add SOURCE` (SOURCE: `github:OWNER/REPO`, a URL, `./path`)
    ");
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("manifest");
    assert!(manifest.contains("# [[plugin]]") && manifest.contains("# [[marketplace]]"));
    ctx.ok(&["plugins", "lock"]);
    assert!(ctx.lock_path().exists());
    berth_snapshot!(ctx.filters(), ctx.berth().args(["init"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.toml` already exists; add plugins to it with `berth plugins add SOURCE`
    ");
    assert_eq!(
        std::fs::read_to_string(ctx.manifest_path()).expect("manifest"),
        manifest
    );
    ctx.ok(&["init", "agents/review"]);
    assert!(ctx.work.join("agents/review/plugins.toml").is_file());
}

/// Item 7: completion scripts for the shells clap knows; bash's parses.
#[test]
fn completions_cover_every_command() {
    let ctx = TestContext::new();
    let bash = ctx.ok(&["completions", "bash"]).stdout;
    for word in ["outdated", "marketplace", "materialize", "--upgrade-plugin"] {
        assert!(bash.contains(word), "bash completions lack `{word}`");
    }
    let script = ctx.root.join("berth.bash");
    std::fs::write(&script, &bash).expect("write script");
    let parsed = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .expect("bash");
    assert!(parsed.success(), "bash -n refuses the script");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = ctx.ok(&["completions", shell]).stdout;
        assert!(out.contains("outdated"), "{shell}: {out}");
    }
    assert_eq!(ctx.run(&["completions", "tcsh"]).code, 2);
}

/// Item 7: `materialize claude` without DIR writes the user's Claude Code folder
/// (`$CLAUDE_CONFIG_DIR`, else `~/.claude`) once asked on a terminal or told `--yes`;
/// elsewhere it names the folder and writes nothing. Other targets need DIR.
#[test]
fn materialize_claude_defaults_to_the_users_folder() {
    if !common::on_path("script") {
        common::require_or_skip(
            "`script` (a terminal)",
            "install util-linux's `script` (Debian: `bsdutils`)",
        );
        return;
    }
    let ctx = TestContext::new();
    every_form(&ctx);
    ctx.ok(&["plugins", "sync"]);
    let home_claude = ctx.home.join(".claude");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["materialize", "claude"]), @r"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: no folder given: for claude that is your Claude Code folder `[TMP]/home/.claude`; pass `--yes` to write there, or name a folder (`berth materialize claude DIR`)
    ");
    assert!(!home_claude.exists(), "nothing written");
    let codex = ctx.run(&["materialize", "codex"]);
    assert_eq!(codex.code, 1);
    assert!(
        codex.stderr.contains("`berth materialize codex DIR`"),
        "{}",
        codex.stderr
    );

    let config = ctx.root.join("claude-config");
    let yes = ctx
        .berth()
        .env("CLAUDE_CONFIG_DIR", &config)
        .args(["materialize", "claude", "--yes"])
        .output()
        .expect("run");
    assert!(
        yes.status.success(),
        "{}",
        String::from_utf8_lossy(&yes.stderr)
    );
    assert!(
        config.join("plugins").is_dir(),
        "written to $CLAUDE_CONFIG_DIR"
    );
    assert!(!home_claude.exists());
    ctx.ok(&["materialize", "claude", "--yes"]);
    assert!(home_claude.join("plugins").is_dir(), "written to ~/.claude");

    // On a terminal it asks: `n` writes nothing, `y` writes.
    let asked = ctx.root.join("asked");
    let on_terminal = |answer: &str| {
        let command = format!("{} materialize claude", common::berth_bin().display());
        let mut child = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .current_dir(&ctx.work)
            .env("HOME", &ctx.home)
            .env("BERTH_STORE", &ctx.store)
            .env("CLAUDE_CONFIG_DIR", &asked)
            .env("TERM", "dumb")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("script (util-linux)");
        // The answer is typed once the question is on the screen, as a person would.
        use std::io::{Read as _, Write as _};
        let mut stdout = child.stdout.take().expect("stdout");
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !String::from_utf8_lossy(&seen).contains("[y/N] ") {
            let n = stdout.read(&mut byte).expect("read the terminal");
            assert_ne!(n, 0, "no question:\n{}", String::from_utf8_lossy(&seen));
            seen.push(byte[0]);
        }
        // The keyboard stays open until berth is done: `script` ends its session when its
        // input ends.
        let mut keyboard = child.stdin.take().expect("stdin");
        keyboard.write_all(answer.as_bytes()).expect("answer");
        stdout.read_to_end(&mut seen).expect("read the terminal");
        child.wait().expect("script");
        drop(keyboard);
        String::from_utf8_lossy(&seen).into_owned()
    };
    let declined = on_terminal("n\n");
    assert!(
        declined.contains("Write the locked plugins into your Claude Code folder"),
        "{declined}"
    );
    assert!(declined.contains("not confirmed"), "{declined}");
    assert!(!asked.exists(), "declined: nothing written");
    let accepted = on_terminal("y\n");
    assert!(accepted.contains("Wrote"), "{accepted}");
    assert!(asked.join("plugins").is_dir(), "accepted: written");
}

/// Item 8: what `lock` put in the store is counted by the `sync` that locked, and its
/// store lines do not read as a second change before the lock's own.
#[test]
fn a_first_sync_counts_what_locking_stored() {
    let ctx = TestContext::new();
    every_form(&ctx);
    let sync = ctx.ok(&["plugins", "sync", "-j", "1"]);
    let filters = filters_with_revs(&ctx);
    let stderr = common::apply_filters(&sync.stderr, &filters);
    assert!(
        stderr.contains("      Synced 4 plugins (4 added) in [TIME]"),
        "{stderr}"
    );
    assert!(!stderr.contains("       Added "), "{stderr}");
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("      Adding "))
            .count(),
        4,
        "{stderr}"
    );
    let again = ctx.ok(&["plugins", "sync"]);
    assert!(again.stderr.contains("(0 added)"), "{}", again.stderr);
    // `-v` still shows each store entry as it is added.
    std::fs::remove_file(ctx.lock_path()).expect("remove lock");
    ctx.wipe_store_entries();
    let verbose = ctx.ok(&["-v", "plugins", "lock"]);
    assert_eq!(
        verbose
            .stderr
            .lines()
            .filter(|l| l.starts_with("       Added "))
            .count(),
        4,
        "{}",
        verbose.stderr
    );
}
