//! Custom agent packages (issue #7): the three source forms lock with uv against a PEP 503
//! index on 127.0.0.1, sync into the store, and run with the index gone; a wheel changed
//! on the index after locking is caught; bad packages, versions and indexes write nothing.
//!
//! uv is found as berth finds it (`BERTH_UV`, else `uv` on PATH, version 0.13.9). Without it
//! these tests skip, except in CI (`CI` set), where they fail (`.ci/run` installs uv).

use crate::common;

use std::path::{Path, PathBuf};

use common::{FileServer, GitRepo, TestContext, build_agent_index, copy_tree, fixtures, list_dir};
use serde_json::{Value, json};

/// Whether uv 0.13.9 is here (else the test skips, or fails in CI).
fn have_uv() -> bool {
    let uv = std::env::var_os("BERTH_UV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("uv"));
    let found = std::process::Command::new(&uv)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| String::from_utf8_lossy(&o.stdout).starts_with("uv 0.13.9"));
    if found.is_none() {
        common::require_or_skip(
            "uv 0.13.9",
            "install it (`pip install uv==0.13.9`) and set `BERTH_UV` or put it on PATH",
        );
    }
    found.is_some()
}

/// An index of the fixture packages served from 127.0.0.1, the `my-custom-agent` source as
/// a git repository (tag `v1.0.0`) and as a `.zip` on the same server.
struct Agents {
    ctx: TestContext,
    server: Option<FileServer>,
    index_url: String,
    git_url: String,
    zip_url: String,
}

impl Agents {
    fn new() -> Self {
        let ctx = TestContext::new();
        let served = ctx.root.join("served");
        build_agent_index(&served, 0);
        // The package's source, with its in-tree build backend.
        let source = ctx.root.join("my-custom-agent");
        copy_tree(&fixtures().join("agents/packages/my-custom-agent"), &source);
        std::fs::copy(
            fixtures().join("agents/minibuild.py"),
            source.join("minibuild.py"),
        )
        .expect("copy backend");
        let repo = GitRepo::init(&ctx.upstream.join("my-custom-agent"), &ctx.home);
        copy_tree(&source, &repo.path);
        repo.commit("my-custom-agent 1.0.0");
        repo.tag("v1.0.0");
        std::fs::create_dir_all(served.join("agents")).expect("mkdir");
        std::fs::write(
            served.join("agents/my-custom-agent.zip"),
            common::zip(&source, "my-custom-agent-1.0.0"),
        )
        .expect("write zip");
        let server = FileServer::start(&served, None);
        let index_url = server.url("simple");
        let zip_url = server.url("agents/my-custom-agent.zip");
        Self {
            git_url: format!("git+{}", repo.url()),
            ctx,
            server: Some(server),
            index_url,
            zip_url,
        }
    }

    /// `berth` in `project` with this index.
    fn berth(&self, project: &Path, args: &[&str]) -> common::Run {
        common::Run::from(self.command(project, args).output().expect("run berth"))
    }

    /// The command [`Self::berth`] runs, for `berth_snapshot!`.
    fn command(&self, project: &Path, args: &[&str]) -> std::process::Command {
        let mut cmd = self.ctx.berth();
        cmd.current_dir(project)
            .env("BERTH_INDEX_URL", &self.index_url)
            .args(args);
        cmd
    }

    fn project(&self, name: &str, agent: &str) -> PathBuf {
        let dir = self.ctx.work.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("plugins.toml"), format!("[agent]\n{agent}")).expect("write");
        dir
    }

    fn served(&self) -> PathBuf {
        self.ctx.root.join("served")
    }
}

/// The context's filters, and the version of the Python uv found, which is this machine's.
fn filters(ctx: &TestContext) -> Vec<(String, String)> {
    let mut filters = ctx.filters();
    filters.push((
        r"\bPython 3\.\d+(\.\d+)?".to_owned(),
        "Python [VERSION]".to_owned(),
    ));
    filters
}

fn ok(run: common::Run, what: &str) -> common::Run {
    assert_eq!(run.code, 0, "{what} failed:\n{}", run.stderr);
    run
}

fn wheel_of<'a>(lock: &'a Value, name: &str) -> &'a Value {
    lock["agent"]["wheel"]
        .as_array()
        .expect("wheels")
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no wheel of {name} in {lock}"))
}

fn read_lock(project: &Path) -> Value {
    let text = std::fs::read_to_string(project.join("plugins.lock")).expect("lock written");
    serde_json::to_value(toml::from_str::<toml::Value>(&text).expect("TOML")).expect("JSON")
}

#[test]
fn the_three_source_forms_lock_sync_and_run_with_the_index_gone() {
    if !have_uv() {
        return;
    }
    let mut agents = Agents::new();
    let forms = [
        (
            "index",
            "source = \"my-custom-agent==1.0.0\"\nentry_point = \"my-agent\"\n".to_owned(),
        ),
        (
            "git",
            format!(
                "source = \"{}\"\nref = \"v1.0.0\"\nentry_point = \"my-agent\"\n",
                agents.git_url
            ),
        ),
        (
            "zip",
            format!(
                "source = \"{}\"\nentry_point = \"my-agent\"\n",
                agents.zip_url
            ),
        ),
    ];
    let mut projects = Vec::new();
    let filters = filters(&agents.ctx);
    let mut outputs = Vec::new();
    for (name, agent) in &forms {
        let project = agents.project(name, agent);
        ok(agents.berth(&project, &["plugins", "lock"]), "lock");
        let lock = read_lock(&project);
        let agent = &lock["agent"];
        assert_eq!(agent["package"], "my-custom-agent", "{name}: {lock}");
        assert_eq!(agent["version"], "1.0.0");
        assert_eq!(
            agent["entry_point"],
            "my-agent = my_custom_agent.agent:create"
        );
        let helper = wheel_of(&lock, "agent-helper");
        assert_eq!(helper["version"], "0.3.0");
        assert_eq!(helper["file"], "agent_helper-0.3.0-py3-none-any.whl");
        assert!(
            helper["url"]
                .as_str()
                .is_some_and(|u| u.starts_with("http://127.0.0.1:")),
            "{helper}"
        );
        let own = wheel_of(&lock, "my-custom-agent");
        match *name {
            "index" => assert!(own["url"].is_string() && agent["rev"].is_null()),
            "git" => {
                assert!(own["url"].is_null(), "built from the tree: {own}");
                assert_eq!(agent["ref"], "v1.0.0");
                assert_eq!(agent["rev"].as_str().map(str::len), Some(40));
            }
            _ => {
                assert!(own["url"].is_null(), "built from the tree: {own}");
                assert!(
                    agent["archive_hash"]
                        .as_str()
                        .is_some_and(|h| h.starts_with("sha256-"))
                );
            }
        }
        // The wheel berth built from git or the zip is byte-identical to the index's:
        // the build is reproducible.
        assert_eq!(
            own["sha256"],
            wheel_of(
                &read_lock(&projects.first().unwrap_or(&project).clone()),
                "my-custom-agent"
            )["sha256"]
        );
        for args in [&["plugins", "sync"][..], &["plugins", "show"]] {
            let (snapshot, _) =
                common::run_and_format(&mut agents.command(&project, args), &filters);
            outputs.push(format!("{name}: {}:\n{snapshot}", args.join(" ")));
        }
        let listed = ok(
            agents.berth(&project, &["plugins", "list", "--json"]),
            "list",
        );
        let listed: Value = serde_json::from_str(&listed.stdout).expect("JSON");
        assert!(
            listed["agent"]["wheels"]
                .as_array()
                .expect("wheels")
                .iter()
                .all(|w| w["synced"] == true),
            "{listed}"
        );
        projects.push(project);
    }
    // Each form syncs the agent, and `show` names it with its entry point.
    insta::assert_snapshot!(outputs.join("\n"), @r#"
    index: plugins sync:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
          Synced 0 plugins and agent `my-custom-agent` 1.0.0 (0 added) in [TIME]

    index: plugins show:
    success: true
    exit_code: 0
    ----- stdout -----
    Plugins (0)

    Skills (0)

    MCP servers (0)

    Hooks (0)

    Agent package
      my-custom-agent 1.0.0  my-agent = my_custom_agent.agent:create  (2 wheels, Python [VERSION]; `berth agent exec` runs it)

    ----- stderr -----

    git: plugins sync:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
          Synced 0 plugins and agent `my-custom-agent` 1.0.0 (0 added) in [TIME]

    git: plugins show:
    success: true
    exit_code: 0
    ----- stdout -----
    Plugins (0)

    Skills (0)

    MCP servers (0)

    Hooks (0)

    Agent package
      my-custom-agent 1.0.0  my-agent = my_custom_agent.agent:create  (2 wheels, Python [VERSION]; `berth agent exec` runs it)

    ----- stderr -----

    zip: plugins sync:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
          Synced 0 plugins and agent `my-custom-agent` 1.0.0 (0 added) in [TIME]

    zip: plugins show:
    success: true
    exit_code: 0
    ----- stdout -----
    Plugins (0)

    Skills (0)

    MCP servers (0)

    Hooks (0)

    Agent package
      my-custom-agent 1.0.0  my-agent = my_custom_agent.agent:create  (2 wheels, Python [VERSION]; `berth agent exec` runs it)

    ----- stderr -----
    "#);
    // Cut the network: the index, the zip and the git repository all go away.
    drop(agents.server.take());
    std::fs::remove_dir_all(agents.ctx.upstream.join("my-custom-agent")).expect("rm repo");
    for (i, project) in projects.iter().enumerate() {
        let run = ok(
            agents.berth(project, &["agent", "exec", "--", "--task", "x y"]),
            "agent exec",
        );
        assert_eq!(
            run.stdout,
            "my-custom-agent 1.0.0 ready: hello berth from agent-helper 0.3.0 args=['--task', 'x y']\n"
        );
        // Same wheels, same interpreter: the first project built the environment and the
        // others reuse it.
        assert_eq!(run.stderr.contains("Created"), i == 0, "{}", run.stderr);
        let run = ok(
            agents.berth(
                project,
                &[
                    "run",
                    "--",
                    "sh",
                    "-c",
                    "echo \"$BERTH_AGENT_ENTRY_POINT\"; python -c 'import sys, agent_helper; print(sys.prefix == __import__(\"os\").environ[\"VIRTUAL_ENV\"], agent_helper.greet(\"run\"))'",
                ],
            ),
            "run",
        );
        assert_eq!(
            run.stdout,
            "my-agent = my_custom_agent.agent:create\nTrue hello run from agent-helper 0.3.0\n"
        );
    }
    assert_eq!(list_dir(&agents.ctx.store.join("envs-v1")).len(), 1);
    // A store without the environment builds it offline from the stored wheels alone.
    for env in list_dir(&agents.ctx.store.join("envs-v1")) {
        berth_store::remove_tree(&agents.ctx.store.join("envs-v1").join(env)).expect("rm env");
    }
    let run = ok(
        agents.berth(&projects[1], &["agent", "exec"]),
        "exec offline",
    );
    assert!(
        run.stdout.starts_with("my-custom-agent 1.0.0 ready"),
        "{}",
        run.stdout
    );
    // gc keeps what a registered lock uses, and the store verifies clean.
    ok(agents.berth(&projects[0], &["store", "gc"]), "gc");
    assert_eq!(list_dir(&agents.ctx.store.join("wheels-v1")).len(), 2);
    assert_eq!(list_dir(&agents.ctx.store.join("envs-v1")).len(), 1);
    ok(
        agents.berth(&projects[0], &["store", "verify"]),
        "store verify",
    );
}

#[test]
fn a_wheel_changed_on_the_index_after_locking_is_caught() {
    if !have_uv() {
        return;
    }
    let agents = Agents::new();
    let project = agents.project(
        "p",
        "source = \"my-custom-agent==1.0.0\"\nentry_point = \"my-agent\"\n",
    );
    ok(agents.berth(&project, &["plugins", "sync"]), "sync");
    ok(
        agents.berth(&project, &["plugins", "verify"]),
        "verify before",
    );
    let lock = read_lock(&project);
    let expected = wheel_of(&lock, "agent-helper")["sha256"]
        .as_str()
        .expect("sha")
        .to_owned();
    // Upstream replaces the wheel's bytes under the same name and version.
    let file = agents
        .served()
        .join("files/agent_helper-0.3.0-py3-none-any.whl");
    let mut bytes = std::fs::read(&file).expect("read wheel");
    bytes.extend_from_slice(b"tampered");
    std::fs::write(&file, &bytes).expect("write wheel");
    let actual = berth_store::sha256_file(&file).expect("hash");

    // verify and a sync into a fresh store name the wheel, the locked hash and the new one.
    let mut filters = filters(&agents.ctx);
    filters.push((expected.clone(), "[LOCKED]".to_owned()));
    filters.push((actual.clone(), "[CHANGED]".to_owned()));
    berth_snapshot!(filters, &mut agents.command(&project, &["plugins", "verify"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
     Downloading http://127.0.0.1:[PORT]/files/agent_helper-0.3.0-py3-none-any.whl
     Downloading http://127.0.0.1:[PORT]/files/my_custom_agent-1.0.0-py3-none-any.whl
        Verified agent `my-custom-agent`: wheel my_custom_agent-1.0.0-py3-none-any.whl 04eb42aa7611fd21b1f52e68a19983cedc2814fa12cb0a6367c41c04a2faddc2
    error: agent `my-custom-agent`: wheel agent_helper-0.3.0-py3-none-any.whl: hash mismatch: expected `[LOCKED]`, got `[CHANGED]`
    "#);

    let fresh = agents.ctx.root.join("fresh-store");
    berth_snapshot!(
        filters,
        &mut agents.command(
            &project,
            &["--store", fresh.to_str().expect("utf-8"), "plugins", "sync"],
        ),
        @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
     Downloading http://127.0.0.1:[PORT]/files/agent_helper-0.3.0-py3-none-any.whl
    error: agent `my-custom-agent`: wheel `agent_helper-0.3.0-py3-none-any.whl` (http://127.0.0.1:[PORT]/files/agent_helper-0.3.0-py3-none-any.whl): sha256 mismatch: expected `[LOCKED]`, got `[CHANGED]`
    "#
    );
    let stored: Vec<String> = list_dir(&fresh.join("wheels-v1"));
    assert!(
        !stored.contains(&expected) && !stored.contains(&actual),
        "{stored:?}"
    );
    // The store the lock was synced into still verifies: it holds the locked bytes.
    ok(agents.berth(&project, &["store", "verify"]), "store verify");
    // A wheel corrupted in the store is found by `store verify`, removed by `--repair`.
    let stored = agents
        .ctx
        .store
        .join("wheels-v1")
        .join(&expected)
        .join("agent_helper-0.3.0-py3-none-any.whl");
    std::fs::set_permissions(&stored, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    std::fs::write(&stored, b"rot").expect("corrupt");
    berth_snapshot!(filters, &mut agents.command(&project, &["store", "verify"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: store entry `wheels-v1/[LOCKED]/agent_helper-0.3.0-py3-none-any.whl` is corrupt: it hashes to `7ec879c8c860699e23145733661074c562767d6f860ed0de439e5c2724bc4b18`
      run `berth store verify --repair` to remove them, then `berth plugins sync`
    "#);
    // It was corrupt: `--repair` fails too, and removes it.
    berth_snapshot!(filters, &mut agents.command(&project, &["store", "verify", "--repair"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: store entry `wheels-v1/[LOCKED]/agent_helper-0.3.0-py3-none-any.whl` is corrupt: it hashes to `7ec879c8c860699e23145733661074c562767d6f860ed0de439e5c2724bc4b18`
         Removed wheels-v1/[LOCKED]/agent_helper-0.3.0-py3-none-any.whl (a later `berth plugins sync` fetches it again)
    "#);
    assert!(!agents.ctx.store.join("wheels-v1").join(&expected).exists());
    ok(
        agents.berth(&project, &["store", "verify"]),
        "clean after repair",
    );
}

#[test]
fn bad_packages_versions_and_indexes_fail_clearly_and_write_nothing() {
    if !have_uv() {
        return;
    }
    let agents = Agents::new();
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        format!("http://127.0.0.1:{port}/simple")
    };
    let cases: [(&str, &str, Option<&str>); 4] = [
        ("no-entry-point", "source = \"plain-lib==1.0.0\"\n", None),
        (
            "missing-version",
            "source = \"my-custom-agent==9.9.9\"\n",
            None,
        ),
        (
            "unknown-entry-point",
            "source = \"my-custom-agent==1.0.0\"\nentry_point = \"nope\"\n",
            None,
        ),
        (
            "unreachable-index",
            "source = \"my-custom-agent==1.0.0\"\n",
            Some(&dead),
        ),
    ];
    let filters = filters(&agents.ctx);
    let mut outputs = Vec::new();
    for (name, agent, index) in cases {
        let project = agents.project(name, agent);
        let mut cmd = agents.ctx.berth();
        cmd.current_dir(&project)
            .env("BERTH_INDEX_URL", index.unwrap_or(&agents.index_url))
            .args(["plugins", "sync"]);
        let (snapshot, _) = common::run_and_format(&mut cmd, &filters);
        outputs.push(format!("{name}:\n{snapshot}"));
        assert_eq!(
            list_dir(&project),
            ["plugins.toml"],
            "{name}: no lock written"
        );
    }
    // Each fails with one error, naming the package, version, entry point or index.
    insta::assert_snapshot!(outputs.join("\n"), @r#"
    no-entry-point:
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
       Resolving agent `plain-lib==1.0.0` with uv (Python [VERSION])
     Downloading http://127.0.0.1:[PORT]/files/plain_lib-1.0.0-py3-none-any.whl
    error: plugins.toml:2: `[agent]` `plain-lib==1.0.0`: package `plain-lib` has no `openhands.agents` entry point, so it is not an agent package; it must declare one (`[project.entry-points."openhands.agents"]` in its pyproject.toml)

    missing-version:
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
       Resolving agent `my-custom-agent==9.9.9` with uv (Python [VERSION])
    error: plugins.toml:2: `[agent]` `my-custom-agent==9.9.9`: resolving `my-custom-agent==9.9.9` against `http://127.0.0.1:[PORT]/simple` with uv failed: No solution found when resolving dependencies cause: Because there is no version of my-custom-agent==9.9.9 and you require my-custom-agent==9.9.9, we can conclude that your requirements are unsatisfiable.

    unknown-entry-point:
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
       Resolving agent `my-custom-agent==1.0.0` with uv (Python [VERSION])
     Downloading http://127.0.0.1:[PORT]/files/my_custom_agent-1.0.0-py3-none-any.whl
    error: plugins.toml:2: `[agent]` `my-custom-agent==1.0.0`: package `my-custom-agent` has no `openhands.agents` entry point named `nope`; it offers `my-agent`, `other-agent`

    unreachable-index:
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
       Resolving agent `my-custom-agent==1.0.0` with uv (Python [VERSION])
    error: plugins.toml:2: `[agent]` `my-custom-agent==1.0.0`: could not fetch from `http://127.0.0.1:[PORT]/simple`: resolving `my-custom-agent==1.0.0` against `http://127.0.0.1:[PORT]/simple` with uv failed: Request failed after 3 retries in [TIME] cause: Failed to fetch: http://127.0.0.1:[PORT]/simple/my-custom-agent/ cause: error sending request for url (http://127.0.0.1:[PORT]/simple/my-custom-agent/) cause: client error (Connect) cause: tcp connect error cause: Connection refused (os error 111)
    "#);
    for dir in ["wheels-v1", "envs-v1", "store-v1"] {
        assert!(
            list_dir(&agents.ctx.store.join(dir)).is_empty(),
            "{dir} is untouched"
        );
    }
    // A lock without an agent cannot exec one.
    let plain = agents.ctx.work.join("plain");
    std::fs::create_dir_all(&plain).expect("mkdir");
    std::fs::write(plain.join("plugins.toml"), "").expect("write");
    ok(agents.berth(&plain, &["plugins", "lock"]), "empty lock");
    berth_snapshot!(filters, &mut agents.command(&plain, &["agent", "exec"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `plugins.lock` locks no agent package; add an `[agent]` table to the manifest and run `berth plugins lock`
    "#);
}

#[test]
fn the_server_locks_a_conversations_agent_and_restores_it_offline() {
    if !have_uv() {
        return;
    }
    let mut agents = Agents::new();
    let data = agents.ctx.root.join("data");
    let serve = |offline: bool| {
        let mut cmd = agents.ctx.berth();
        cmd.env("BERTH_INDEX_URL", &agents.index_url)
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--allow-local-sources",
                "--data-dir",
            ])
            .arg(&data);
        if offline {
            cmd.arg("--offline");
        }
        common::ServeProcess::start(cmd)
    };
    let server = serve(false);
    let (status, body) = server.post(&json!({
        "plugins": [],
        "agent": {"source": agents.git_url, "ref": "v1.0.0", "entry_point": "my-agent"}
    }));
    assert_eq!(status, 201, "{body}");
    let created: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(created["agent"]["package"], "my-custom-agent");
    assert_eq!(
        created["agent"]["entry_point"],
        "my-agent = my_custom_agent.agent:create"
    );
    assert!(
        created["lockfile"]
            .as_str()
            .expect("lock")
            .contains("[[agent.wheel]]")
    );
    let id = created["id"].as_str().expect("id").to_owned();
    // A requirement with a credential, and a lockfile together with `agent`, are refused.
    let (status, _) = server.post(&json!({"plugins": [], "agent": {"source": "${TOKEN}==1"}}));
    assert_eq!(status, 400);
    let (status, _) =
        server.post(&json!({"lockfile": "version = 1\n", "agent": {"source": "a==1"}}));
    assert_eq!(status, 400);
    // A version the index lacks is the client's problem (422); an index that is down is
    // upstream's (502, below).
    let (status, body) =
        server.post(&json!({"plugins": [], "agent": {"source": "my-custom-agent==9.9.9"}}));
    assert_eq!(status, 422, "{body}");
    server.stop();

    // Upstream is gone: a new conversation's agent cannot be resolved, and the restarted
    // server, offline, still has the first conversation's agent.
    drop(agents.server.take());
    let server = serve(false);
    let (status, body) =
        server.post(&json!({"plugins": [], "agent": {"source": "my-custom-agent==1.0.0"}}));
    assert_eq!(status, 502, "{body}");
    server.stop();
    let server = serve(true);
    let (status, detail) = server.get(&format!("/api/conversations/{id}"));
    assert_eq!(status, 200, "{detail}");
    let detail: Value = serde_json::from_str(&detail).expect("JSON");
    assert_eq!(detail["agent"]["version"], "1.0.0");
    let (_, lockfile) = server.get(&format!("/api/conversations/{id}/lockfile"));
    assert_eq!(lockfile, created["lockfile"].as_str().expect("lock"));
    server.stop();
    // The conversation's lock runs its agent offline, from the store alone.
    let project = agents.ctx.work.join("from-server");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(project.join("plugins.lock"), &lockfile).expect("write");
    let run = ok(
        agents.berth(&project, &["agent", "exec", "--frozen"]),
        "exec",
    );
    assert!(
        run.stdout.starts_with("my-custom-agent 1.0.0 ready"),
        "{}",
        run.stdout
    );
}

#[test]
fn index_credentials_come_from_the_environment_and_are_never_written() {
    if !have_uv() {
        return;
    }
    let agents = Agents::new();
    let private = FileServer::start(&agents.served(), Some("agent:s3cret-token"));
    let index = format!(
        "http://agent:${{IDX_TOKEN}}@127.0.0.1:{}/simple",
        private.port
    );
    let project = agents.project(
        "private",
        "source = \"my-custom-agent==1.0.0\"\nentry_point = \"my-agent\"\n",
    );
    let command = |store: &str, args: &[&str], token: Option<&str>| {
        let mut cmd = agents.ctx.berth();
        cmd.current_dir(&project)
            .env("BERTH_INDEX_URL", &index)
            .env("BERTH_STORE", agents.ctx.root.join(store))
            .args(args);
        match token {
            Some(t) => cmd.env("IDX_TOKEN", t),
            None => cmd.env_remove("IDX_TOKEN"),
        };
        cmd
    };
    let berth = |store: &str, args: &[&str], token: Option<&str>| {
        common::Run::from(command(store, args, token).output().expect("run"))
    };
    let filters = filters(&agents.ctx);
    berth_snapshot!(filters, &mut command("s1", &["plugins", "lock"], None), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:2: `[agent]` `my-custom-agent==1.0.0`: environment variable `IDX_TOKEN` used in the source is not set; export it and try again
    "#);
    assert!(!project.join("plugins.lock").exists());

    let locked = ok(
        berth("s1", &["plugins", "sync"], Some("s3cret-token")),
        "sync",
    );
    let text = std::fs::read_to_string(project.join("plugins.lock")).expect("lock");
    assert!(!text.contains("s3cret"), "no secret in the lock:\n{text}");
    assert!(!locked.stderr.contains("s3cret"), "{}", locked.stderr);
    let lock = read_lock(&project);
    let url = wheel_of(&lock, "agent-helper")["url"]
        .as_str()
        .expect("url")
        .to_owned();
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{}/files/", private.port)),
        "{url}"
    );
    // A fresh store fetches the wheels with the index's credentials again.
    ok(
        berth("s2", &["plugins", "sync", "--frozen"], Some("s3cret-token")),
        "fresh sync",
    );
    assert_eq!(list_dir(&agents.ctx.root.join("s2/wheels-v1")).len(), 2);
    let wrong = berth_snapshot!(
        filters,
        &mut command("s3", &["plugins", "sync", "--frozen"], Some("wr0ng-t0ken")),
        @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: agent `my-custom-agent`: could not download `http://127.0.0.1:[PORT]/files/agent_helper-0.3.0-py3-none-any.whl`: the server answered 401 Unauthorized; give credentials as `${VAR}` in the URL or in `~/.netrc`
    "#
    );
    assert!(!wrong.stderr.contains("wr0ng-t0ken"), "{}", wrong.stderr);
    assert!(
        private.requests().iter().all(|r| r.contains("auth=true")),
        "every request to the private index carried credentials"
    );
    // A password written in the URL works, with a warning, and is never written either.
    std::fs::remove_file(project.join("plugins.lock")).expect("rm lock");
    let mut literal = {
        let mut cmd = agents.ctx.berth();
        cmd.current_dir(&project)
            .env(
                "BERTH_INDEX_URL",
                format!(
                    "http://agent:s3cret-token@127.0.0.1:{}/simple",
                    private.port
                ),
            )
            .env("BERTH_STORE", agents.ctx.root.join("s4"))
            .args(["plugins", "lock"]);
        cmd
    };
    let literal = berth_snapshot!(filters, &mut literal, @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: the index URL `http://127.0.0.1:[PORT]/simple` has a credential written in it; it is left out of everything berth writes and prints. Put it in an environment variable and write `${VAR}` instead
       Resolving agent `my-custom-agent==1.0.0` with uv (Python [VERSION])
     Downloading http://127.0.0.1:[PORT]/files/my_custom_agent-1.0.0-py3-none-any.whl
          Locked agent `my-custom-agent` 1.0.0 (my-agent = my_custom_agent.agent:create), 2 wheel(s)
     Downloading http://127.0.0.1:[PORT]/files/agent_helper-0.3.0-py3-none-any.whl
          Adding agent my-custom-agent 1.0.0 (my-agent = my_custom_agent.agent:create)
          Locked 0 plugins and agent `my-custom-agent` 1.0.0 in `plugins.lock`
    ");
    assert!(!literal.stderr.contains("s3cret"), "{}", literal.stderr);
    let text = std::fs::read_to_string(project.join("plugins.lock")).expect("lock");
    assert!(!text.contains("s3cret"), "{text}");
    // Credentials never go over plain http to another machine.
    std::fs::remove_file(project.join("plugins.lock")).expect("rm lock");
    let mut remote = {
        let mut cmd = agents.ctx.berth();
        cmd.current_dir(&project)
            .env(
                "BERTH_INDEX_URL",
                "http://agent:${IDX_TOKEN}@index.example.invalid/simple",
            )
            .env("IDX_TOKEN", "s3cret-token")
            .args(["plugins", "lock"]);
        cmd
    };
    let remote = berth_snapshot!(filters, &mut remote, @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugins.toml:2: `[agent]` `my-custom-agent==1.0.0`: `http://agent:${IDX_TOKEN}@index.example.invalid/simple`: refusing to send credentials over plain http to another machine; use https
    "#);
    assert!(!remote.stderr.contains("s3cret"), "{}", remote.stderr);
}

#[test]
fn the_projects_uv_toml_names_the_index_and_uvs_variables_its_credentials() {
    if !have_uv() {
        return;
    }
    let agents = Agents::new();
    let private = FileServer::start(&agents.served(), Some("corp:uv-s3cret"));
    let index = private.url("simple");
    let project = agents.project(
        "uv-config",
        "source = \"my-custom-agent==1.0.0\"\nentry_point = \"my-agent\"\n",
    );
    // The user's configuration names an index nothing serves; the project's wins.
    let user = agents.ctx.home.join(".config/uv");
    std::fs::create_dir_all(&user).expect("mkdir");
    std::fs::write(
        user.join("uv.toml"),
        "index-url = \"http://127.0.0.1:9/simple\"\n",
    )
    .expect("write");
    std::fs::write(
        project.join("uv.toml"),
        format!("[[index]]\nname = \"corp\"\nurl = \"{index}\"\ndefault = true\n"),
    )
    .expect("write");
    let run = |store: &str, args: &[&str]| {
        let mut cmd = agents.ctx.berth();
        cmd.current_dir(&project)
            .env("BERTH_STORE", agents.ctx.root.join(store))
            .env("UV_INDEX_CORP_USERNAME", "corp")
            .env("UV_INDEX_CORP_PASSWORD", "uv-s3cret")
            // Nothing else is reached: what is not for 127.0.0.1 meets a dead proxy.
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1")
            .args(args)
            .arg("-vv");
        common::Run::from(cmd.output().expect("run berth"))
    };
    let locked = ok(run("s1", &["plugins", "sync"]), "sync");
    assert!(!locked.stderr.contains("uv-s3cret"), "{}", locked.stderr);
    let text = std::fs::read_to_string(project.join("plugins.lock")).expect("lock");
    assert!(
        !text.contains("uv-s3cret") && !text.contains("corp:"),
        "{text}"
    );
    let lock = read_lock(&project);
    assert!(
        wheel_of(&lock, "agent-helper")["url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("http://127.0.0.1:{}/files/", private.port))),
        "{lock}"
    );
    // A fresh store fetches the wheels with the same credentials.
    ok(run("s2", &["plugins", "sync", "--frozen"]), "fresh sync");
    assert_eq!(list_dir(&agents.ctx.root.join("s2/wheels-v1")).len(), 2);
    assert!(
        private.requests().iter().all(|r| r.contains("auth=true")),
        "every request to the private index carried credentials"
    );
}

#[test]
fn concurrent_conversations_build_one_environment_once() {
    if !have_uv() {
        return;
    }
    let agents = Agents::new();
    let project = agents.project(
        "p",
        "source = \"my-custom-agent==1.0.0\"\nentry_point = \"other-agent\"\n",
    );
    ok(agents.berth(&project, &["plugins", "sync"]), "sync");
    let children: Vec<_> = (0..4)
        .map(|_| {
            agents
                .ctx
                .berth()
                .current_dir(&project)
                .args(["agent", "exec"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let runs: Vec<common::Run> = children
        .into_iter()
        .map(|c| common::Run::from(c.wait_with_output().expect("wait")))
        .collect();
    for run in &runs {
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout, "other-agent called\n");
    }
    let created = runs.iter().filter(|r| r.stderr.contains("Created")).count();
    assert_eq!(
        created, 1,
        "one process built the environment, the others waited for it"
    );
    assert_eq!(list_dir(&agents.ctx.store.join("envs-v1")).len(), 1);
    let leftovers: Vec<String> = list_dir(&agents.ctx.store.join("tmp"))
        .into_iter()
        .filter(|f| !f.ends_with(".lock"))
        .collect();
    assert!(leftovers.is_empty(), "no staging left: {leftovers:?}");
    // An environment whose base interpreter is gone is rebuilt, not used.
    let env = agents
        .ctx
        .store
        .join("envs-v1")
        .join(&list_dir(&agents.ctx.store.join("envs-v1"))[0]);
    std::fs::remove_file(env.join("bin/python")).expect("rm python");
    std::os::unix::fs::symlink("/nonexistent/python3", env.join("bin/python")).expect("link");
    let run = ok(agents.berth(&project, &["agent", "exec"]), "exec after");
    assert_eq!(run.stdout, "other-agent called\n");
    assert!(run.stderr.contains("Created"), "{}", run.stderr);
    assert!(std::fs::canonicalize(env.join("bin/python")).is_ok());
}

#[test]
fn an_index_without_hash_fragments_still_locks_every_wheel_by_sha256() {
    if !have_uv() {
        return;
    }
    let agents = Agents::new();
    let simple = agents.served().join("simple");
    for project in list_dir(&simple) {
        let page = simple.join(project).join("index.html");
        if let Ok(html) = std::fs::read_to_string(&page) {
            let stripped = strip_hash_fragments(&html);
            std::fs::write(&page, stripped).expect("write page");
        }
    }
    let project = agents.project(
        "p",
        "source = \"my-custom-agent==1.0.0\"\nentry_point = \"my-agent\"\n",
    );
    ok(agents.berth(&project, &["plugins", "sync"]), "sync");
    let lock = read_lock(&project);
    for wheel in lock["agent"]["wheel"].as_array().expect("wheels") {
        let file = agents
            .served()
            .join("files")
            .join(wheel["file"].as_str().expect("file"));
        assert_eq!(
            wheel["sha256"].as_str(),
            Some(berth_store::sha256_file(&file).expect("hash").as_str()),
            "{wheel}"
        );
    }
}

/// Removes every `#sha256=…` fragment from a simple-index page.
fn strip_hash_fragments(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find("#sha256=") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#sha256=".len()..];
        let end = after
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    assert!(!out.contains("sha256"), "{out}");
    out
}
