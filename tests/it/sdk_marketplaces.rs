//! The OpenHands SDK's registered marketplaces (`AgentContext.registered_marketplaces`,
//! `MarketplaceRegistration.auto_load`) locked: a `[[marketplace]]` with `auto_load` pins
//! the plugins and standalone skills it brings, and `berth.openhands.load_plugins` gives a
//! conversation what the real SDK 1.58.2's `LocalConversation` loads from the same
//! registrations, from the lock and the store alone, with the upstreams gone.

use crate::common;
use crate::python_sdk::{Runtime, python_with, script_with, sdk_python};

use common::{GitRepo, TestContext, require_or_skip};

/// A plugin folder in `repo` at `dir` with these skills (`NAME`: its text).
fn plugin(repo: &GitRepo, dir: &str, name: &str, skills: &[(&str, &str)]) {
    repo.write(
        &format!("{dir}/.claude-plugin/plugin.json"),
        &format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\"}}\n"),
    );
    for (skill, text) in skills {
        repo.write(
            &format!("{dir}/skills/{skill}/SKILL.md"),
            &format!("---\nname: {skill}\ndescription: {text}\n---\n{text}\n"),
        );
    }
}

/// A standalone skill's folder in `repo` at `dir`.
fn skill(repo: &GitRepo, dir: &str, name: &str, text: &str) {
    repo.write(
        &format!("{dir}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {text}\n---\n{text}\n"),
    );
}

/// `market` (a `.plugin` catalog of three plugins and three standalone skills, one named
/// like a plugin's skill and one like the agent's own) and `tools` (a `.claude-plugin`
/// catalog of one plugin and one skill).
fn marketplaces(ctx: &TestContext) {
    let market = ctx.repo("market");
    market.write(
        ".plugin/marketplace.json",
        r#"{"name": "market", "owner": {"name": "Test"},
  "plugins": [
    {"name": "alpha", "source": "./plugins/alpha"},
    {"name": "beta", "source": "./plugins/beta"},
    {"name": "gamma", "source": "./plugins/gamma"}
  ],
  "skills": [
    {"name": "github", "source": "./skills/github"},
    {"name": "shared", "source": "./skills/shared"},
    {"name": "notes", "source": "./skills/notes"}
  ]}
"#,
    );
    plugin(
        &market,
        "plugins/alpha",
        "alpha",
        &[
            ("a1", "Alpha one."),
            ("shared", "Alpha's shared skill wins."),
        ],
    );
    plugin(&market, "plugins/beta", "beta", &[("b1", "Beta one.")]);
    market.write(
        "plugins/beta/.mcp.json",
        r#"{"mcpServers": {"beta-db": {"type": "stdio", "command": "beta-server", "args": ["--stdio"]}}}"#,
    );
    market.write(
        "plugins/beta/hooks/hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"type": "command", "command": "echo beta"}]}]}}"#,
    );
    plugin(
        &market,
        "plugins/gamma",
        "gamma",
        &[("b1", "Gamma's b1, asked for by the conversation, wins.")],
    );
    skill(&market, "skills/github", "github", "Works with GitHub.");
    market.write_exec("skills/github/scripts/pr.sh", "#!/bin/sh\necho pr\n");
    skill(
        &market,
        "skills/shared",
        "shared",
        "The standalone shared skill, overridden.",
    );
    skill(
        &market,
        "skills/notes",
        "notes",
        "Marketplace notes, below the agent's own.",
    );
    market.commit("market");

    let tools = ctx.repo("tools");
    tools.write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "tools", "owner": {"name": "Test"},
  "plugins": [{"name": "delta", "source": "./delta"}, {"name": "epsilon", "source": "./epsilon"}],
  "skills": [{"name": "lint", "source": "./lint"}]}
"#,
    );
    plugin(&tools, "delta", "delta", &[("d1", "Delta one.")]);
    plugin(&tools, "epsilon", "epsilon", &[("e1", "Epsilon one.")]);
    skill(&tools, "lint", "lint", "Lints.");
    tools.commit("tools");
}

#[test]
fn registered_marketplaces_load_from_the_lock_as_the_sdk_loads_them() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see tests/it/python_sdk.rs");
        return;
    };
    let ctx = TestContext::new();
    marketplaces(&ctx);
    let server = ctx.serve_github_over_http();
    let market = format!("{}/market.git", server.url());
    let tools = format!("{}/tools.git", server.url());
    ctx.write_manifest(&format!(
        r#"[[marketplace]]
name = "market"
source = "{market}"
auto_load = ["alpha", "beta", "github", "shared", "notes", "missing"]

[[marketplace]]
name = "tools"
source = "{tools}"
auto_load = true

[[plugin]]
source = "gamma@market"
"#
    ));
    let locked = ctx.ok(&["plugins", "lock"]);
    ctx.ok(&["plugins", "sync"]);
    ctx.ok(&["plugins", "lock", "--check"]);
    let lock = ctx.lock_text();
    let entries: Vec<(String, bool)> = berth_lockfile_schema::parse_lock("plugins.lock", &lock)
        .expect("the lock parses")
        .plugins
        .iter()
        .map(|p| (p.name.clone(), p.standalone_skill))
        .collect();
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    // The SDK's order: every registration's standalone skills, their plugins, then the
    // conversation's own.
    assert_eq!(
        names,
        [
            "github", "shared", "notes", "lint", "alpha", "beta", "delta", "epsilon", "gamma"
        ],
        "{lock}"
    );
    assert!(entries[..4].iter().all(|(_, s)| *s) && entries[4..].iter().all(|(_, s)| !*s));
    assert!(
        lock.contains(
            "auto_load = [\"alpha\", \"beta\", \"github\", \"shared\", \"notes\", \"missing\"]"
        ),
        "{lock}"
    );
    assert!(lock.contains("auto_load = true"), "{lock}");
    // `gamma` is not auto-loaded: the conversation asks for it, after what is.
    assert_eq!(lock.matches("name = \"gamma\"").count(), 1, "{lock}");
    assert!(
        locked.stderr.contains("marketplace `market`: `auto_load` names `missing`, which its catalog lists neither as a plugin nor as a skill"),
        "{}",
        locked.stderr
    );

    // Harnesses other than the SDK have no standalone skills: left out, said.
    let written = ctx.ok(&["materialize", "agent-plugins", "out", "--frozen"]);
    assert!(
        written
            .stderr
            .contains("standalone skill `github` of marketplace `market` is not written"),
        "{}",
        written.stderr
    );
    assert!(ctx.work.join("out/alpha/plugin.json").is_file());
    assert!(!ctx.work.join("out/github").exists());

    let registrations = serde_json::json!([
        {"name": "market", "source": market, "auto_load": ["alpha", "beta", "github", "shared", "notes", "missing"]},
        {"name": "tools", "source": tools, "auto_load": true},
    ])
    .to_string();
    let plugins = serde_json::json!([{"source": market, "repo_path": "plugins/gamma"}]).to_string();
    let sdk_out = ctx.root.join("sdk.json");
    let workspace = ctx.root.join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let ws = workspace.display().to_string();
    let out = sdk_out.display().to_string();
    let sdk = script_with(
        &ctx,
        &python_bin,
        Runtime::InProcess,
        "compare_marketplaces.py",
        &["sdk", &registrations, &plugins, &ws, &out],
    );
    assert_eq!(
        sdk["skills"],
        serde_json::json!(["notes", "github", "shared", "lint", "a1", "b1", "d1", "e1"]),
        "{sdk}"
    );
    // The upstreams go: what berth gives comes from the lock and the store.
    drop(server);
    for runtime in [Runtime::InProcess, Runtime::Binary] {
        let lockfile = ctx.lock_path().display().to_string();
        let got = script_with(
            &ctx,
            &python_bin,
            runtime,
            "compare_marketplaces.py",
            &["berth", &registrations, &lockfile, &ws, &out],
        );
        assert_eq!(got["mismatch"], "", "{runtime:?}: {got}");
        assert_eq!(got["skills"], got["sdk_skills"], "{runtime:?}: {got}");
        assert_eq!(got["mcp"], serde_json::json!(["beta-db"]), "{got}");
        assert_eq!(
            got["hook_events"],
            serde_json::json!(["pre_tool_use"]),
            "{got}"
        );
        // Registered still (for `load_plugin`), but nothing left for the SDK to fetch.
        assert_eq!(
            got["auto_load_left"],
            serde_json::json!([false, false]),
            "{got}"
        );
    }
}

#[test]
fn a_registration_the_lock_does_not_hold_is_an_error_naming_it() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see tests/it/python_sdk.rs");
        return;
    };
    let ctx = TestContext::new();
    marketplaces(&ctx);
    let market = ctx.upstream.join("market.git").display().to_string();
    ctx.write_manifest(&format!(
        "[[marketplace]]\nname = \"market\"\nsource = \"{market}\"\nauto_load = [\"alpha\"]\n"
    ));
    ctx.ok(&["plugins", "sync"]);
    let script = r#"
import json, sys
from pydantic import SecretStr
from openhands.sdk import LLM, Agent
from openhands.sdk.context import AgentContext
from openhands.sdk.marketplace import MarketplaceRegistration
from berth import BerthError
from berth.openhands import load_plugins
errors = []
for regs in json.loads(sys.argv[2]):
    context = AgentContext(registered_marketplaces=[MarketplaceRegistration(**r) for r in regs])
    agent = Agent(llm=LLM(model="gpt-4o", api_key=SecretStr("x"), usage_id="p"), tools=[], agent_context=context)
    try:
        load_plugins(sys.argv[1], agent)
        errors.append("")
    except BerthError as e:
        errors.append(str(e))
print(json.dumps(errors))
"#;
    let cases = serde_json::json!([
        [{"name": "market", "source": market, "auto_load": ["alpha"]}],
        [{"name": "market", "source": market, "auto_load": true}],
        [{"name": "market", "source": market, "auto_load": ["alpha"]}, {"name": "other", "source": "github:acme/other"}],
        [],
    ])
    .to_string();
    let lockfile = ctx.lock_path().display().to_string();
    let out = python_with(
        &ctx,
        &python_bin,
        Runtime::InProcess,
        script,
        &[&lockfile, &cases],
    );
    let errors: Vec<String> = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(errors[0], "", "{errors:?}");
    assert!(
        errors[1].contains("marketplace `market` is registered otherwise than it is locked")
            && errors[1].contains("auto_load: ['alpha'] locked, True registered"),
        "{errors:?}"
    );
    assert!(
        errors[2].contains(
            "marketplace `other` (github:acme/other) is registered but the lock does not hold it"
        ),
        "{errors:?}"
    );
    // No registrations at all: the lock alone says what loads.
    assert_eq!(errors[3], "", "{errors:?}");
}

/// `auto_load` is part of the declaration: changing it makes the lock stale, and locking
/// again reads the catalog at the commit already pinned (the marketplace does not move),
/// adding and removing only what it brings.
#[test]
fn changing_auto_load_relocks_at_the_pinned_commit() {
    let ctx = TestContext::new();
    marketplaces(&ctx);
    let market = "github:acme/market";
    let manifest = |auto_load: &str| {
        format!("[[marketplace]]\nname = \"market\"\nsource = \"{market}\"\n{auto_load}")
    };
    ctx.write_manifest(&manifest("auto_load = [\"alpha\"]\n"));
    ctx.ok(&["plugins", "lock"]);
    let first = ctx.lock_text();
    let rev = |lock: &str| {
        berth_lockfile_schema::parse_lock("plugins.lock", lock)
            .expect("parses")
            .marketplaces[0]
            .git
            .as_ref()
            .expect("git")
            .1
            .to_string()
    };
    let names = |lock: &str| -> Vec<String> {
        berth_lockfile_schema::parse_lock("plugins.lock", lock)
            .expect("parses")
            .plugins
            .iter()
            .map(|p| p.name.clone())
            .collect()
    };
    assert_eq!(names(&first), ["alpha"]);
    // Upstream moves on; the lock keeps its commit.
    let repo = GitRepo::init(&ctx.upstream.join("market.git"), &ctx.home);
    repo.write(
        "plugins/beta/skills/b1/SKILL.md",
        "---\nname: b1\ndescription: moved\n---\nmoved\n",
    );
    repo.commit("moved");

    ctx.write_manifest(&manifest("auto_load = [\"alpha\", \"github\", \"beta\"]\n"));
    let check = ctx.run(&["plugins", "lock", "--check"]);
    assert_ne!(check.code, 0, "a changed auto_load is stale");
    assert!(check.stderr.contains("auto_load"), "{}", check.stderr);
    ctx.ok(&["plugins", "lock"]);
    let second = ctx.lock_text();
    assert_eq!(rev(&second), rev(&first), "{second}");
    assert_eq!(names(&second), ["github", "alpha", "beta"]);
    assert!(!second.contains("moved"));
    ctx.ok(&["plugins", "lock", "--check"]);
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(ctx.lock_text(), second, "locking again changes nothing");
    let listed = ctx.ok(&["plugins", "list"]).stdout;
    assert!(
        listed.contains("github (skill, auto-loaded by market)"),
        "{listed}"
    );
    assert!(listed.contains("alpha (auto-loaded by market)"), "{listed}");
    let clash = ctx.run(&["plugins", "add", "alpha@market"]);
    assert_ne!(clash.code, 0);
    assert!(
        clash
            .stderr
            .contains("already in the lock, auto-loaded by marketplace `market`"),
        "{}",
        clash.stderr
    );

    ctx.write_manifest(&manifest(""));
    ctx.ok(&["plugins", "lock"]);
    let third = ctx.lock_text();
    assert!(names(&third).is_empty(), "{third}");
    assert!(!third.contains("auto_load"), "{third}");
    assert_eq!(rev(&third), rev(&first));
}

/// `berth.openhands.load_plugin` is the SDK's `load_plugin` from the lock: a plugin the lock
/// does not hold is locked on demand (manifest and lock record it), the SDK merges it as it
/// merges its own fetch, and a conversation built from the lock afterwards, with the
/// upstreams gone, has it from the start.
#[test]
fn load_plugin_locks_on_demand_and_the_lock_restores_it() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see tests/it/python_sdk.rs");
        return;
    };
    let ctx = TestContext::new();
    marketplaces(&ctx);
    let server = ctx.serve_github_over_http();
    let market = format!("{}/market.git", server.url());
    ctx.write_manifest(&format!(
        "[[marketplace]]\nname = \"market\"\nsource = \"{market}\"\n\n[[plugin]]\nsource = \"alpha@market\"\n"
    ));
    ctx.ok(&["plugins", "sync"]);
    let registrations = serde_json::json!([{"name": "market", "source": market}]).to_string();
    let plugins = serde_json::json!([{"source": market, "repo_path": "plugins/alpha"}]).to_string();
    let sdk_out = ctx.root.join("sdk.json").display().to_string();
    let workspace = ctx.root.join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let ws = workspace.display().to_string();
    let lockfile = ctx.lock_path().display().to_string();
    script_with(
        &ctx,
        &python_bin,
        Runtime::InProcess,
        "compare_marketplaces.py",
        &[
            "sdk-load",
            &registrations,
            &plugins,
            "beta@market",
            &ws,
            &sdk_out,
        ],
    );
    let got = script_with(
        &ctx,
        &python_bin,
        Runtime::InProcess,
        "compare_marketplaces.py",
        &[
            "berth-load",
            &registrations,
            "beta@market",
            &lockfile,
            &ws,
            &sdk_out,
        ],
    );
    assert_eq!(got["mismatch"], "", "{got}");
    assert_eq!(
        got["skills"],
        serde_json::json!(["notes", "a1", "shared", "b1"]),
        "{got}"
    );
    // Recorded: the manifest asks for it, the lock pins it.
    assert!(
        std::fs::read_to_string(ctx.manifest_path())
            .expect("manifest")
            .contains("beta@market")
    );
    assert!(ctx.lock_text().contains("requested = \"beta@market\""));

    // A restart: the lock alone, nothing to fetch from.
    drop(server);
    for runtime in [Runtime::InProcess, Runtime::Binary] {
        let restored = script_with(
            &ctx,
            &python_bin,
            runtime,
            "compare_marketplaces.py",
            &["berth", &registrations, &lockfile, &ws, &sdk_out],
        );
        assert_eq!(restored["mismatch"], "", "{runtime:?}: {restored}");
    }
}
