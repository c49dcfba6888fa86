//! The two harnesses people moved to (issue #56), each read by its real client from npm,
//! offline, on the entry forms of `fixtures/marketplaces/entry-forms`: GitHub Copilot CLI
//! (`BERTH_COPILOT`) reading berth's home folder against its own `plugin marketplace add`
//! and `plugin install` of the same plugins, and OpenCode (`BERTH_OPENCODE`) reading
//! berth's configuration folder against Claude Code's install (OpenCode installs no
//! Claude Code plugin of its own), as Gemini CLI is judged.

use crate::common;
use crate::harness_forms::{
    Inventory, MARKET, REFUSED_BY_CLAUDE, claude_installs, claude_reads, locked_fixture,
    materialize, plugins, warned,
};
use crate::materialize::claude_bin;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TestContext, require_or_skip};
use serde_json::Value;

pub(crate) fn copilot_bin() -> Option<PathBuf> {
    std::env::var_os("BERTH_COPILOT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

fn opencode_bin() -> Option<PathBuf> {
    std::env::var_os("BERTH_OPENCODE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Runs the real `copilot` with `COPILOT_HOME=home`; its stdout. Copilot unpacks itself
/// into its cache folder on a first run: the one beside its npm install (`.ci/run` fills
/// it), so each call does not take seconds.
pub(crate) fn copilot(ctx: &TestContext, bin: &Path, home: &Path, args: &[&str]) -> String {
    let install = bin
        .ancestors()
        .nth(3)
        .expect("DIR/node_modules/.bin/copilot");
    let out = Command::new(bin)
        .args(args)
        .env("HOME", &ctx.home)
        .env("COPILOT_HOME", home)
        .env("XDG_CACHE_HOME", install.join("xdg-cache"))
        .env("COPILOT_DISABLE_TELEMETRY", "1")
        .current_dir(&ctx.work)
        .output()
        .expect("run copilot");
    assert!(
        out.status.success(),
        "copilot {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What Copilot reads from home `home` of the plugins of marketplace `market`: each
/// plugin's version and whether it is enabled (`plugin list`), its skills with their
/// descriptions, commands among them (`skill list`), and its MCP servers as Copilot would
/// start them (`mcp list`), the plugin's folder written `<root>`.
fn copilot_reads(ctx: &TestContext, bin: &Path, home: &Path, market: &str) -> Inventory {
    let json = |args: &[&str]| -> Value {
        serde_json::from_str(&copilot(ctx, bin, home, args)).expect("JSON")
    };
    let mut out = Inventory::new();
    for plugin in json(&["plugin", "list", "--json"])
        .as_array()
        .expect("a list")
    {
        if plugin["marketplace"] != market {
            continue;
        }
        let name = plugin["name"].as_str().expect("a name").to_owned();
        out.entry(name).or_default().insert(
            "plugin".to_owned(),
            vec![format!("{} {}", plugin["version"], plugin["enabled"])],
        );
    }
    let servers = json(&["mcp", "list", "--json"]);
    for (name, server) in servers["mcpServers"].as_object().expect("servers") {
        let Some(plugin) = server["sourcePlugin"].as_str() else {
            continue;
        };
        let root = server["env"]["COPILOT_PLUGIN_ROOT"].as_str().unwrap_or("-");
        let text = server.to_string().replace(root, "<root>");
        out.entry(plugin.to_owned())
            .or_default()
            .entry("MCP servers".to_owned())
            .or_default()
            .push(format!("{name} {text}"));
    }
    for skill in json(&["skill", "list", "--json"])
        .as_array()
        .expect("a list")
    {
        if skill["source"] != "plugin" {
            continue;
        }
        let path = skill["path"].as_str().expect("a path");
        // The plugin whose folder holds it: its catalog names it (berth's folder is
        // `berth-marketplace/NAME`; the fixture's `plugins/NAME`, or the root).
        let plugin = plugins()
            .into_iter()
            .filter(|p| out.contains_key(p))
            .find(|p| path.contains(&format!("/{p}/")))
            .unwrap_or_else(|| "document-skills".to_owned());
        out.entry(plugin)
            .or_default()
            .entry("Skills".to_owned())
            .or_default()
            .push(format!("{} {}", skill["name"], skill["description"]));
    }
    for kinds in out.values_mut() {
        kinds.values_mut().for_each(|list| list.sort());
    }
    out
}

#[test]
fn copilot_reads_berths_home_as_its_own_install() {
    let Some(bin) = copilot_bin() else {
        require_or_skip("BERTH_COPILOT", "see .ci/run");
        return;
    };
    let ctx = TestContext::new();
    let market = locked_fixture(&ctx);
    let own = ctx.root.join("copilot-own");
    let source = market.to_str().expect("utf-8");
    copilot(&ctx, &bin, &own, &["plugin", "marketplace", "add", source]);
    for name in plugins() {
        copilot(
            &ctx,
            &bin,
            &own,
            &["plugin", "install", &format!("{name}@{MARKET}")],
        );
    }
    let written = ctx.root.join("copilot-berth");
    let warnings = materialize(&ctx, "copilot", &written);
    // Copilot's own install takes one plugin per folder of a marketplace: the first of
    // the two entries naming its root. Nothing else differs.
    assert_eq!(
        warnings,
        [
            "plugin `more-documents` is not written for GitHub Copilot CLI: its marketplace entry names the same folder as plugin `document-skills`, and Copilot's own install takes one plugin per folder (the first)"
        ]
    );
    let theirs = copilot_reads(&ctx, &bin, &own, MARKET);
    let ours = copilot_reads(&ctx, &bin, &written, "berth");
    assert_eq!(theirs.len(), plugins().len() - 1, "{theirs:#?}");
    assert!(!theirs.contains_key("more-documents"), "{theirs:#?}");
    // A manifest that states no version: Copilot shows none (berth's reading of it fills
    // in `1.0.0`, as the OpenHands SDK does).
    assert_eq!(theirs["mcp-bare"]["plugin"], ["null true"], "{theirs:#?}");
    assert_eq!(
        ours, theirs,
        "Copilot reading berth's home (left) against its own install (right)"
    );
    // A second run finds everything in place.
    let again = ctx.ok(&["materialize", "copilot", written.to_str().expect("utf-8")]);
    assert!(again.stderr.contains("(0 written"), "{}", again.stderr);
}

/// Runs the real `opencode` with its configuration, data, cache and state folders under
/// `home`; its stdout.
fn opencode(ctx: &TestContext, bin: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .current_dir(&ctx.work)
        .output()
        .expect("run opencode");
    assert!(
        out.status.success(),
        "opencode {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What OpenCode reads from the configuration folder in `home`: each plugin's skills (by
/// the folder they are in), commands and agents (named `PLUGIN/NAME`), and every MCP
/// server's name.
fn opencode_reads(ctx: &TestContext, bin: &Path, home: &Path) -> (Inventory, BTreeSet<String>) {
    let config: Value =
        serde_json::from_str(&opencode(ctx, bin, home, &["debug", "config"])).expect("JSON");
    let skills: Value =
        serde_json::from_str(&opencode(ctx, bin, home, &["debug", "skill"])).expect("JSON");
    let dir = home.join(".config/opencode/skills");
    let mut out = Inventory::new();
    let mut add = |plugin: &str, kind: &str, name: &str| {
        let list = out
            .entry(plugin.to_owned())
            .or_default()
            .entry(kind.to_owned())
            .or_default();
        list.push(name.to_owned());
        list.sort();
    };
    for skill in skills.as_array().expect("skills") {
        let location = Path::new(skill["location"].as_str().expect("a location"));
        if let Ok(rel) = location.strip_prefix(&dir) {
            let plugin = rel.iter().next().expect("a plugin folder");
            add(
                &plugin.to_string_lossy(),
                "Skills",
                skill["name"].as_str().expect("a name"),
            );
        }
    }
    for (key, kind) in [("command", "Skills"), ("agent", "Agents")] {
        for name in config[key]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if let Some((plugin, name)) = name.split_once('/') {
                add(plugin, kind, name);
            }
        }
    }
    let servers = config["mcp"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, _)| name.clone())
        .collect();
    (out, servers)
}

#[test]
fn opencode_reads_what_claude_code_installs_or_berth_warns() {
    let (Some(opencode_bin), Some(claude_code)) = (opencode_bin(), claude_bin()) else {
        require_or_skip("BERTH_OPENCODE and BERTH_CLAUDE", "see .ci/run");
        return;
    };
    let ctx = TestContext::new();
    let market = locked_fixture(&ctx);
    let own = ctx.root.join("claude-own");
    claude_installs(&ctx, &claude_code, &own, &market);
    let reference = claude_reads(&ctx, &claude_code, &own, MARKET);
    let home = ctx.root.join("opencode-home");
    let config = home.join(".config/opencode");
    let warnings = materialize(&ctx, "opencode", &config);
    let (read, servers) = opencode_reads(&ctx, &opencode_bin, &home);
    let list = |map: Option<&BTreeMap<String, Vec<String>>>, kind: &str| -> BTreeSet<String> {
        map.and_then(|m| m.get(kind))
            .into_iter()
            .flatten()
            .map(|n| n.rsplit(':').next().unwrap_or(n).to_owned())
            .collect()
    };
    // `no-manifest`'s skill `notes` holds the skill `notes-android` in its folder.
    assert!(
        warned(&warnings, "no-manifest", "`notes-android`"),
        "{warnings:#?}"
    );
    let mut claude_servers = BTreeSet::new();
    // A plugin Claude Code refuses to install has no reference to be held to.
    for name in plugins()
        .into_iter()
        .filter(|name| !REFUSED_BY_CLAUDE.contains(&name.as_str()))
    {
        let (theirs, ours) = (reference.get(&name), read.get(&name));
        // Claude Code's `plugin details` leaves out the commands a marketplace entry names
        // (it loads them in a session): those are the only extra ones allowed.
        let lock = ctx.lock_text();
        let named_by_entry = |c: &String| lock.contains(&format!("{c}.md"));
        for kind in ["Skills", "Agents"] {
            let (expected, got) = (list(theirs, kind), list(ours, kind));
            for missing in expected.difference(&got) {
                assert!(
                    warned(&warnings, &name, &format!("`{missing}`")),
                    "plugin `{name}`: {kind} `{missing}` unwarned: OpenCode reads {got:?}, Claude Code {expected:?}\n{warnings:#?}"
                );
            }
            // More than Claude Code reads: named by the entry, or a skill inside another
            // skill's folder, which OpenCode finds and berth warns of.
            for extra in got.difference(&expected) {
                assert!(
                    named_by_entry(extra) || warned(&warnings, &name, &format!("`{extra}`")),
                    "plugin `{name}`: {kind} `{extra}` unwarned: OpenCode reads {got:?}, Claude Code {expected:?}\n{warnings:#?}"
                );
            }
        }
        for server in list(theirs, "MCP servers") {
            if !servers.contains(&server) {
                assert!(
                    warned(&warnings, &name, &format!("MCP server `{server}`")),
                    "plugin `{name}`: MCP server `{server}` unwarned in {warnings:#?}"
                );
            }
            claude_servers.insert(server);
        }
        for (kind, what) in [("Hooks", "hook"), ("LSP servers", "LSP servers")] {
            if !list(theirs, kind).is_empty() {
                assert!(
                    warned(&warnings, &name, what),
                    "plugin `{name}`: its {kind} unwarned in {warnings:#?}"
                );
            }
        }
    }
    assert!(
        servers.is_subset(&claude_servers) && !servers.is_empty(),
        "OpenCode's servers {servers:?}, Claude Code's {claude_servers:?}"
    );
    // A second run finds everything in place; `--check` finds no drift.
    let d = config.to_str().expect("utf-8");
    let again = ctx.ok(&["materialize", "opencode", d]);
    assert!(again.stderr.contains("(0 written"), "{}", again.stderr);
    ctx.ok(&["materialize", "opencode", d, "--check"]);
}
