//! Every marketplace entry form in `fixtures/marketplaces/entry-forms` (issue #40), installed
//! by each real client its own way and read back by the same client from what
//! `berth materialize` wrote: per plugin, equal, or the difference is one of berth's
//! warnings. Each client reads the whole fixture in one test; Claude Code's CLI installs
//! and shows one plugin a call, the others read everything in one call.

use crate::common;
use crate::materialize::{
    claude, claude_bin, claude_bins, claude_inventory, codex_bins, gemini_bin, sdk_command,
    sdk_python,
};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TestContext, copy_tree, fixtures, require_or_skip};
use serde_json::Value;

pub(crate) const MARKET: &str = "entry-forms";

/// What a client shows of each plugin: kind -> sorted names.
pub(crate) type Inventory = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// The fixture's plugins, in its catalog's order.
pub(crate) fn plugins() -> Vec<String> {
    let catalog: Value = serde_json::from_str(
        &std::fs::read_to_string(
            fixtures().join("marketplaces/entry-forms/.claude-plugin/marketplace.json"),
        )
        .expect("catalog"),
    )
    .expect("JSON");
    catalog["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect()
}

/// The fixture marketplace at `ctx.work/mk`, every plugin of it locked and synced.
pub(crate) fn locked_fixture(ctx: &TestContext) -> PathBuf {
    let market = ctx.work.join("mk");
    copy_tree(&fixtures().join("marketplaces/entry-forms"), &market);
    let mut manifest = format!("[[marketplace]]\nname = \"{MARKET}\"\nsource = \"./mk\"\n");
    for name in plugins() {
        manifest.push_str(&format!("\n[[plugin]]\nsource = \"{name}@{MARKET}\"\n"));
    }
    ctx.write_manifest(&manifest);
    ctx.ok(&["plugins", "sync"]);
    market
}

/// `berth materialize TARGET DIR`: its warnings.
pub(crate) fn materialize(ctx: &TestContext, target: &str, dir: &Path) -> Vec<String> {
    let run = ctx.ok(&["materialize", target, dir.to_str().expect("utf-8")]);
    run.stderr
        .lines()
        .filter_map(|l| l.strip_prefix("warning: "))
        .map(str::to_owned)
        .collect()
}

/// Whether a warning names `plugin` and says `what`.
pub(crate) fn warned(warnings: &[String], plugin: &str, what: &str) -> bool {
    warnings
        .iter()
        .any(|w| w.starts_with(&format!("plugin `{plugin}`")) && w.contains(what))
}

/// The fixture's plugins Claude Code refuses to install: `folder-agents` names its agents
/// folder in its own `plugin.json`, where Claude Code takes only `.md` files.
pub(crate) const REFUSED_BY_CLAUDE: [&str; 1] = ["folder-agents"];

/// Claude Code's install of every fixture plugin in configuration folder `dir`, its own
/// way (`plugin marketplace add`, `plugin install`): those it refuses fail, saying why.
pub(crate) fn claude_installs(ctx: &TestContext, bin: &Path, dir: &Path, market: &Path) {
    let market = market.to_str().expect("utf-8");
    claude(ctx, bin, dir, &["plugin", "marketplace", "add", market]);
    for name in plugins() {
        let id = format!("{name}@{MARKET}");
        if !REFUSED_BY_CLAUDE.contains(&name.as_str()) {
            claude(ctx, bin, dir, &["plugin", "install", &id]);
            continue;
        }
        let out = Command::new(bin)
            .args(["plugin", "install", &id])
            .env("CLAUDE_CONFIG_DIR", dir)
            .env("HOME", &ctx.home)
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .current_dir(&ctx.work)
            .output()
            .expect("run claude");
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && said.contains("Validation errors: agents"),
            "{}: Claude Code refuses `{id}`: {said}",
            bin.display()
        );
    }
}

/// What Claude Code shows of each plugin installed from `marketplace` in `dir`
/// (`plugin details`: its skills, commands among them, agents, hooks, MCP and LSP servers).
pub(crate) fn claude_reads(
    ctx: &TestContext,
    bin: &Path,
    dir: &Path,
    marketplace: &str,
) -> Inventory {
    plugins()
        .into_iter()
        .filter(|name| !REFUSED_BY_CLAUDE.contains(&name.as_str()))
        .map(|name| {
            let id = format!("{name}@{marketplace}");
            let details = claude(ctx, bin, dir, &["plugin", "details", &id]);
            (name, claude_inventory(&details))
        })
        .collect()
}

#[test]
fn claude_code_reads_berths_folder_as_its_own_install() {
    let bins = claude_bins();
    if bins.is_empty() {
        return;
    }
    let ctx = TestContext::new();
    let market = locked_fixture(&ctx);
    let written = ctx.root.join("claude-berth");
    let warnings = materialize(&ctx, "claude", &written);
    // What Claude Code refuses is written, with its reason; nothing else differs.
    assert_eq!(
        warnings,
        [
            "plugin `folder-agents`: Claude Code 2.1.332 refuses to install it: its `.claude-plugin/plugin.json`'s `agents.0` must end with `.md` (`./agents`); berth writes it, Claude Code may not load it"
        ],
    );
    for (i, bin) in bins.iter().enumerate() {
        let own = ctx.root.join(format!("claude-own-{i}"));
        claude_installs(&ctx, bin, &own, &market);
        let theirs = claude_reads(&ctx, bin, &own, MARKET);
        let ours = claude_reads(&ctx, bin, &written, "berth");
        assert_eq!(
            ours,
            theirs,
            "{}: Claude Code reading berth's folder (left) against its own install (right)",
            bin.display()
        );
    }
}

/// Runs the real `codex` with `CODEX_HOME=home`; its stdout.
fn codex(ctx: &TestContext, bin: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .env("HOME", &ctx.home)
        .env("CODEX_HOME", home)
        .current_dir(&ctx.work)
        .output()
        .expect("run codex");
    assert!(
        out.status.success(),
        "codex {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What Codex reads from home `home`, in two calls: the MCP servers it starts (`mcp list`),
/// and the skills it offers the model (`debug prompt-input`), each `PLUGIN:SKILL`.
fn codex_reads(ctx: &TestContext, bin: &Path, home: &Path) -> (Vec<String>, Vec<String>) {
    let listed: Value =
        serde_json::from_str(&codex(ctx, bin, home, &["mcp", "list", "--json"])).expect("JSON");
    let mut servers: Vec<String> = listed
        .as_array()
        .expect("servers")
        .iter()
        .map(|s| {
            let mut transport = s["transport"].clone();
            // Where each install keeps a plugin differs; the server does not.
            if let Some(command) = transport["command"].as_str() {
                transport["command"] = Value::from(command.rsplit('/').next().unwrap_or(command));
            }
            format!("{} {} {transport}", s["name"], s["enabled"])
        })
        .collect();
    servers.sort();
    let prompt: Value =
        serde_json::from_str(&codex(ctx, bin, home, &["debug", "prompt-input"])).expect("JSON");
    let mut skills = Vec::new();
    for item in prompt.as_array().expect("items") {
        for part in item["content"].as_array().into_iter().flatten() {
            let text = part["text"].as_str().unwrap_or_default();
            if !text.contains("<skills_instructions>") {
                continue;
            }
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("- ") else {
                    continue;
                };
                let Some((name, _)) = rest.split_once(": ") else {
                    continue;
                };
                if plugins().iter().any(|p| name.starts_with(&format!("{p}:"))) {
                    skills.push(rest.split(" (file: ").next().unwrap_or(rest).to_owned());
                }
            }
        }
    }
    skills.sort();
    (servers, skills)
}

/// Codex's own install of every fixture plugin in home `home` (`plugin marketplace add`,
/// `plugin add`).
fn codex_installs(ctx: &TestContext, bin: &Path, home: &Path, market: &Path) {
    std::fs::create_dir_all(home).expect("mkdir");
    let market = market.to_str().expect("utf-8");
    codex(ctx, bin, home, &["plugin", "marketplace", "add", market]);
    for name in plugins() {
        codex(
            ctx,
            bin,
            home,
            &["plugin", "add", &format!("{name}@{MARKET}")],
        );
    }
}

#[test]
fn codex_reads_berths_home_as_its_own_install() {
    let bins = codex_bins();
    if bins.is_empty() {
        return;
    }
    let ctx = TestContext::new();
    let market = locked_fixture(&ctx);
    let written = ctx.root.join("codex-berth");
    let warnings = materialize(&ctx, "codex", &written);
    for (i, bin) in bins.iter().enumerate() {
        let own = ctx.root.join(format!("codex-own-{i}"));
        codex_installs(&ctx, bin, &own, &market);
        let (own_servers, own_skills) = codex_reads(&ctx, bin, &own);
        let (servers, skills) = codex_reads(&ctx, bin, &written);
        let at = bin.display();
        assert_eq!(
            servers, own_servers,
            "{at}: MCP servers: berth's home (left), Codex's own (right)"
        );
        assert_eq!(
            skills, own_skills,
            "{at}: skills: berth's home (left), Codex's own (right)"
        );
        // Codex makes skills of some commands only: a lone `{{` is text; `@NOTES.md`
        // refers to a file, and the checklist's skill would be over 4,000 bytes.
        let skill = |c: &str| {
            own_skills
                .iter()
                .any(|s| s.starts_with(&format!("commands-only:source-command-{c}:")))
        };
        assert!(
            skill("rollback") && skill("braces"),
            "{at}: {own_skills:#?}"
        );
        assert!(
            !skill("refers") && !skill("checklist") && !skill("deploy"),
            "{at}: {own_skills:#?}"
        );
    }
    // What Codex's own install does not run either is said.
    for (plugin, what) in [
        ("commands-only", "`checklist`, `deploy`, `refers`"),
        ("no-manifest", "`note`"),
        ("inline", "LSP servers"),
        ("hybrid", "LSP servers"),
    ] {
        assert!(
            warned(&warnings, plugin, what),
            "{plugin}: {what} in {warnings:#?}"
        );
    }
}

/// `gemini extensions list --output-format json` with `HOME=home`: every extension as
/// Gemini CLI loads it (its MCP servers, skills, hooks, agents and policy rules), by name.
fn gemini_reads(ctx: &TestContext, bin: &Path, home: &Path) -> BTreeMap<String, Value> {
    let out = Command::new(bin)
        .args(["extensions", "list", "--output-format", "json"])
        .env("HOME", home)
        .current_dir(&ctx.work)
        .output()
        .expect("run gemini");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    // The list is the one JSON array of the output, whichever stream it went to.
    let start = text.find("\n[").map_or(0, |i| i + 1);
    let listed: Value = serde_json::Deserializer::from_str(&text[start..])
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("a JSON list in {text}"));
    listed
        .as_array()
        .expect("extensions")
        .iter()
        .map(|e| (e["name"].as_str().expect("a name").to_owned(), e.clone()))
        .collect()
}

/// The names of `extension[key]`'s items (skills, agents), or of its keys (MCP servers,
/// hook events), sorted.
fn names(extension: &Value, key: &str) -> BTreeSet<String> {
    match &extension[key] {
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i["name"].as_str().map(str::to_owned))
            .collect(),
        Value::Object(map) => map.keys().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

#[test]
fn gemini_cli_reads_what_claude_code_installs_or_berth_warns() {
    // Gemini CLI installs no Claude Code plugin of its own (`extensions install` wants a
    // `gemini-extension.json`): the reference is Claude Code's install of the same plugins.
    let (Some(gemini), Some(claude_code)) = (gemini_bin(), claude_bin()) else {
        require_or_skip("BERTH_GEMINI and BERTH_CLAUDE", "see .ci/run");
        return;
    };
    let ctx = TestContext::new();
    let market = locked_fixture(&ctx);
    let own = ctx.root.join("claude-own");
    claude_installs(&ctx, &claude_code, &own, &market);
    let reference = claude_reads(&ctx, &claude_code, &own, MARKET);
    let home = ctx.root.join("gemini-home");
    let warnings = materialize(&ctx, "gemini", &home.join(".gemini"));
    let read = gemini_reads(&ctx, &gemini, &home);
    for (name, theirs) in &reference {
        let ours = &read[name];
        let list = |kind: &str| -> BTreeSet<String> {
            theirs.get(kind).into_iter().flatten().cloned().collect()
        };
        // Claude Code counts commands among skills; Gemini CLI reads them as prompts. Its
        // `plugin details` leaves out the commands a marketplace entry names (it loads
        // them in a session): those are the only extra ones allowed.
        let commands: BTreeSet<String> =
            common::list_dir(&home.join(".gemini/extensions").join(name).join("commands"))
                .iter()
                .filter_map(|f| f.strip_suffix(".toml").map(str::to_owned))
                .collect();
        let expected = list("Skills");
        let got: BTreeSet<String> = names(ours, "skills").union(&commands).cloned().collect();
        let named_by_entry = |c: &String| {
            let lock = ctx.lock_text();
            lock.contains(&format!("{c}.md")) && commands.contains(c)
        };
        assert!(
            got.is_superset(&expected) && got.difference(&expected).all(named_by_entry),
            "plugin `{name}`: skills and commands, Gemini CLI reading berth's {got:?}, Claude Code's install {expected:?}"
        );
        assert_eq!(
            names(ours, "mcpServers"),
            list("MCP servers"),
            "plugin `{name}`: MCP servers"
        );
        // Gemini CLI 0.61.0 loads an extension's agents: the same ones.
        let agents: BTreeSet<String> = list("Agents")
            .iter()
            .map(|a| a.rsplit(':').next().unwrap_or(a).to_owned())
            .collect();
        assert_eq!(names(ours, "agents"), agents, "plugin `{name}`: agents");
        if !list("Hooks").is_empty() {
            assert!(
                !names(ours, "hooks").is_empty() || warned(&warnings, name, "hook"),
                "plugin `{name}`: its hooks, unwritten and unwarned in {warnings:#?}"
            );
        }
        if !list("LSP servers").is_empty() {
            assert!(warned(&warnings, name, "LSP servers"), "{warnings:#?}");
        }
    }
    gemini_forms(&read, &warnings);
}

/// What Gemini CLI reads of the hooks, agents and policies of the fixture's plugins and
/// of the server two of them define differently, and what berth says of the rest.
fn gemini_forms(read: &BTreeMap<String, Value>, warnings: &[String]) {
    // Hooks under Gemini CLI's event names, tool names in matchers as Gemini CLI's own.
    let hybrid = &read["hybrid"];
    assert_eq!(
        names(hybrid, "hooks"),
        BTreeSet::from(["AfterTool".to_owned(), "SessionStart".to_owned()]),
        "{hybrid}"
    );
    assert_eq!(
        hybrid["hooks"]["AfterTool"][0]["matcher"], "replace",
        "{hybrid}"
    );
    assert_eq!(
        hybrid["hooks"]["SessionStart"][0]["hooks"][0]["timeout"],
        5000
    );
    assert_eq!(
        read["inline"]["hooks"]["BeforeTool"][0]["matcher"],
        "run_shell_command"
    );
    // A hook with no Gemini CLI event, and one that is no command, are said one by one.
    assert!(
        warned(
            warnings,
            "hybrid",
            "`SubagentStop` hook `echo sub-agent done`"
        ),
        "{warnings:#?}"
    );
    assert!(
        warned(warnings, "hybrid", "its type is `prompt`"),
        "{warnings:#?}"
    );
    // An agent keeps the tools Gemini CLI has; the others are said.
    let planner = &hybrid["agents"][0];
    assert_eq!(
        planner["toolConfig"]["tools"],
        serde_json::json!(["read_file", "grep_search"]),
        "{planner}"
    );
    assert!(
        warned(warnings, "hybrid", "without its tool `NotebookEdit`"),
        "{warnings:#?}"
    );
    // The plugin's own Gemini CLI policy is read as the extension's.
    let rules = hybrid["rules"].as_array().expect("rules");
    assert!(
        rules
            .iter()
            .any(|r| r["toolName"] == "web_fetch" && r["decision"] == "deny"),
        "{hybrid}"
    );
    // Claude Code refuses `folder-agents`; Gemini CLI reads its agent.
    assert_eq!(
        names(&read["folder-agents"], "agents"),
        BTreeSet::from(["designer".to_owned()])
    );
    // Two extensions' servers of one name: said when defined differently, not when alike.
    let shared: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("both have an MCP server"))
        .collect();
    assert_eq!(shared.len(), 1, "{warnings:#?}");
    assert!(
        shared[0].starts_with(
            "plugins `shared-a` and `shared-b` both have an MCP server `shared-server`"
        ),
        "{shared:?}"
    );
}

/// Loads plugins with the real OpenHands SDK: `own` resolves each `NAME@entry-forms` from
/// the registered marketplace as the SDK does itself; `berth` loads the folders given.
const SDK_READS: &str = r#"
import json, sys
from pathlib import Path
from openhands.sdk.marketplace import MarketplaceRegistry
from openhands.sdk.marketplace.registration import MarketplaceRegistration
from openhands.sdk.plugin import Plugin

def inventory(p):
    mcp = p.mcp_config or {}
    servers = mcp.get("mcpServers", mcp)
    hooks = p.hooks.model_dump(mode="json", by_alias=True) if p.hooks else {}
    hooks = hooks.get("hooks", hooks)
    return {
        "skills": sorted(s.name for s in p.skills),
        "commands": sorted(c.name for c in p.commands),
        "mcp": sorted(servers),
        "agents": sorted(a.name for a in p.agents),
        "hooks": sorted(e for e, m in hooks.items() if m),
    }

mode, market, *rest = sys.argv[1:]
out = {}
if mode == "own":
    registry = MarketplaceRegistry([MarketplaceRegistration(name="entry-forms", source=market)])
    for name in rest:
        source = registry.resolve_plugin(f"{name}@entry-forms")
        path = Path(source.source) / (source.repo_path or "")
        out[name] = inventory(Plugin.load(path))
else:
    for folder in rest:
        plugin = Plugin.load(folder)
        out[plugin.name] = inventory(plugin)
print(json.dumps(out, sort_keys=True))
"#;

fn sdk_reads(ctx: &TestContext, python: &Path, args: &[String]) -> Value {
    let out = sdk_command(ctx, python, SDK_READS)
        .args(args)
        .output()
        .expect("run the SDK");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn the_openhands_sdk_reads_berths_agent_plugins_as_its_own_marketplace_load() {
    let Some(python) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see .ci/run");
        return;
    };
    let ctx = TestContext::new();
    let market = locked_fixture(&ctx);
    let dir = ctx.root.join("agent-plugins");
    let warnings = materialize(&ctx, "agent-plugins", &dir);
    let names = plugins();
    let mut args = vec!["own".to_owned(), market.display().to_string()];
    args.extend(names.iter().cloned());
    let own = sdk_reads(&ctx, &python, &args);
    let mut args = vec!["berth".to_owned(), String::new()];
    args.extend(names.iter().map(|n| dir.join(n).display().to_string()));
    let read = sdk_reads(&ctx, &python, &args);
    let mut differ = Vec::new();
    for name in &names {
        if read[name] != own[name] {
            differ.push(name.clone());
            assert!(
                warned(&warnings, name, "marketplace entry defines"),
                "plugin `{name}`: the SDK reading berth's folder {} against its own load {}, unwarned: {warnings:#?}",
                read[name],
                own[name]
            );
        }
    }
    // The plugins whose entry defines components differ, as warned; all others are equal.
    assert_eq!(
        differ,
        ["document-skills", "subset", "inline", "more-documents"],
        "{read} {own}"
    );
    assert!(warned(&warnings, "inline", "LSP servers"), "{warnings:#?}");
}
