//! `berth plugins import`: an OpenHands deployment's own records (the SDK's installed
//! plugins, the agent server's persisted conversations), written by the real SDK and agent
//! server 1.58.2, become a manifest and a lock pinned to what they ran.

use crate::common;
use crate::python_sdk::{Runtime, python_with, sdk_python};

use common::{GitRepo, TestContext, require_or_skip};

/// A plugin repository `NAME` whose skill says `text`.
fn plugin_repo(ctx: &TestContext, name: &str, dir: &str, text: &str) -> GitRepo {
    let repo = ctx.repo(name);
    common::market::plugin(&repo, dir, name, text);
    repo
}

/// The SDK's `install_plugin` of each `(source, repo_path)` into `dir`, then
/// `disable_plugin` of `disabled`.
const INSTALL: &str = r#"
import json, sys
from pathlib import Path
from openhands.sdk.plugin.installed import install_plugin, disable_plugin
dir = Path(sys.argv[1])
for source, repo_path in json.loads(sys.argv[2]):
    install_plugin(source, repo_path=repo_path, installed_dir=dir)
for name in json.loads(sys.argv[3]):
    disable_plugin(name, installed_dir=dir)
print("{}")
"#;

#[test]
fn installed_plugins_import_at_their_recorded_commits() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see tests/it/python_sdk.rs");
        return;
    };
    let ctx = TestContext::new();
    let one = plugin_repo(&ctx, "one", "", "One as installed.");
    let installed_commit = one.commit("v1");
    plugin_repo(&ctx, "two", "", "Two, disabled.").commit("two");
    plugin_repo(&ctx, "three", "plugins/three", "Three in a monorepo.").commit("three");
    let server = ctx.serve_github_over_http();
    let url = |name: &str| format!("{}/{name}.git", server.url());
    let installed = ctx.root.join("installed");
    let sources = serde_json::json!([
        [url("one"), null],
        [url("two"), null],
        [url("three"), "plugins/three"],
    ])
    .to_string();
    python_with(
        &ctx,
        &python_bin,
        Runtime::InProcess,
        INSTALL,
        &[&installed.display().to_string(), &sources, r#"["two"]"#],
    );
    // Upstream moves on after the install; an installed folder is edited by hand.
    plugin_repo(&ctx, "one", "", "One, later on main.").commit("v2");
    let edited = installed.join("three/skills/three-skill/SKILL.md");
    let text = std::fs::read_to_string(&edited).expect("installed skill");
    std::fs::write(&edited, format!("{text}Edited in place.\n")).expect("edit");

    let run = ctx.ok(&[
        "plugins",
        "import",
        "--installed",
        &installed.display().to_string(),
    ]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("manifest written");
    assert!(
        manifest.contains(&format!(
            "ref = \"{installed_commit}\"   # recorded at install"
        )),
        "{manifest}"
    );
    assert!(manifest.contains("# `two` ("), "{manifest}");
    assert!(
        manifest.contains("is installed but disabled: not imported"),
        "{manifest}"
    );
    assert!(
        manifest.contains("repo_path = \"plugins/three\""),
        "{manifest}"
    );
    assert!(
        run.stderr.contains("plugin `three`: its installed folder")
            && run.stderr.contains("differs from its recorded commit"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("plugin `one`: its installed folder"),
        "{}",
        run.stderr
    );
    let lock = berth_lockfile_schema::parse_lock("plugins.lock", &ctx.lock_text()).expect("lock");
    let names: Vec<&str> = lock.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["one", "three"]);
    ctx.ok(&["plugins", "lock", "--check"]);
    ctx.ok(&["plugins", "sync"]);
    let set: serde_json::Value =
        serde_json::from_str(&ctx.ok(&["plugins", "show", "--json"]).stdout).expect("set");
    let one_skill = set["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .find(|s| s["name"] == "one-skill")
        .expect("one's skill");
    assert!(
        one_skill["content"]
            .as_str()
            .expect("content")
            .contains("One as installed."),
        "{one_skill}"
    );

    // An existing manifest is never replaced.
    let again = ctx.run(&[
        "plugins",
        "import",
        "--installed",
        &installed.display().to_string(),
    ]);
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("exists already"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(ctx.manifest_path()).expect("kept"),
        manifest
    );
}

/// A conversation the real agent server persisted (created, never run: it fetches nothing
/// until then) imports as its registered marketplace and its plugins.
#[test]
fn a_conversation_the_agent_server_persisted_imports_as_its_plugins() {
    let Some(server_python) = common::agent_server::agent_server_python() else {
        require_or_skip("BERTH_AGENT_SERVER_PYTHON", "`.ci/run` makes its venv");
        return;
    };
    let ctx = TestContext::new();
    plugin_repo(&ctx, "one", "", "One on main.").commit("one");
    plugin_repo(&ctx, "tools", "plugins/lint", "Lint in a monorepo.").commit("tools");
    let market = ctx.repo("market");
    market.write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "market", "owner": {"name": "T"}, "plugins": [{"name": "alpha", "source": "./alpha"}]}"#,
    );
    market.write("alpha/.claude-plugin/plugin.json", r#"{"name": "alpha"}"#);
    market.write(
        "alpha/skills/a1/SKILL.md",
        "---\nname: a1\ndescription: A.\n---\nA.\n",
    );
    market.commit("market");
    let git = ctx.serve_github_over_http();
    let url = |name: &str| format!("{}/{name}.git", git.url());

    let served = ctx.root.join("agent-server");
    for dir in ["work", "persist", "home"] {
        std::fs::create_dir_all(served.join(dir)).expect("folder");
    }
    let server = common::agent_server::AgentServer::start(
        &server_python,
        &served.join("work"),
        &served.join("persist"),
        &served.join("home"),
    );
    let (status, created) = server.post(
        "/api/conversations",
        &serde_json::json!({
            "agent": {
                "llm": {"model": "openai/gpt-4o", "api_key": "x", "usage_id": "agent"},
                "tools": [],
                "agent_context": {"registered_marketplaces": [
                    {"name": "market", "source": url("market"), "ref": "main", "auto_load": ["alpha"]}
                ]}
            },
            "workspace": {"working_dir": served.join("work").display().to_string()},
            "plugins": [
                {"source": url("one"), "ref": "main"},
                {"source": url("tools"), "repo_path": "plugins/lint"}
            ]
        }),
    );
    assert_eq!(status, 201, "{created}\n{}", server.log());
    let id = created["id"].as_str().expect("an id").replace('-', "");
    let folder = served.join("work/workspace/conversations").join(&id);
    assert!(folder.join("meta.json").is_file(), "{}", folder.display());
    drop(server);

    let run = ctx.ok(&[
        "plugins",
        "import",
        "--conversation",
        &folder.display().to_string(),
    ]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("manifest");
    assert!(
        manifest.contains(&format!(
            "[[marketplace]]\nname = \"market\"\nsource = \"{}\"\nref = \"main\"\nauto_load = [\"alpha\"]\n",
            url("market")
        )),
        "{manifest}"
    );
    assert!(
        manifest.contains(&format!(
            "[[plugin]]\nsource = \"{}\"\nref = \"main\"\n",
            url("one")
        )),
        "{manifest}"
    );
    assert!(
        manifest.contains("repo_path = \"plugins/lint\""),
        "{manifest}"
    );
    assert!(run.stderr.contains("Imported 2 plugins"), "{}", run.stderr);
    let lock = berth_lockfile_schema::parse_lock("plugins.lock", &ctx.lock_text()).expect("lock");
    let names: Vec<&str> = lock.plugins.iter().map(|p| p.name.as_str()).collect();
    // What the registration auto-loads first, as the SDK loads it.
    assert_eq!(names, ["alpha", "one", "tools"]);
    ctx.ok(&["plugins", "lock", "--check"]);

    // A record that is not a conversation is an error naming it; nothing is written.
    let empty = ctx.root.join("not-a-conversation");
    std::fs::create_dir_all(&empty).expect("folder");
    let other = ctx.root.join("other");
    std::fs::create_dir_all(&other).expect("folder");
    let failed = common::Run::from(
        ctx.berth()
            .current_dir(&other)
            .args([
                "plugins",
                "import",
                "--conversation",
                &empty.display().to_string(),
            ])
            .output()
            .expect("run berth"),
    );
    assert_ne!(failed.code, 0);
    assert!(failed.stderr.contains("meta.json"), "{}", failed.stderr);
    assert!(!other.join("plugins.toml").exists());
}

/// A record that keeps the commits its plugins ran (`resolved_plugins`, the SDK's
/// `ResolvedPluginSource`) imports each plugin at that commit, not where its branch is now.
#[test]
fn a_conversation_that_kept_its_resolved_commits_imports_at_them() {
    let ctx = TestContext::new();
    let one = plugin_repo(&ctx, "one", "", "One as the conversation ran it.");
    let ran = one.commit("ran");
    plugin_repo(&ctx, "one", "", "One, later on main.").commit("later");
    let url = format!("file://{}", ctx.upstream.join("one.git").display());
    let folder = ctx.root.join("conversation");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(
        folder.join("meta.json"),
        serde_json::json!({
            "plugins": [{"source": url, "ref": "main", "repo_path": null}],
            "resolved_plugins": [{"source": url, "resolved_ref": ran, "repo_path": null, "original_ref": "main"}]
        })
        .to_string(),
    )
    .expect("meta.json");
    ctx.ok(&[
        "plugins",
        "import",
        "--conversation",
        &folder.display().to_string(),
    ]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("manifest");
    assert!(
        manifest.contains(&format!(
            "ref = \"{ran}\"   # the commit `main` was when the conversation ran"
        )),
        "{manifest}"
    );
    let lock = berth_lockfile_schema::parse_lock("plugins.lock", &ctx.lock_text()).expect("lock");
    let berth_lockfile_schema::Pin::Git(pin) = &lock.plugins[0].pin else {
        panic!("a git pin");
    };
    assert_eq!(pin.rev.to_string(), ran);
}

/// `--ambient`: what the SDK loads by itself into a conversation (the user's plugins, the
/// enabled installed ones, the project's, a project plugin replacing a user plugin of its
/// name) becomes explicit entries; berth's set from that lock, run where no ambient plugin
/// is on disk, equals what the real SDK's `LocalConversation` loaded from the disk.
#[test]
fn the_sdks_ambient_plugins_import_as_explicit_entries_equal_to_what_it_loads() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see tests/it/python_sdk.rs");
        return;
    };
    let ctx = TestContext::new();
    let folder = |dir: &std::path::Path, name: &str, skill: &str| {
        std::fs::create_dir_all(dir.join(".claude-plugin")).expect("folder");
        std::fs::write(
            dir.join(".claude-plugin/plugin.json"),
            format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\"}}"),
        )
        .expect("manifest");
        let skill_dir = dir.join("skills").join(skill);
        std::fs::create_dir_all(&skill_dir).expect("skill folder");
        std::fs::write(
            skill_dir.join("SKILL.md"),
            format!("---\nname: {skill}\ndescription: {skill} of {name}.\n---\n{skill}.\n"),
        )
        .expect("skill");
    };
    folder(&ctx.home.join(".agents/plugins/ua"), "ua", "ua-user");
    folder(&ctx.home.join(".openhands/plugins/ub"), "ub", "ub-user");
    std::fs::write(
        ctx.home.join(".openhands/plugins/ub/.mcp.json"),
        r#"{"mcpServers": {"ub-db": {"type": "stdio", "command": "ub-server"}}}"#,
    )
    .expect("mcp");
    let workspace = ctx.root.join("workspace");
    folder(&workspace.join(".agents/plugins/pa"), "pa", "pa-project");
    folder(
        &workspace.join(".agents/plugins/ua-here"),
        "ua",
        "ua-project",
    );
    plugin_repo(&ctx, "inst", "", "Installed and enabled.").commit("inst");
    plugin_repo(&ctx, "off", "", "Installed, disabled.").commit("off");
    let server = ctx.serve_github_over_http();
    let sources = serde_json::json!([
        [format!("{}/inst.git", server.url()), null],
        [format!("{}/off.git", server.url()), null],
    ])
    .to_string();
    let installed = ctx.home.join(".openhands/plugins/installed");
    python_with(
        &ctx,
        &python_bin,
        Runtime::InProcess,
        INSTALL,
        &[&installed.display().to_string(), &sources, r#"["off"]"#],
    );

    let sdk_out = ctx.root.join("sdk.json").display().to_string();
    let ws = workspace.display().to_string();
    let script = |args: &[&str]| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/py/ambient.py")
            .display()
            .to_string();
        let code = format!(
            "import runpy, sys\nsys.argv = [{path:?}] + sys.argv[1:]\nrunpy.run_path({path:?}, run_name='__main__')\n"
        );
        let out = python_with(&ctx, &python_bin, Runtime::InProcess, &code, args);
        serde_json::from_str::<serde_json::Value>(out.trim()).expect("JSON")
    };
    let sdk = script(&["sdk", &ws, &sdk_out]);
    assert_eq!(
        sdk["skills"],
        serde_json::json!(["ua-project", "ub-user", "inst-skill", "pa-project"]),
        "{sdk}"
    );

    ctx.ok(&["plugins", "import", "--ambient", &ws]);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("manifest");
    assert!(
        !manifest.contains("off.git"),
        "a disabled plugin is not loaded: {manifest}"
    );
    assert!(manifest.contains("# recorded at install"), "{manifest}");
    assert_eq!(manifest.matches("[[plugin]]").count(), 4, "{manifest}");
    ctx.ok(&["plugins", "sync"]);
    drop(server);
    let empty = ctx.root.join("empty");
    std::fs::create_dir_all(&empty).expect("empty");
    let lockfile = ctx.lock_path().display().to_string();
    let got = script(&["berth", &lockfile, &empty.display().to_string(), &sdk_out]);
    assert_eq!(got["mismatch"], "", "{got}");
    assert_eq!(got["skills"], got["sdk_skills"], "{got}");
}
