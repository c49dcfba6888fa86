//! The real OpenHands agent server (`openhands-agent-server` 1.58.2 from PyPI) restores a
//! conversation's plugins from berth: a conversation started with
//! `berth.openhands.start_request` (the lock's set merged into its agent: an explicit
//! plugin and an auto-loading marketplace's plugin and standalone skill) runs a turn
//! against a fake model on 127.0.0.1, loads a plugin berth locked meanwhile through the
//! server's own `load_plugin` route, and runs another; the server stops, the upstreams and
//! the SDK's own plugin cache go, the server starts again, and the resumed conversation
//! runs a turn with the same skills, MCP servers and hooks, nothing fetched.

use crate::common;
use crate::python_sdk::{Runtime, python_with};

use common::agent_server::{AgentServer, FakeModel, agent_server_python};
use common::{TestContext, require_or_skip};

/// `one` (an Agent Skills skill, a stdio MCP server, a `PreToolUse` hook) and `market`
/// (plugin `alpha` and the standalone skill `github`).
fn upstreams(ctx: &TestContext) {
    let one = ctx.repo("one");
    one.write(
        ".claude-plugin/plugin.json",
        r#"{"name": "one", "version": "1.0.0"}"#,
    );
    one.write(
        "skills/one-skill/SKILL.md",
        "---\nname: one-skill\ndescription: Does the first thing.\n---\nDo it.\n",
    );
    one.write(
        ".mcp.json",
        r#"{"mcpServers": {"one-db": {"type": "stdio", "command": "true", "args": ["--db"]}}}"#,
    );
    one.write(
        "hooks/hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"type": "command", "command": "echo checked"}]}]}}"#,
    );
    one.commit("one");
    let market = ctx.repo("market");
    market.write(
        ".plugin/marketplace.json",
        r#"{"name": "market", "owner": {"name": "T"},
  "plugins": [{"name": "alpha", "source": "./alpha"}, {"name": "delta", "source": "./delta"}],
  "skills": [{"name": "github", "source": "./skills/github"}]}"#,
    );
    market.write("alpha/.claude-plugin/plugin.json", r#"{"name": "alpha"}"#);
    market.write(
        "alpha/skills/alpha-skill/SKILL.md",
        "---\nname: alpha-skill\ndescription: Alpha's skill.\n---\nAlpha.\n",
    );
    market.write("delta/.claude-plugin/plugin.json", r#"{"name": "delta"}"#);
    market.write(
        "delta/skills/delta-skill/SKILL.md",
        "---\nname: delta-skill\ndescription: Loaded mid-conversation.\n---\nDelta.\n",
    );
    market.write(
        "skills/github/SKILL.md",
        "---\nname: github\ndescription: Works with GitHub.\n---\nUse gh.\n",
    );
    market.commit("market");
}

/// Builds the start request with `berth.openhands.start_request` (in the agent server's
/// own Python, whose SDK builds the agent).
const START: &str = r#"
import json, sys
from pydantic import SecretStr
from openhands.sdk import LLM, Agent
from openhands.sdk.context import AgentContext
from openhands.sdk.marketplace import MarketplaceRegistration
from berth.openhands import start_request
lockfile, model, market, workspace = sys.argv[1:5]
registration = MarketplaceRegistration(name="market", source=market, auto_load=["alpha", "github"])
agent = Agent(
    llm=LLM(model="openai/gpt-4o", api_key=SecretStr("x"), base_url=model + "/v1", usage_id="agent"),
    tools=[],
    agent_context=AgentContext(registered_marketplaces=[registration]),
)
print(json.dumps(start_request(lockfile, agent, workspace)))
"#;

/// What a turn's request shows of the plugin set: the system prompt's dynamic part (the
/// skills; its date line left out) and the tools offered.
fn seen(turn: &serde_json::Value) -> (String, serde_json::Value) {
    let system = turn["messages"][0]["content"]
        .as_array()
        .expect("the system message's parts")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let without_date: Vec<&str> = system
        .lines()
        .filter(|l| !l.starts_with("The current date and time is"))
        .collect();
    (without_date.join("\n"), turn["tools"].clone())
}

/// The skills of conversation `id`'s agent as the server persisted them (`base_state.json`).
fn persisted_skills(work: &std::path::Path, id: &str) -> Vec<String> {
    let path = work
        .join("workspace/conversations")
        .join(id.replace('-', ""))
        .join("base_state.json");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("base_state.json"))
            .expect("JSON");
    state["agent"]["agent_context"]["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_conversation_resumes_with_its_locked_plugins_after_a_restart_with_the_upstreams_gone() {
    let Some(server_python) = agent_server_python() else {
        require_or_skip("BERTH_AGENT_SERVER_PYTHON", "`.ci/run` makes its venv");
        return;
    };
    let ctx = TestContext::new();
    upstreams(&ctx);
    let git = ctx.serve_github_over_http();
    let url = |name: &str| format!("{}/{name}.git", git.url());
    ctx.write_manifest(&format!(
        "[[marketplace]]\nname = \"market\"\nsource = \"{}\"\nauto_load = [\"alpha\", \"github\"]\n\n[[plugin]]\nsource = \"{}\"\n",
        url("market"),
        url("one")
    ));
    ctx.ok(&["plugins", "sync"]);

    let served = ctx.root.join("agent-server");
    let (work, persist, home) = (
        served.join("work"),
        served.join("persist"),
        served.join("home"),
    );
    for dir in [&work, &persist, &home] {
        std::fs::create_dir_all(dir).expect("folder");
    }
    let model = FakeModel::start(&ctx.root.join("model.jsonl"));
    let lockfile = ctx.lock_path().display().to_string();
    let body = python_with(
        &ctx,
        &server_python,
        Runtime::Binary,
        START,
        &[
            &lockfile,
            &model.base,
            &url("market"),
            &work.display().to_string(),
        ],
    );
    let body: serde_json::Value = serde_json::from_str(body.trim()).expect("a start request");
    assert!(body.get("plugins").is_none(), "{body}");

    let server = AgentServer::start(&server_python, &work, &persist, &home);
    let (status, created) = server.post("/api/conversations", &body);
    assert_eq!(status, 201, "{created}\n{}", server.log());
    let id = created["id"].as_str().expect("an id").to_owned();
    server.run_turn(&id, "Hello.", &model);
    let first = server.get(&format!("/api/conversations/{id}"));
    let (prompt, _) = seen(model.turns().last().expect("a turn"));
    // Each skill of the set is offered by its description: the plugin's, the auto-loaded
    // plugin's and the marketplace's standalone skill.
    for description in [
        "Does the first thing.",
        "Alpha's skill.",
        "Works with GitHub.",
    ] {
        assert!(
            prompt.contains(description),
            "`{description}` is offered:\n{prompt}"
        );
    }
    assert_eq!(
        first["agent"]["mcp_config"]["one-db"]["command"], "true",
        "{first}"
    );
    assert!(
        first["hook_config"]["pre_tool_use"]
            .to_string()
            .contains("echo checked"),
        "{first}"
    );

    // The server's own `load_plugin` route finds a plugin berth locked meanwhile in berth's
    // marketplace folder (the conversation's registration points there): no fetch.
    let (status, refused) = server.post(
        &format!("/api/conversations/{id}/load_plugin"),
        &serde_json::json!({"plugin_ref": "delta@market"}),
    );
    assert_eq!(status, 404, "not locked, not loadable: {refused}");
    ctx.ok(&["plugins", "add", "delta@market"]);
    ctx.ok(&["plugins", "sync"]);
    python_with(
        &ctx,
        &server_python,
        Runtime::Binary,
        "import sys\nfrom berth.openhands import marketplace_folder\nmarketplace_folder(sys.argv[1], 'market')\n",
        &[&lockfile],
    );
    let (status, loaded) = server.post(
        &format!("/api/conversations/{id}/load_plugin"),
        &serde_json::json!({"plugin_ref": "delta@market"}),
    );
    assert_eq!(status, 200, "{loaded}\n{}", server.log());
    server.run_turn(&id, "And now?", &model);
    let first = server.get(&format!("/api/conversations/{id}"));
    let (prompt, tools) = seen(model.turns().last().expect("a turn"));
    // The SDK renders the system prompt once, at the first turn: a skill loaded later is in
    // the agent's context (for `invoke_skill`), which the server persists.
    let skills = || persisted_skills(&work, &id);
    assert!(
        skills().contains(&"delta-skill".to_owned()),
        "{:?}",
        skills()
    );
    drop(server);

    // Nothing left to fetch from: the upstreams and the SDK's own plugin cache are gone.
    drop(git);
    std::fs::remove_dir_all(&ctx.upstream).expect("remove the upstreams");
    let _ = std::fs::remove_dir_all(persist.join("cache/plugins"));

    let server = AgentServer::start(&server_python, &work, &persist, &home);
    server.run_turn(&id, "Hello again.", &model);
    let resumed = server.get(&format!("/api/conversations/{id}"));
    let (prompt_again, tools_again) = seen(model.turns().last().expect("a second turn"));
    assert_eq!(
        prompt_again, prompt,
        "the resumed conversation offers the same skills"
    );
    assert_eq!(tools_again, tools);
    assert_eq!(resumed["agent"]["mcp_config"], first["agent"]["mcp_config"]);
    assert_eq!(resumed["hook_config"], first["hook_config"]);
    assert!(
        !persist.join("cache/plugins").exists(),
        "nothing was fetched"
    );
    assert!(
        skills().contains(&"delta-skill".to_owned()),
        "{:?}",
        skills()
    );
}
