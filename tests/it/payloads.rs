//! Locked payloads (issue #29): an MCP server started by `npx` or `uvx` is pinned at
//! `lock` with its whole closure, kept in the store, and started from there with the
//! registry gone. npm resolves against a static registry on 127.0.0.1 (packuments and
//! tarballs built here); uv against the fixture index (`fixtures/agents/`) on 127.0.0.1.

use crate::common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::npm::{fake_registry, have_node};
use common::{FileServer, TestContext, build_agent_index, require_or_skip};
use serde_json::{Value, json};

fn have_uv() -> bool {
    let uv = std::env::var_os("BERTH_UV").map_or_else(|| PathBuf::from("uv"), PathBuf::from);
    let found = Command::new(&uv)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("uv 0.13.9"));
    if !found {
        require_or_skip(
            "uv 0.13.9",
            "install it (`pip install uv==0.13.9`) and set `BERTH_UV` or put it on PATH",
        );
    }
    found
}

/// A local plugin `tools` whose `.mcp.json` has `servers`.
pub(crate) fn tools_plugin(ctx: &TestContext, servers: Value) {
    let dir = ctx.work.join("tools");
    std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        "{\"name\": \"tools\", \"version\": \"1.0.0\"}\n",
    )
    .expect("write");
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./tools\"\n");
}

/// Runs `berth ARGS` with these extra variables; fails the test unless it succeeds.
pub(crate) fn berth(ctx: &TestContext, env: &[(&str, &str)], args: &[&str]) -> common::Run {
    let mut cmd = ctx.berth();
    cmd.args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let run = common::Run::from(cmd.output().expect("run berth"));
    assert_eq!(run.code, 0, "berth {args:?} failed:\n{}", run.stderr);
    run
}

/// The set's MCP server `name`, from `berth plugins show --json`.
fn set_server(ctx: &TestContext, name: &str) -> Value {
    let show = berth(ctx, &[], &["plugins", "show", "--json"]);
    let set: Value = serde_json::from_str(&show.stdout).expect("JSON");
    set["mcp_servers"][name].clone()
}

/// Starts `server` (a set's stdio MCP server) and returns its answer to `initialize`.
fn initialize(server: &Value) -> Value {
    let command = server["command"].as_str().expect("command");
    let args: Vec<&str> = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string"))
        .collect();
    let mut child = Command::new(command)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "berth-test", "version": "0"}}})
    )
    .expect("write");
    stdin.flush().expect("flush");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

/// Makes a file of the store entry at `entry` writable and changes it.
fn tamper(entry: &Path, rel: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let file = entry.join(rel);
    std::fs::set_permissions(
        file.parent().expect("parent"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str("\n// changed\n");
    std::fs::write(&file, text).expect("write");
}

/// Approves plugin `tools` as it is now, and checks that the set is then let through.
fn approve_tools(ctx: &TestContext) {
    let by = ["--by", "Alice <a@example.com>"];
    berth(ctx, &[], &["plugins", "approve", "tools", by[0], by[1]]);
    berth(ctx, &[], &["plugins", "show", "--json"]);
}

/// The install of plugin `tools` in the Codex home `codex`, and its manifest.
fn codex_install(codex: &Path) -> (PathBuf, Value) {
    let install = std::fs::read_dir(codex.join("plugins/cache/berth/tools"))
        .expect("an install")
        .next()
        .expect("one")
        .expect("entry")
        .path();
    let manifest = serde_json::from_str(
        &std::fs::read_to_string(install.join(".claude-plugin/plugin.json")).expect("read"),
    )
    .expect("JSON");
    (install, manifest)
}

/// `berth materialize` for each harness writes the pinned command: read back by the real
/// Claude Code (`BERTH_CLAUDE`), and from the files Codex, Gemini CLI and Agent Plugins
/// read.
fn materialized_servers_start_the_closure(ctx: &TestContext, script: &str) {
    let expect = |server: &Value, what: &str| {
        assert_eq!(server["command"], "node", "{what}: {server}");
        assert_eq!(server["args"][0], script, "{what}: {server}");
    };
    let dir = |name: &str| ctx.root.join(name);
    let run = |target: &str, name: &str| {
        berth(
            ctx,
            &[],
            &["materialize", target, dir(name).to_str().expect("utf-8")],
        );
        berth(
            ctx,
            &[],
            &[
                "materialize",
                target,
                dir(name).to_str().expect("utf-8"),
                "--check",
            ],
        );
    };
    run("claude", "claude");
    match std::env::var_os("BERTH_CLAUDE").filter(|c| !c.is_empty()) {
        Some(claude) => {
            let out = Command::new(claude)
                .args(["plugin", "list", "--json"])
                .env("CLAUDE_CONFIG_DIR", dir("claude"))
                .env("HOME", &ctx.home)
                .env("DISABLE_AUTOUPDATER", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .current_dir(&ctx.work)
                .output()
                .expect("run claude");
            let list: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
            expect(&list[0]["mcpServers"]["fake"], "Claude Code");
        }
        None => require_or_skip(
            "BERTH_CLAUDE",
            "point it at a `claude` from npm (.ci/run does)",
        ),
    }
    run("codex", "codex");
    let (version, manifest) = codex_install(&dir("codex"));
    expect(&manifest["mcpServers"]["fake"], "Codex");
    assert!(
        !version.join(".mcp.json").exists(),
        "the unpinned definition is left out"
    );
    run("gemini", "gemini");
    let gemini: Value = serde_json::from_str(
        &std::fs::read_to_string(dir("gemini").join("extensions/tools/gemini-extension.json"))
            .expect("read"),
    )
    .expect("JSON");
    expect(&gemini["mcpServers"]["fake"], "Gemini CLI");
    run("agent-plugins", "agent-plugins");
    let mcp: Value = serde_json::from_str(
        &std::fs::read_to_string(dir("agent-plugins").join("tools/mcp.json")).expect("read"),
    )
    .expect("JSON");
    expect(&mcp["mcpServers"]["fake"], "Agent Plugins");
}

#[test]
fn an_npx_server_is_locked_with_its_closure_and_runs_from_the_store_offline() {
    if !have_node() {
        return;
    }
    let ctx = TestContext::new();
    let registry = fake_registry(&ctx.root.join("npm"));
    let url = registry.url();
    let env = [("BERTH_NPM_REGISTRY", url.as_str())];
    tools_plugin(
        &ctx,
        json!({"fake": {"command": "npx", "args": ["-y", "fake-mcp@^1", "--flag"]}}),
    );
    berth_snapshot!(ctx.filters(), ctx.berth().envs(env).args(["plugins", "lock"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
       Resolving `npx fake-mcp@^1` of plugin `tools`
     Downloading http://127.0.0.1:[PORT]/tarballs/fake-dep-1.0.0.tgz
     Downloading http://127.0.0.1:[PORT]/tarballs/fake-mcp-1.1.0.tgz
          Locked fake-mcp 1.1.0 for MCP server `fake` of plugin `tools` (2 packages)
       Observing 1 MCP server (each for at most 15s)
        Observed MCP server `fake` of `tools`: nothing offered
          Adding tools sha256-lsohDhRxyf5/
          Locked 1 plugin in `plugins.lock`
    ");
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let payload = &lock["payload"][0];
    assert_eq!(payload["plugin"].as_str(), Some("tools"));
    assert_eq!(payload["server"].as_str(), Some("fake"));
    assert_eq!(payload["runner"].as_str(), Some("npx"));
    assert_eq!(payload["spec"].as_str(), Some("fake-mcp@^1"));
    assert_eq!(
        payload["version"].as_str(),
        Some("1.1.0"),
        "the newest of ^1, not 2.0.0"
    );
    assert_eq!(
        payload["entry"].as_str(),
        Some("node_modules/fake-mcp/bin/server.js")
    );
    let closure: Vec<(&str, &str)> = payload["npm"]
        .as_array()
        .expect("npm packages")
        .iter()
        .map(|p| {
            (
                p["path"].as_str().expect("path"),
                p["version"].as_str().expect("version"),
            )
        })
        .collect();
    assert_eq!(
        closure,
        [
            ("node_modules/fake-dep", "1.0.0"),
            ("node_modules/fake-mcp", "1.1.0")
        ]
    );
    for p in payload["npm"].as_array().expect("npm") {
        assert!(
            p["integrity"]
                .as_str()
                .expect("integrity")
                .starts_with("sha512-"),
            "{p}"
        );
    }

    // `plugins list` shows what each runner line is pinned to.
    let listed = berth(&ctx, &[], &["plugins", "list"]);
    assert!(
        listed.stdout.contains("tools: MCP server fake")
            && listed.stdout.contains("fake-mcp 1.1.0")
            && listed.stdout.contains("npx fake-mcp@^1"),
        "{}",
        listed.stdout
    );
    let json: Value =
        serde_json::from_str(&berth(&ctx, &[], &["plugins", "list", "--json"]).stdout)
            .expect("JSON");
    assert_eq!(json["payloads"][0]["version"], "1.1.0", "{json}");
    assert!(json["payloads"][0]["store_path"].is_string(), "{json}");

    // Sync on a clean store, then the registry goes away: the server still starts.
    ctx.wipe_store_entries();
    berth(&ctx, &env, &["plugins", "sync"]);
    // `verify` fetches the closure afresh and finds the locked hash.
    berth_snapshot!(ctx.filters(), ctx.berth().envs(env).args(["plugins", "verify"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
     Downloading http://127.0.0.1:[PORT]/tarballs/fake-dep-1.0.0.tgz
     Downloading http://127.0.0.1:[PORT]/tarballs/fake-mcp-1.1.0.tgz
        Verified tools sha256-lsohDhRxyf5/26nUfcvnT4B1AN01WqLXecNyKfid2Ts=
        Verified fake-mcp@1.1.0 (plugin tools) sha256-45sDrbY5nUKMs1Se68TdW66k0MbyFEUKTkGg9d0IMis=
        Verified 1 plugin match `plugins.lock`
    "#);
    drop(registry.server);
    let server = set_server(&ctx, "fake");
    assert_eq!(server["command"], "node", "{server}");
    let script = server["args"][0].as_str().expect("script");
    assert!(
        script.starts_with(&*ctx.store.to_string_lossy())
            && script.ends_with("node_modules/fake-mcp/bin/server.js"),
        "{server}"
    );
    assert_eq!(
        server["args"][1], "--flag",
        "the line's own arguments follow"
    );
    let answer = initialize(&server);
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["serverInfo"]["version"], "1.1.0",
        "{answer}"
    );
    assert_eq!(
        answer["result"]["serverInfo"]["uses"], "fake-dep 1.0.0",
        "{answer}"
    );

    // Every harness target starts the stored closure too.
    materialized_servers_start_the_closure(&ctx, script);

    // A binary cache carries the closure: a fresh store restores it with the registry gone.
    let cache = format!("file://{}", ctx.root.join("cache").display());
    berth_snapshot!(ctx.filters(), ctx.berth().args(["store", "push", &cache]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
          Pushed tools (260 B)
          Pushed npm-fake-mcp-1.1.0 (675 B)
        Finished 2 pushed, 0 already in `file://[TMP]/cache`
    "#);
    ctx.wipe_store_entries();
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "sync", "--substituter", &cache]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Added tools [TMP]/store/store-v1/0fyrkpw2jwn3g7bs4nimvl07b02gwz5pvm59vdzzxjbi2h723jln-tools
     Substituted npm-fake-mcp-1.1.0 from file://[TMP]/cache
           Added fake-mcp 1.1.0 [TMP]/store/store-v1/0arj13fzb8219q54a57jqv8a9bjvvp2fp7jlnf64579rnsnh76z3-npm-fake-mcp-1.1.0
          Synced 1 plugin (2 added) in [TIME]
    "#);
    assert_eq!(
        initialize(&set_server(&ctx, "fake"))["result"]["serverInfo"]["version"],
        "1.1.0"
    );

    // A changed closure is refused, naming it, as a changed plugin is.
    let entry = Path::new(script)
        .ancestors()
        .nth(4)
        .expect("the entry")
        .to_owned();
    tamper(&entry, "node_modules/fake-dep/index.js");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "show", "--json"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: store entry `[TMP]/store/store-v1/0arj13fzb8219q54a57jqv8a9bjvvp2fp7jlnf64579rnsnh76z3-npm-fake-mcp-1.1.0` of plugin `npm-fake-mcp-1.1.0` was changed after it was added (it now hashes to `sha256-S4jMOAHlZXCBninNrt6ve+BG+wjHdB9TzB37sUGtjyg=`); run `berth plugins sync` to fetch it again (`berth store verify` checks every entry)
    "#);

    // Keeping the pin needs no registry.
    berth_snapshot!(ctx.filters(), ctx.berth().envs(env).args(["plugins", "lock"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
          Locked 1 plugin in `plugins.lock` (unchanged)
    "#);
}

#[test]
fn a_hook_command_and_an_lsp_server_through_npx_run_the_locked_package() {
    if !have_node() {
        return;
    }
    let ctx = TestContext::new();
    let registry = fake_registry(&ctx.root.join("npm"));
    let url = registry.url();
    let env = [("BERTH_NPM_REGISTRY", url.as_str())];
    tools_plugin(&ctx, json!({}));
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "npx -y fake-mcp@1.0.0 --hook"},
        {"type": "command", "command": "npx -y fake-mcp@1.0.0 | tee log"},
    ]}]}});
    std::fs::create_dir_all(ctx.work.join("tools/hooks")).expect("mkdir");
    std::fs::write(ctx.work.join("tools/hooks/hooks.json"), hooks.to_string()).expect("write");
    // An LSP server started the same way.
    std::fs::write(
        ctx.work.join("tools/.lsp.json"),
        json!({"fake": {"command": "npx", "args": ["-y", "fake-mcp@1.0.0", "--stdio"],
            "extensionToLanguage": {".fake": "fake"}}})
        .to_string(),
    )
    .expect("write");
    berth(&ctx, &env, &["plugins", "lock"]);
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let payloads = lock["payload"].as_array().expect("payloads");
    let used: Vec<(&str, &str)> = payloads
        .iter()
        .map(|p| {
            (
                p["use"].as_str().expect("use"),
                p["version"].as_str().expect("version"),
            )
        })
        .collect();
    assert_eq!(
        used,
        [("hook", "1.0.0"), ("lsp_server", "1.0.0")],
        "a hook line a shell would act on is left: {payloads:?}"
    );
    drop(registry);

    let show = berth(&ctx, &[], &["plugins", "show", "--json"]);
    let set: Value = serde_json::from_str(&show.stdout).expect("JSON");
    let (_, matchers) = set["hooks"]
        .as_object()
        .expect("hooks")
        .iter()
        .find(|(_, m)| m.as_array().is_some_and(|m| !m.is_empty()))
        .expect("the PreToolUse hooks");
    let commands: Vec<&str> = matchers[0]["hooks"]
        .as_array()
        .expect("hooks")
        .iter()
        .map(|h| h["command"].as_str().expect("command"))
        .collect();
    assert!(
        commands[0].starts_with("node ")
            && commands[0].ends_with("/node_modules/fake-mcp/bin/server.js --hook"),
        "{commands:?}"
    );
    assert_eq!(commands[1], "npx -y fake-mcp@1.0.0 | tee log");
    let lsp = &set["lsp_servers"]["fake"];
    assert_eq!(lsp["command"], "node", "{lsp}");
    assert!(
        lsp["args"][0]
            .as_str()
            .expect("script")
            .ends_with("/node_modules/fake-mcp/bin/server.js")
            && lsp["args"][1] == "--stdio",
        "{lsp}"
    );
    // A harness that reads the plugin's own folder gets the pinned hook and LSP server
    // inline, the floating definitions left out.
    let codex = ctx.root.join("codex");
    berth(
        &ctx,
        &[],
        &["materialize", "codex", codex.to_str().expect("utf-8")],
    );
    let (install, manifest) = codex_install(&codex);
    assert_eq!(
        manifest["lspServers"]["fake"]["command"], "node",
        "{manifest}"
    );
    let pinned_hook = manifest["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .expect("the hook");
    assert!(pinned_hook.starts_with("node "), "{manifest}");
    assert!(!install.join(".lsp.json").exists() && !install.join("hooks/hooks.json").exists());
    let mut child = Command::new("sh")
        .args(["-c", commands[0]])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh");
    writeln!(
        child.stdin.take().expect("stdin"),
        "{}",
        json!({"jsonrpc": "2.0", "id": 7, "method": "initialize"})
    )
    .expect("write");
    let out = child.wait_with_output().expect("wait");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        answer["result"]["serverInfo"]["version"], "1.0.0",
        "{answer}"
    );
}

#[test]
fn lock_upgrade_moves_a_floating_spec_and_diff_shows_the_version() {
    if !have_node() {
        return;
    }
    let ctx = TestContext::new();
    let mut registry = fake_registry(&ctx.root.join("npm"));
    let url = registry.url();
    let env = [("BERTH_NPM_REGISTRY", url.as_str())];
    tools_plugin(
        &ctx,
        json!({"fake": {"command": "npx", "args": ["-y", "fake-mcp@^1"]}}),
    );
    berth(&ctx, &env, &["plugins", "lock"]);
    let first = ctx.lock_text();
    std::fs::write(ctx.root.join("before.lock"), &first).expect("write");
    // What runs needs an approval, which covers the pinned package too.
    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[capabilities]\nmcp_stdio = \"approve\"\n",
    )
    .expect("write");
    approve_tools(&ctx);
    registry.publish(
        "fake-mcp",
        "1.2.0",
        json!({"bin": {"fake-mcp": "bin/server.js"}, "dependencies": {"fake-dep": "^1.0.0"}}),
        &[("bin/server.js", "console.log('1.2.0');\n")],
    );
    // Publishing makes 1.2.0 `latest`; keep 2.0.0 out of ^1 either way.
    berth(&ctx, &env, &["plugins", "lock"]);
    assert_eq!(ctx.lock_text(), first, "a plain lock keeps the pin");
    // The approval's time changes from run to run.
    let mut filters = ctx.filters();
    filters.push((
        r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b".to_owned(),
        "[DATE]".to_owned(),
    ));
    berth_snapshot!(filters, ctx.berth().envs(env).args(["plugins", "lock", "--upgrade"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
       Resolving `npx fake-mcp@^1` of plugin `tools`
     Downloading http://127.0.0.1:[PORT]/tarballs/fake-dep-1.0.0.tgz
     Downloading http://127.0.0.1:[PORT]/tarballs/fake-mcp-1.2.0.tgz
          Locked fake-mcp 1.2.0 for MCP server `fake` of plugin `tools` (2 packages)
    warning: plugin `tools`: what it runs changed since Alice <a@example.com> approved it on [DATE] (it has MCP server `fake` (`npx -y fake-mcp@^1`)); review the change (`berth plugins diff`), then run `berth plugins approve tools` [`mcp_stdio = "approve"` in `berth-policy.toml`] (the lock is written; nothing runs it until then)
       Observing 1 MCP server (each for at most 15s)
    warning: MCP server `fake` of plugin `tools` was not observed: it exited before answering
          Locked 1 plugin in `plugins.lock`
    "#);
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    assert_eq!(lock["payload"][0]["version"].as_str(), Some("1.2.0"));
    // The plugin's folder is the same, but what its server runs moved: approve again.
    berth_snapshot!(filters, ctx.berth().args(["plugins", "show", "--json"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugin `tools`: what it runs changed since Alice <a@example.com> approved it on [DATE] (it has MCP server `fake` (`npx -y fake-mcp@^1`)); review the change (`berth plugins diff`), then run `berth plugins approve tools` [`mcp_stdio = "approve"` in `berth-policy.toml`]
    "#);
    approve_tools(&ctx);
    let before = ctx.root.join("before.lock");
    let diff = berth(
        &ctx,
        &env,
        &[
            "plugins",
            "diff",
            "--from",
            before.to_str().expect("utf-8"),
            "--json",
        ],
    );
    let report: Value = serde_json::from_str(&diff.stdout).expect("JSON");
    let payloads = &report["payloads"];
    assert_eq!(
        payloads,
        &json!([{"plugin": "tools", "server": "fake", "runner": "npx", "package": "fake-mcp",
            "from": "1.1.0", "to": "1.2.0"}]),
        "{report}"
    );
    berth_snapshot!(
        ctx.filters(),
        ctx.berth()
            .envs(env)
            .args(["plugins", "diff", "--from", before.to_str().expect("utf-8")]),
        @r"
        success: true
        exit_code: 0
        ----- stdout -----
        package of tools's MCP server fake (npx): fake-mcp 1.1.0 -> 1.2.0
        moved tools: sha256-cfPUYaAu1kTb (same files; what its MCP servers offer)
          ~ MCP server `fake`'s record: observed -> not observed: it exited before answering

        ----- stderr -----
        "
    );
}

#[test]
fn a_uvx_server_is_locked_with_its_wheels_and_runs_from_the_store_offline() {
    if !have_uv() {
        return;
    }
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    build_agent_index(&served, 0);
    let server = FileServer::start(&served, None);
    let index = server.url("simple");
    let env = [("BERTH_INDEX_URL", index.as_str())];
    tools_plugin(
        &ctx,
        json!({"py": {"command": "uvx", "args": ["fake-mcp-server"]},
               "plain": {"command": "node", "args": ["server.js"]}}),
    );
    berth(&ctx, &env, &["plugins", "lock"]);
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let payloads = lock["payload"].as_array().expect("payloads");
    assert_eq!(payloads.len(), 1, "only the runner line is a payload");
    let payload = &payloads[0];
    assert_eq!(payload["ecosystem"].as_str(), Some("python"));
    assert_eq!(payload["version"].as_str(), Some("0.3.0"));
    assert_eq!(payload["entry"].as_str(), Some("fake-mcp-server"));
    let wheels: Vec<&str> = payload["wheel"]
        .as_array()
        .expect("wheels")
        .iter()
        .map(|w| w["name"].as_str().expect("name"))
        .collect();
    assert_eq!(wheels, ["fake-mcp-server", "plain-lib"]);

    ctx.wipe_store_entries();
    berth(&ctx, &env, &["plugins", "sync"]);
    drop(server);
    let py = set_server(&ctx, "py");
    let command = py["command"].as_str().expect("command");
    assert!(
        command.starts_with(&*ctx.store.to_string_lossy())
            && command.ends_with("/bin/fake-mcp-server"),
        "{py}"
    );
    let answer = initialize(&py);
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "fake-mcp-server",
        "{answer}"
    );
    assert_eq!(
        answer["result"]["serverInfo"]["uses"], "plain_lib",
        "{answer}"
    );
    assert_eq!(
        set_server(&ctx, "plain")["command"],
        "node",
        "a plain program is left alone"
    );
}

#[test]
fn lines_berth_cannot_pin_are_left_as_written_with_a_warning() {
    let ctx = TestContext::new();
    tools_plugin(
        &ctx,
        json!({"git": {"command": "npx", "args": ["github:acme/tool"]}}),
    );
    berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `tools`, MCP server `git`: left as written and fetched at every start: `npx`: `github:acme/tool` is not a package of the registry (a git URL, path, tarball or alias)
          Adding tools sha256-SXBfcpD4vGTV
          Locked 1 plugin in `plugins.lock`
    ");
    assert!(!ctx.lock_text().contains("[[payload]]"));
    assert_eq!(set_server(&ctx, "git")["command"], "npx");
}

/// Variables that keep every request on this machine: npm, uv and berth send what is not
/// for 127.0.0.1 through a proxy that is not there, so a registry or index these tests do
/// not serve (npm's or PyPI's default) fails at once, without retries, instead of
/// reaching the network.
const NO_INTERNET: [(&str, &str); 5] = [
    ("HTTPS_PROXY", "http://127.0.0.1:9"),
    ("HTTP_PROXY", "http://127.0.0.1:9"),
    ("NO_PROXY", "127.0.0.1,localhost"),
    ("no_proxy", "127.0.0.1,localhost"),
    ("npm_config_fetch_retries", "0"),
];

/// `berth ARGS -vv` with `env`: its output, whether it succeeded or not.
fn berth_vv(ctx: &TestContext, env: &[(&str, &str)], args: &[&str]) -> common::Run {
    let mut cmd = ctx.berth();
    cmd.args(args).arg("-vv").envs(NO_INTERNET);
    for (key, value) in env {
        cmd.env(key, value);
    }
    common::Run::from(cmd.output().expect("run berth"))
}

/// The `registry` each payload of the lock records, by server.
fn recorded_registries(ctx: &TestContext) -> Vec<(String, String)> {
    let lock: toml::Value = toml::from_str(&ctx.lock_text()).expect("TOML");
    let mut recorded: Vec<(String, String)> = lock["payload"]
        .as_array()
        .expect("payloads")
        .iter()
        .map(|p| {
            (
                p["server"].as_str().expect("server").to_owned(),
                p["registry"].as_str().unwrap_or("(none)").to_owned(),
            )
        })
        .collect();
    recorded.sort();
    recorded
}

#[test]
fn npmrc_registries_and_tokens_are_npms_own_and_never_written_or_shown() {
    if !have_node() {
        return;
    }
    let ctx = TestContext::new();
    let (token, acme_token) = ("npm-s3cret-token", "acme-s3cret-token");
    let registry = common::npm::fake_registry_requiring_token(&ctx.root.join("npm"), token);
    // A second registry for the `@acme` scope, whose package needs `fake-dep` from the
    // first: one closure, two registries, two tokens.
    let mut acme = common::npm::Registry::start_requiring_token(&ctx.root.join("acme"), acme_token);
    acme.publish(
        "@acme/x",
        "1.0.0",
        json!({"bin": {"x": "bin/x.js"}, "dependencies": {"fake-dep": "^1.0.0"}}),
        &[("bin/x.js", "console.log(require('fake-dep').who);\n")],
    );
    let (main_url, acme_url) = (format!("{}/", registry.url()), format!("{}/", acme.url()));
    let host = |url: &str| url.split('/').nth(2).expect("host").to_owned();
    std::fs::write(
        ctx.work.join(".npmrc"),
        format!(
            "registry={main_url}\n//{}/:_authToken=${{NPM_TOKEN}}\n\
             @acme:registry={acme_url}\n//{}/:_authToken=${{ACME_TOKEN}}\n",
            host(&main_url),
            host(&acme_url)
        ),
    )
    .expect("write .npmrc");
    tools_plugin(
        &ctx,
        json!({"fake": {"command": "npx", "args": ["-y", "fake-mcp@^1"]},
               "acme": {"command": "npx", "args": ["-y", "@acme/x@1"]}}),
    );
    let tokens = [("NPM_TOKEN", token), ("ACME_TOKEN", acme_token)];
    let never_shown = |run: &common::Run, what: &str| {
        for secret in [token, acme_token] {
            assert!(
                !run.stderr.contains(secret) && !run.stdout.contains(secret),
                "{what} shows a token:\n{}",
                run.stderr
            );
        }
    };
    let locked = berth_vv(&ctx, &tokens, &["plugins", "lock"]);
    assert_eq!(locked.code, 0, "lock failed:\n{}", locked.stderr);
    never_shown(&locked, "lock -vv");
    let text = ctx.lock_text();
    assert!(
        !text.contains(token) && !text.contains(acme_token),
        "{text}"
    );
    assert_eq!(
        recorded_registries(&ctx),
        [
            ("acme".to_owned(), acme_url.clone()),
            ("fake".to_owned(), main_url.clone())
        ]
    );
    let listed = berth_vv(&ctx, &[], &["plugins", "list", "--json"]);
    let listed: Value = serde_json::from_str(&listed.stdout).expect("JSON");
    let mut listed_registries: Vec<&str> = listed["payloads"]
        .as_array()
        .expect("payloads")
        .iter()
        .map(|p| p["registry"].as_str().expect("registry"))
        .collect();
    listed_registries.sort_unstable();
    let mut expected = [acme_url.as_str(), main_url.as_str()];
    expected.sort_unstable();
    assert_eq!(
        listed_registries, expected,
        "`plugins list --json` shows them"
    );
    let lock: toml::Value = toml::from_str(&text).expect("TOML");
    let acme_payload = lock["payload"]
        .as_array()
        .expect("payloads")
        .iter()
        .find(|p| p["server"].as_str() == Some("acme"))
        .expect("the acme server's payload");
    let acme_closure: Vec<(&str, &str)> = acme_payload["npm"]
        .as_array()
        .expect("npm")
        .iter()
        .map(|p| {
            (
                p["path"].as_str().expect("path"),
                p["url"].as_str().expect("url"),
            )
        })
        .collect();
    let tarballs = |registry: &str| registry.replace("/registry/", "/tarballs/");
    assert!(
        acme_closure[0].0 == "node_modules/@acme/x"
            && acme_closure[0].1.starts_with(&tarballs(&acme_url))
            && acme_closure[1].0 == "node_modules/fake-dep"
            && acme_closure[1].1.starts_with(&tarballs(&main_url)),
        "each package from its own registry: {acme_closure:?}"
    );

    // A fresh store fetches every tarball again with the tokens this machine has now:
    // none from the lock, none from the store.
    ctx.wipe_store_entries();
    let wrong = [("NPM_TOKEN", "not-it"), ("ACME_TOKEN", acme_token)];
    let refused = berth_vv(&ctx, &wrong, &["plugins", "sync"]);
    assert_ne!(
        refused.code, 0,
        "a wrong token is refused:\n{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("401"), "{}", refused.stderr);
    never_shown(&refused, "a refused sync");
    let synced = berth_vv(&ctx, &tokens, &["plugins", "sync"]);
    assert_eq!(synced.code, 0, "sync failed:\n{}", synced.stderr);
    never_shown(&synced, "sync -vv");
    let verified = berth_vv(&ctx, &tokens, &["plugins", "verify"]);
    assert_eq!(verified.code, 0, "verify failed:\n{}", verified.stderr);
    never_shown(&verified, "verify -vv");
    let store = common::list_dir(&ctx.store.join("store-v1")).join("\n");
    assert!(!store.contains(token), "{store}");
    let grep = Command::new("grep")
        .args(["-rl", token, "-r"])
        .arg(&ctx.store)
        .output()
        .expect("grep");
    assert!(
        grep.stdout.is_empty(),
        "the store holds the token: {grep:?}"
    );
}

#[test]
fn the_npm_registry_is_berths_then_the_environments_then_the_projects_then_the_users() {
    if !have_node() {
        return;
    }
    let ctx = TestContext::new();
    let registry = fake_registry(&ctx.root.join("npm"));
    let good = format!("{}/", registry.url());
    // Nothing listens there: a registry read from the wrong layer fails the lock.
    let dead = "http://127.0.0.1:9/registry/";
    tools_plugin(
        &ctx,
        json!({"fake": {"command": "npx", "args": ["-y", "fake-mcp@1.0.0"]}}),
    );
    let lock_with = |env: &[(&str, &str)], project: Option<&str>, user: Option<&str>| {
        for (path, registry) in [
            (ctx.work.join(".npmrc"), project),
            (ctx.home.join(".npmrc"), user),
        ] {
            match registry {
                Some(url) => std::fs::write(&path, format!("registry={url}\n")).expect("write"),
                None => drop(std::fs::remove_file(&path)),
            }
        }
        let _ = std::fs::remove_file(ctx.work.join("plugins.lock"));
        let run = berth_vv(&ctx, env, &["plugins", "lock"]);
        assert_eq!(run.code, 0, "lock failed:\n{}", run.stderr);
        recorded_registries(&ctx)[0].1.clone()
    };
    let berth_env = [("BERTH_NPM_REGISTRY", good.as_str())];
    assert_eq!(
        lock_with(&berth_env, Some(dead), Some(dead)),
        good,
        "BERTH_NPM_REGISTRY first"
    );
    let npm_env = [("npm_config_registry", good.as_str())];
    assert_eq!(
        lock_with(&npm_env, Some(dead), Some(dead)),
        good,
        "then npm_config_registry"
    );
    let upper = [("NPM_CONFIG_REGISTRY", good.as_str())];
    assert_eq!(lock_with(&upper, None, Some(dead)), good, "in any case");
    assert_eq!(
        lock_with(&[], Some(&good), Some(dead)),
        good,
        "then the project's .npmrc"
    );
    assert_eq!(lock_with(&[], None, Some(&good)), good, "then the user's");
    let elsewhere = ctx.root.join("elsewhere.npmrc");
    std::fs::write(&elsewhere, format!("registry={good}\n")).expect("write");
    let userconfig = [("NPM_CONFIG_USERCONFIG", elsewhere.to_str().expect("utf-8"))];
    assert_eq!(
        lock_with(&userconfig, None, Some(dead)),
        good,
        "the user's is where NPM_CONFIG_USERCONFIG says"
    );
}

#[test]
fn a_uvx_server_is_resolved_against_uv_index_url_whose_password_is_never_written() {
    if !have_uv() {
        return;
    }
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    build_agent_index(&served, 0);
    let password = "uv-s3cret-pass";
    let server = FileServer::start(&served, Some(&format!("corp:{password}")));
    let index = server.url("simple");
    let with_password = index.replace("http://", &format!("http://corp:{password}@"));
    tools_plugin(
        &ctx,
        json!({"py": {"command": "uvx", "args": ["fake-mcp-server"]}}),
    );
    let env = [("UV_INDEX_URL", with_password.as_str())];
    let locked = berth_vv(&ctx, &env, &["plugins", "lock"]);
    assert_eq!(locked.code, 0, "lock failed:\n{}", locked.stderr);
    assert!(!locked.stderr.contains(password), "{}", locked.stderr);
    assert!(
        !locked.stderr.contains("has a credential written in it"),
        "UV_INDEX_URL is where uv's users put it: {}",
        locked.stderr
    );
    let text = ctx.lock_text();
    assert!(
        !text.contains(password) && !text.contains("corp:"),
        "{text}"
    );
    assert_eq!(
        recorded_registries(&ctx),
        [("py".to_owned(), index.clone())]
    );
    // Synced again with the credential this machine has for the recorded index.
    ctx.wipe_store_entries();
    let synced = berth_vv(&ctx, &env, &["plugins", "sync"]);
    assert_eq!(synced.code, 0, "sync failed:\n{}", synced.stderr);
    assert!(!synced.stderr.contains(password), "{}", synced.stderr);
    // berth's own setting stays first.
    let dead = [
        ("UV_INDEX_URL", with_password.as_str()),
        ("BERTH_INDEX_URL", "http://127.0.0.1:9/simple"),
    ];
    let _ = std::fs::remove_file(ctx.work.join("plugins.lock"));
    let refused = berth_vv(&ctx, &dead, &["plugins", "lock"]);
    assert_ne!(
        refused.code, 0,
        "BERTH_INDEX_URL is used:\n{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("127.0.0.1:9"), "{}", refused.stderr);
}
