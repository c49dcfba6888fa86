//! GitHub Copilot CLI's own plugin files. Beside Claude Code's layout, Copilot CLI 1.0.102
//! reads a manifest at `.github/plugin/plugin.json` (before `.claude-plugin/`), MCP servers
//! in `.github/mcp.json`, LSP servers in `lsp.json` and `.github/lsp.json`, and (its
//! documentation says) hooks in a root `hooks.json`. The review reads each: under a policy
//! that denies every capability `lock` refuses every plugin, naming what it runs and where;
//! and the real Copilot CLI (`BERTH_COPILOT`), given the same plugins as a marketplace
//! folder, loads their servers, so what the review reads is what Copilot runs.

use serde_json::{Value, json};

use super::fail_closed::DENY_EVERYTHING;
use super::review::{json_of, manifest, plugin, policy, write};
use crate::common::{TestContext, require_or_skip};
use crate::copilot_opencode::{copilot, copilot_bin};

/// Each plugin, the file only Copilot CLI reads it from, that file, and what the refusal
/// says of it.
fn plugins() -> [(&'static str, &'static str, Value, &'static str); 5] {
    let server = |name: &str| json!({ name: {"command": "sh", "args": ["-c", "true"]} });
    let lsp = |name: &str| json!({"lspServers": { name: {"command": "sh", "fileExtensions": {".x": "x"}}}});
    [
        (
            "gh-manifest",
            ".github/plugin/plugin.json",
            json!({"name": "gh-manifest", "version": "1.0.0", "mcpServers": server("gh-manifest-server")}),
            "MCP server `gh-manifest-server` (`sh -c true`)",
        ),
        (
            "gh-mcp",
            ".github/mcp.json",
            json!({ "mcpServers": server("gh-mcp-server") }),
            "MCP server `gh-mcp-server` (`sh -c true`)",
        ),
        (
            "root-lsp",
            "lsp.json",
            lsp("root-lsp-server"),
            "LSP server `root-lsp-server`",
        ),
        (
            "gh-lsp",
            ".github/lsp.json",
            lsp("gh-lsp-server"),
            "LSP server `gh-lsp-server`",
        ),
        (
            "root-hooks",
            "hooks.json",
            json!({"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "true"}]}}),
            "`hooks.json`: `bash`, a key of a hook",
        ),
    ]
}

/// The five plugins in `work/plugins`, each with a Claude Code manifest that names nothing,
/// locked by the project and listed by a marketplace at `work`.
fn project(ctx: &TestContext) {
    let mut entries = Vec::new();
    for (name, file, value, _) in plugins() {
        let dir = plugin(ctx, name);
        write(&dir, file, &value.to_string());
        entries.push(json!({"name": name, "source": format!("./plugins/{name}")}));
    }
    let names: Vec<&str> = plugins().iter().map(|p| p.0).collect();
    manifest(ctx, &names);
    let catalog = json!({"name": "copilot-files", "owner": {"name": "o"}, "plugins": entries});
    write(
        &ctx.work,
        ".claude-plugin/marketplace.json",
        &catalog.to_string(),
    );
}

#[test]
fn copilots_own_files_are_reviewed() {
    let ctx = TestContext::new();
    project(&ctx);
    ctx.ok(&["plugins", "lock", "--no-observe"]);
    let shown = json_of(&ctx.ok(&["plugins", "show", "--json"]).stdout);
    for (name, ..) in plugins() {
        let review = &shown["review"][name];
        assert_eq!(review["runs_code"], true, "{name}: {review}");
        assert!(
            !review["capabilities"]
                .as_array()
                .expect("a list")
                .is_empty(),
            "{name}: {review}"
        );
    }
    policy(&ctx, DENY_EVERYTHING);
    let before = std::fs::read(ctx.lock_path()).expect("lock");
    let run = ctx.run(&["plugins", "lock"]);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(run.code, 1, "{said}");
    assert_eq!(std::fs::read(ctx.lock_path()).expect("lock"), before);
    for (name, _, _, needle) in plugins() {
        let named = said
            .lines()
            .any(|line| line.contains(&format!("plugin `{name}`")) && line.contains(needle));
        assert!(named, "{name}: {needle:?} not in {said}");
    }
}

#[test]
fn copilot_loads_the_servers_of_those_files() {
    let Some(bin) = copilot_bin() else {
        require_or_skip("BERTH_COPILOT", "see .ci/run");
        return;
    };
    let ctx = TestContext::new();
    project(&ctx);
    let home = ctx.root.join("copilot-home");
    let market = ctx.work.to_str().expect("utf-8");
    copilot(&ctx, &bin, &home, &["plugin", "marketplace", "add", market]);
    for (name, ..) in plugins() {
        copilot(
            &ctx,
            &bin,
            &home,
            &["plugin", "install", &format!("{name}@copilot-files")],
        );
    }
    let servers = json_of(&copilot(&ctx, &bin, &home, &["mcp", "list", "--json"]));
    for (server, plugin) in [
        ("gh-manifest-server", "gh-manifest"),
        ("gh-mcp-server", "gh-mcp"),
    ] {
        assert_eq!(
            servers["mcpServers"][server]["sourcePlugin"], plugin,
            "{server}: {servers:#}"
        );
    }
    let lsp = json_of(&copilot(&ctx, &bin, &home, &["lsp", "list", "--json"]));
    let loaded: Vec<(&str, &str)> = lsp
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| {
            let field = |k: &str| s[k].as_str().expect("a string");
            (field("id"), field("sourcePlugin"))
        })
        .collect();
    for expected in [("root-lsp-server", "root-lsp"), ("gh-lsp-server", "gh-lsp")] {
        assert!(loaded.contains(&expected), "{expected:?} not in {lsp:#}");
    }
}

#[test]
fn a_folder_holding_only_copilots_files_is_a_plugin() {
    for (_, file, value, _) in plugins() {
        let ctx = TestContext::new();
        write(&ctx.work.join("only"), file, &value.to_string());
        ctx.write_manifest("[[plugin]]\nsource = \"./only\"\n");
        ctx.ok(&["plugins", "lock", "--no-observe"]);
    }
}
