//! See `main.rs`. Where berth's reach ends (P4-10, P4-12, P4-14 and P4-15 of
//! `shared/security/review-and-observe-attacks.md`, point 7 of issue #52): a source the
//! policy denies is never contacted, a folder that is not a plugin or holds private files
//! never reaches the store, `plugins import` reads only regular files, and two
//! `materialize` runs into one folder take turns. Each refusal is checked to write
//! nothing, beside what must still pass.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{GitRepo, Run, ServeProcess, TestContext, list_dir};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn write_policy(ctx: &TestContext, text: &str) {
    write(&ctx.work.join("berth-policy.toml"), text);
}

/// A plugin `NAME` in `dir`: its manifest and a skill.
fn plugin_at(dir: &Path, name: &str) {
    write(
        &dir.join(".claude-plugin/plugin.json"),
        &format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\"}}\n"),
    );
    write(
        &dir.join(format!("skills/{name}/SKILL.md")),
        &format!("---\nname: {name}\ndescription: d\n---\nbody\n"),
    );
}

/// A plugin repository `upstream/PATH.git`, committed.
fn plugin_repo(ctx: &TestContext, path: &str, name: &str) -> GitRepo {
    let repo = GitRepo::init(&ctx.upstream.join(format!("{path}.git")), &ctx.home);
    repo.write(
        ".claude-plugin/plugin.json",
        &format!("{{\"name\": \"{name}\"}}\n"),
    );
    repo.commit("a plugin");
    repo
}

/// `berth ARGS` fails, saying each of `needles`, and leaves no lock, no store entry and
/// no git cache behind.
fn refused(ctx: &TestContext, args: &[&str], needles: &[&str]) -> Run {
    let run = ctx.run(args);
    assert_eq!(run.code, 1, "{args:?} is refused:\n{}", run.stderr);
    assert!(
        !ctx.lock_path().exists(),
        "no lock written:\n{}",
        run.stderr
    );
    assert_eq!(ctx.store_entries(), Vec::<String>::new(), "nothing stored");
    assert_eq!(
        list_dir(&ctx.store.join("git-v1/db")),
        Vec::<String>::new(),
        "no git cache:\n{}",
        run.stderr
    );
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "`{needle}` not in:\n{}",
            run.stderr
        );
    }
    run
}

#[test]
fn p4_14_a_denied_source_is_never_contacted() {
    let ctx = TestContext::new();
    plugin_repo(&ctx, "evil/tool", "tool");
    plugin_repo(&ctx, "acme/ok", "ok");
    plugin_repo(&ctx, "other/x", "x");
    let market = GitRepo::init(&ctx.upstream.join("other/market.git"), &ctx.home);
    market.write(
        ".claude-plugin/marketplace.json",
        r#"{"name":"m","owner":{"name":"o"},"plugins":[{"name":"x","source":{"source":"github","repo":"other/x"}},{"name":"ok","source":{"source":"github","repo":"acme/ok"}}]}"#,
    );
    market.commit("catalog");
    let evil_market = GitRepo::init(&ctx.upstream.join("evil/market.git"), &ctx.home);
    evil_market.write(
        ".claude-plugin/marketplace.json",
        r#"{"name":"e","owner":{"name":"o"},"plugins":[{"name":"ok","source":{"source":"github","repo":"acme/ok"}}]}"#,
    );
    evil_market.commit("catalog");
    let server = ctx.serve_github_over_http();
    let asked = |what: &str| server.requests().iter().any(|r| r.contains(what));

    // The finding: a deny pattern refuses the plugin before its host is asked anything.
    write_policy(&ctx, "[sources]\ndeny = [\"github:evil/*\"]\n");
    ctx.write_manifest("[[plugin]]\nsource = \"github:evil/tool\"\n");
    for args in [&["plugins", "lock"][..], &["plugins", "sync"]] {
        refused(
            &ctx,
            args,
            &[
                "`github:evil/tool`: denied by the policy",
                "[`sources.deny = \"github:evil/*\"` in `",
                "berth fetched nothing from it",
            ],
        );
        assert!(!asked("/evil/"), "{args:?}: the denied host was asked");
    }
    // A marketplace a deny pattern matches is not read, whatever its catalog would give.
    ctx.write_manifest(
        "[[marketplace]]\nname = \"e\"\nsource = \"github:evil/market\"\n\n[[plugin]]\nsource = \"ok@e\"\n",
    );
    refused(
        &ctx,
        &["plugins", "lock"],
        &[
            "marketplace `e`",
            "its source `github:evil/market` is denied by",
        ],
    );
    // An allow list refuses what it does not name; a marketplace outside it is read (its
    // plugins may pass by their own sources), and what it names outside the list is not
    // fetched.
    write_policy(&ctx, "[sources]\nallow = [\"github:acme/*\"]\n");
    ctx.write_manifest("[[plugin]]\nsource = \"github:evil/tool\"\n");
    refused(
        &ctx,
        &["plugins", "lock"],
        &["`github:evil/tool`: not in the allow list of the policy"],
    );
    ctx.write_manifest(
        "[[marketplace]]\nname = \"m\"\nsource = \"github:other/market\"\n\n[[plugin]]\nsource = \"x@m\"\n",
    );
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("its source `github:other/x` (marketplace `m` at `github:other/market`) is not in the allow list"),
        "{}",
        run.stderr
    );
    assert!(!ctx.lock_path().exists());
    assert!(asked("/other/market"), "the marketplace is read");
    assert!(!asked("/evil/"), "a denied host is never asked");
    assert!(
        !asked("/other/x"),
        "a plugin outside the allow list is never asked"
    );

    // What the policy lets through still locks, from its host.
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/ok\"\n\n[[marketplace]]\nname = \"m\"\nsource = \"github:other/market\"\n\n[[plugin]]\nsource = \"ok@m\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    assert!(asked("/acme/ok"));

    // A lock made before the rule: `sync` of a fresh clone fetches nothing denied.
    std::fs::remove_file(ctx.work.join("berth-policy.toml")).expect("rm policy");
    ctx.write_manifest("[[plugin]]\nsource = \"github:evil/tool\"\n");
    ctx.ok(&["plugins", "lock"]);
    let before = server.requests().len();
    std::fs::remove_dir_all(&ctx.store).expect("a fresh store");
    write_policy(&ctx, "[sources]\ndeny = [\"github:evil/*\"]\n");
    for args in [&["plugins", "sync"][..], &["plugins", "sync", "--frozen"]] {
        let run = ctx.run(args);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("`github:evil/tool`: denied by the policy"),
            "{}",
            run.stderr
        );
        assert_eq!(
            server.requests().len(),
            before,
            "nothing asked: {}",
            run.stderr
        );
        assert_eq!(ctx.store_entries(), Vec::<String>::new());
    }
}

#[test]
fn p4_14_serve_refuses_a_denied_source_before_contacting_it() {
    let ctx = TestContext::new();
    plugin_repo(&ctx, "evil/tool", "tool");
    plugin_repo(&ctx, "acme/ok", "ok");
    let git = ctx.serve_github_over_http();
    write_policy(&ctx, "[sources]\ndeny = [\"github:evil/*\"]\n");
    let store = ctx.root.join("server-store");
    let mut cmd = ctx.berth();
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--allow-local-sources",
        "--data-dir",
    ])
    .arg(ctx.root.join("data"))
    .arg("--store")
    .arg(&store)
    .arg("--policy")
    .arg(ctx.work.join("berth-policy.toml"));
    let server = ServeProcess::start(cmd);
    let (status, body) = server.post(&json!({"plugins": [{"source": "github:evil/tool"}]}));
    assert_eq!(status, 403, "{body}");
    let error = &serde_json::from_str::<serde_json::Value>(&body).expect("JSON")["error"];
    assert_eq!(error["code"], "policy_denied", "{body}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("`sources.deny = \"github:evil/*\"`")),
        "{body}"
    );
    assert!(
        git.requests().iter().all(|r| !r.contains("/evil/")),
        "the denied host was asked: {:?}",
        git.requests()
    );
    assert_eq!(list_dir(&store.join("git-v1/db")), Vec::<String>::new());
    let (status, body) = server.post(&json!({"plugins": [{"source": "github:acme/ok"}]}));
    assert_eq!(status, 201, "{body}");
}

#[test]
fn p4_15_a_folder_that_holds_no_plugin_is_refused() {
    let ctx = TestContext::new();
    for source in ["/etc", "./notes"] {
        write(&ctx.work.join("notes/README.md"), "notes\n");
        ctx.write_manifest(&format!("[[plugin]]\nsource = \"{source}\"\n"));
        refused(
            &ctx,
            &["plugins", "lock"],
            &[
                "holds no plugin: neither a manifest (`.claude-plugin/plugin.json`",
                "`plugin.json`) nor a component a harness reads (`skills/`, `SKILL.md`",
                "point `source` at a plugin's folder",
            ],
        );
    }
    // A skill alone is a plugin.
    write(
        &ctx.work.join("notes/SKILL.md"),
        "---\nname: notes\ndescription: d\n---\nb\n",
    );
    ctx.ok(&["plugins", "lock"]);
}

#[test]
fn p4_15_a_file_only_its_owner_may_read_never_reaches_the_store() {
    let ctx = TestContext::new();
    let dir = ctx.work.join("p/x");
    plugin_at(&dir, "x");
    write(&dir.join(".env"), "TOKEN=secret\n");
    let chmod = |rel: &str, mode: u32| {
        std::fs::set_permissions(dir.join(rel), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
    };
    chmod(".env", 0o600);
    ctx.write_manifest("[[plugin]]\nsource = \"./p/x\"\n");
    for args in [&["plugins", "lock"][..], &["plugins", "sync"]] {
        refused(
            &ctx,
            args,
            &[
                "holds a file others may not read: `.env`",
                "the store is readable by every user of this machine",
                "`chmod o+r FILE`",
            ],
        );
    }
    // A private folder too, named with the file.
    chmod("skills", 0o700);
    refused(
        &ctx,
        &["plugins", "lock"],
        &["holds files others may not read: `.env`, `skills/`"],
    );
    chmod("skills", 0o755);
    chmod(".env", 0o644);
    ctx.ok(&["plugins", "lock"]);
    // A mode is not in the content hash: a file made private after the lock is refused
    // when the store copies it again.
    chmod(".env", 0o600);
    ctx.wipe_store_entries();
    let run = ctx.run(&["plugins", "sync", "--frozen"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("`.env`"), "{}", run.stderr);
    assert_eq!(ctx.store_entries(), Vec::<String>::new());
}

/// `berth ARGS` in `dir`, killed after `limit`: `None` if it had to be.
fn run_within(ctx: &TestContext, dir: &Path, args: &[&str], limit: Duration) -> Option<Run> {
    let mut child = ctx
        .berth()
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start berth");
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().expect("wait").is_some() {
            return Some(Run::from(child.wait_with_output().expect("output")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
}

#[test]
fn p4_10_import_reads_only_regular_files() {
    let ctx = TestContext::new();
    let limit = Duration::from_secs(10);
    let project = ctx.root.join("p10");
    std::fs::create_dir_all(&project).expect("mkdir");
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .status()
            .expect("git")
            .success()
    );
    // A FIFO first (it blocks a reader for ever), then a link to `/dev/zero` (endless).
    let fifo = project.join(".agents/plugins/x/.claude-plugin/plugin.json");
    mkfifo(&fifo);
    let import = ["plugins", "import", "--ambient", "."];
    let run = run_within(&ctx, &project, &import, limit)
        .expect("import finishes at once: a FIFO is not read");
    let named = format!(
        "`{}` is a device, FIFO or socket, not a regular file",
        fifo.display()
    );
    assert!(
        run.stderr.contains(&named),
        "{named} not in:\n{}",
        run.stderr
    );
    std::fs::remove_dir_all(project.join(".agents/plugins/x")).expect("rm");
    let zero = project.join(".agents/plugins/y/.claude-plugin/plugin.json");
    std::fs::create_dir_all(zero.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
    write(
        &project.join(".agents/plugins/y/SKILL.md"),
        "---\nname: y\ndescription: d\n---\nb\n",
    );
    let run = run_within(&ctx, &project, &import, limit)
        .expect("import finishes at once: `/dev/zero` is not read");
    let named = format!(
        "`{}` is a symbolic link, not a regular file",
        zero.display()
    );
    assert!(
        run.stderr.contains(&named),
        "{named} not in:\n{}",
        run.stderr
    );
    assert_eq!(
        run.code, 0,
        "the plugin is named after its folder:\n{}",
        run.stderr
    );
    let manifest = std::fs::read_to_string(project.join("plugins.toml")).expect("manifest");
    assert!(manifest.contains("/.agents/plugins/y\""), "{manifest}");

    // A record that is not a regular file is refused, naming it; no manifest is written.
    let installed = ctx.root.join("installed");
    std::fs::create_dir_all(&installed).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", installed.join(".installed.json")).expect("link");
    let conversation = ctx.root.join("conversation");
    mkfifo(&conversation.join("meta.json"));
    let empty = ctx.root.join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    for (args, record) in [
        (
            ["plugins", "import", "--conversation"],
            conversation.join("meta.json"),
        ),
        (
            ["plugins", "import", "--installed"],
            installed.join(".installed.json"),
        ),
    ] {
        let dir = record.parent().expect("parent").display().to_string();
        let mut args = args.to_vec();
        args.push(&dir);
        let run = run_within(&ctx, &empty, &args, limit).expect("refused at once");
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("`{}` is", record.display()))
                && run.stderr.contains("not a regular file"),
            "{}",
            run.stderr
        );
        assert!(!empty.join("plugins.toml").exists());
    }
}

#[test]
fn p4_12_two_materialize_runs_into_one_folder_take_turns() {
    let ctx = TestContext::new();
    let target = ctx.root.join("claude");
    // Two projects of six plugins each, with their own stores: the lock is on the folder,
    // not in a store.
    let projects: Vec<(std::path::PathBuf, std::path::PathBuf)> = ["a", "b"]
        .iter()
        .map(|p| {
            let work = ctx.root.join(format!("project-{p}"));
            let mut manifest = String::new();
            for i in 0..6 {
                plugin_at(&work.join(format!("plugins/{p}{i}")), &format!("{p}{i}"));
                manifest.push_str(&format!("[[plugin]]\nsource = \"./plugins/{p}{i}\"\n\n"));
            }
            write(&work.join("plugins.toml"), &manifest);
            let store = ctx.root.join(format!("store-{p}"));
            (work, store)
        })
        .collect();
    let berth = |(work, store): &(std::path::PathBuf, std::path::PathBuf), args: &[&str]| {
        let mut cmd = ctx.berth();
        cmd.current_dir(work).env("BERTH_STORE", store).args(args);
        cmd
    };
    for project in &projects {
        let run = Run::from(berth(project, &["plugins", "sync"]).output().expect("sync"));
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let dir = target.display().to_string();
    let mut waited = 0;
    for round in 0..5 {
        let children: Vec<_> = projects
            .iter()
            .map(|p| {
                berth(p, &["materialize", "claude", &dir])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start materialize")
            })
            .collect();
        let runs: Vec<Run> = children
            .into_iter()
            .map(|c| Run::from(c.wait_with_output().expect("wait")))
            .collect();
        for run in &runs {
            assert_eq!(run.code, 0, "round {round}: {}", run.stderr);
        }
        // The run that wrote last left exactly its set: its `--check` passes, the
        // other's finds its own set gone. A run that waited wrote last.
        let checks: Vec<bool> = projects
            .iter()
            .map(|p| {
                let check = berth(p, &["materialize", "claude", &dir, "--check"]).output();
                Run::from(check.expect("check")).code == 0
            })
            .collect();
        assert_eq!(
            checks.iter().filter(|c| **c).count(),
            1,
            "round {round}: one set is whole, and the other's is not: {checks:?}\n{}\n{}",
            runs[0].stderr,
            runs[1].stderr
        );
        for (run, passed) in runs.iter().zip(&checks) {
            if run
                .stderr
                .contains("Waiting for another `berth materialize` writing")
            {
                waited += 1;
                assert!(
                    passed,
                    "round {round}: the run that waited wrote last:\n{}",
                    run.stderr
                );
            }
        }
    }
    // Started together, the runs overlap: one waited for the other at least once.
    assert!(
        waited > 0,
        "the runs never overlapped, so this proves nothing"
    );
}
