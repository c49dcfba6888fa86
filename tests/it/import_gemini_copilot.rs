//! `berth plugins import --from gemini|copilot`: the real client's own install (Gemini CLI
//! `BERTH_GEMINI`, Copilot CLI `BERTH_COPILOT`, offline) becomes a manifest and a lock, and
//! `materialize` of that lock into a fresh home gives the same client the same plugins;
//! what the client installed from git is pinned to the commit it installed, not a newer one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{GitRepo, TestContext, require_or_skip};
use crate::import_clients::{contents, folder, market_of};
use crate::materialize::gemini_bin;

/// A Gemini CLI extension `name` in `dir`: a manifest with an MCP server run from the
/// extension, a skill saying `says`, a command and a context file.
fn extension(dir: &Path, name: &str, says: &str) {
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "gemini-extension.json",
        &format!(
            "{{\"name\": \"{name}\", \"version\": \"1.2.0\", \"mcpServers\": {{\"{name}-srv\": \
             {{\"command\": \"node\", \"args\": [\"${{extensionPath}}/srv.js\"]}}}}}}\n"
        ),
    );
    write("srv.js", "console.log('serving');\n");
    write(
        &format!("skills/{name}-skill/SKILL.md"),
        &format!("---\nname: {name}-skill\ndescription: {says}\n---\nSay {says}.\n"),
    );
    write(
        &format!("commands/{name}.toml"),
        &format!("description = \"run {name}\"\nprompt = \"Do {name} {{{{args}}}}\"\n"),
    );
    write("GEMINI.md", &format!("# About {name}\n"));
}

/// Runs the real `gemini` with `HOME=home` in `home` (where its rules for the user apply),
/// answering yes to its questions; its output.
fn gemini(bin: &Path, home: &Path, args: &[&str]) -> String {
    let mut child = Command::new(bin)
        .args(args)
        .env("HOME", home)
        .env_remove("GEMINI_CLI_HOME")
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gemini");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = stdin.write_all(b"y\ny\n");
    }
    let out = child.wait_with_output().expect("gemini ran");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gemini {args:?}: {text}");
    text
}

/// What Gemini CLI loads from `home` for the user: each active extension by name, with
/// its version, MCP servers, context files, skills and agents, its folder written `<root>`.
fn gemini_view(bin: &Path, home: &Path) -> BTreeMap<String, Value> {
    let text = gemini(
        bin,
        home,
        &["extensions", "list", "--output-format", "json"],
    );
    let start = text.find('[').expect("a JSON list");
    let listed: Value = serde_json::Deserializer::from_str(&text[start..])
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("a JSON list in {text}"));
    let mut out = BTreeMap::new();
    for extension in listed.as_array().expect("extensions") {
        let name = extension["name"].as_str().expect("a name").to_owned();
        if extension["isActive"] != true {
            out.insert(name, Value::from("inactive"));
            continue;
        }
        let root = extension["path"].as_str().expect("a path");
        let mut kept = serde_json::json!({
            "version": extension["version"],
            "mcpServers": extension["mcpServers"],
            "contextFiles": extension["contextFiles"],
            "skills": extension["skills"],
            "agents": extension["agents"],
        });
        kept = serde_json::from_str(&kept.to_string().replace(root, "<root>")).expect("JSON");
        out.insert(name, kept);
    }
    out
}

#[test]
fn gemini_clis_own_install_round_trips_through_import_and_materialize() {
    let Some(bin) = gemini_bin() else {
        require_or_skip(
            "BERTH_GEMINI",
            "point it at a `gemini` from `npm install @google/gemini-cli` (.ci/run does)",
        );
        return;
    };
    let ctx = TestContext::new();
    // One extension from git (over HTTP, as from a forge), one copied from a folder, one
    // linked and then disabled for the user.
    let gamma = ctx.repo("gamma");
    extension(&gamma.path, "gamma", "says gamma");
    gamma.commit("an extension");
    let installed = gamma.head();
    let server = ctx.serve_github_over_http();
    let sources = ctx.root.join("sources");
    extension(&sources.join("alpha"), "alpha", "says alpha");
    extension(&sources.join("beta"), "beta", "says beta");
    let home = ctx.root.join("gemini-own");
    std::fs::create_dir_all(&home).expect("mkdir");
    let url = format!("{}/gamma.git", server.url());
    gemini(&bin, &home, &["extensions", "install", &url, "--consent"]);
    let alpha = sources.join("alpha");
    let beta = sources.join("beta");
    for (verb, source) in [("install", &alpha), ("link", &beta)] {
        let source = source.to_str().expect("UTF-8");
        gemini(&bin, &home, &["extensions", verb, source, "--consent"]);
    }
    gemini(&bin, &home, &["extensions", "disable", "beta"]);
    // The extension moves on upstream after it was installed.
    extension(&gamma.path, "gamma", "says a newer gamma");
    gamma.commit("a newer gamma");
    let dir = home.join(".gemini");
    let before = contents(&dir);

    let run = ctx.ok(&[
        "plugins",
        "import",
        "--from",
        "gemini",
        dir.to_str().expect("UTF-8"),
    ]);
    assert!(run.stderr.contains("Imported 2 plugins"), "{}", run.stderr);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("the manifest");
    assert!(
        manifest.contains(&format!("source = \"git+{url}\"\nref = \"{installed}\"\n")),
        "{manifest}"
    );
    assert!(
        manifest.contains(&format!("source = \"{}\"", alpha.display())),
        "{manifest}"
    );
    assert!(
        manifest.contains("# `beta` is installed but disabled there; left out."),
        "{manifest}"
    );
    assert!(
        run.stderr.contains("locked from that folder as it is now"),
        "{}",
        run.stderr
    );
    assert_eq!(
        contents(&dir),
        before,
        "Gemini CLI's folder is left as it was"
    );

    ctx.ok(&["plugins", "sync"]);
    let fresh = ctx.root.join("gemini-fresh");
    let fresh_dir = fresh.join(".gemini");
    ctx.ok(&["materialize", "gemini", fresh_dir.to_str().expect("UTF-8")]);
    let mut theirs = gemini_view(&bin, &home);
    assert_eq!(theirs.remove("beta"), Some(Value::from("inactive")));
    assert_eq!(theirs.keys().collect::<Vec<_>>(), ["alpha", "gamma"]);
    assert!(
        theirs["gamma"].to_string().contains("says gamma"),
        "Gemini CLI's own view was read, at the commit it installed: {theirs:#?}"
    );
    assert!(theirs["alpha"]["mcpServers"]["alpha-srv"].is_object());
    assert_eq!(gemini_view(&bin, &fresh), theirs);
}

/// Runs the real `copilot` with `COPILOT_HOME=home` and the context's cache folder (where
/// Copilot clones a git marketplace, and finds its unpacked self through a link); stdout.
fn copilot(ctx: &TestContext, bin: &Path, home: &Path, args: &[&str]) -> String {
    let cache = ctx.home.join(".cache");
    let unpacked = cache.join("copilot/pkg");
    if !unpacked.exists() {
        let install = bin
            .ancestors()
            .nth(3)
            .expect("DIR/node_modules/.bin/copilot");
        std::fs::create_dir_all(cache.join("copilot")).expect("mkdir");
        std::os::unix::fs::symlink(install.join("xdg-cache/copilot/pkg"), &unpacked).expect("link");
    }
    let out = Command::new(bin)
        .args(args)
        .env("HOME", &ctx.home)
        .env("COPILOT_HOME", home)
        .env("XDG_CACHE_HOME", &cache)
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

/// What Copilot offers from `home`: each enabled plugin's name and version, the skills
/// of plugins (commands among them) and the MCP servers plugins start.
fn copilot_view(ctx: &TestContext, bin: &Path, home: &Path) -> Vec<String> {
    let json = |args: &[&str]| -> Value {
        serde_json::from_str(&copilot(ctx, bin, home, args)).expect("JSON")
    };
    let mut out = Vec::new();
    for plugin in json(&["plugin", "list", "--json"])
        .as_array()
        .expect("a list")
    {
        if plugin["enabled"] == true && plugin["source"] != "builtin" {
            out.push(format!("plugin {} {}", plugin["name"], plugin["version"]));
        }
    }
    for skill in json(&["skill", "list", "--json"])
        .as_array()
        .expect("a list")
    {
        if skill["source"] == "plugin" {
            out.push(format!("skill {} {}", skill["name"], skill["description"]));
        }
    }
    let servers = json(&["mcp", "list", "--json"]);
    for (name, server) in servers["mcpServers"].as_object().into_iter().flatten() {
        if let Some(plugin) = server["sourcePlugin"].as_str() {
            out.push(format!("server {plugin} {name}"));
        }
    }
    out.sort();
    out
}

fn copilot_bin() -> Option<PathBuf> {
    std::env::var_os("BERTH_COPILOT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

#[test]
fn copilots_own_install_round_trips_through_import_and_materialize() {
    let Some(bin) = copilot_bin() else {
        require_or_skip(
            "BERTH_COPILOT",
            "point it at a `copilot` from `npm install @github/copilot` (.ci/run does)",
        );
        return;
    };
    let ctx = TestContext::new();
    // A folder marketplace (read in place) and a git one over HTTP (cloned, copied).
    let acme = market_of(&ctx, "acme", &[("hello", "1.0.0"), ("bye", "2.1.0")]);
    let shop: GitRepo = market_of(&ctx, "shop", &[("tool", "3.0.0")]);
    let installed = shop.head();
    let server = ctx.serve_github_over_http();
    let own = ctx.root.join("copilot-own");
    let url = format!("{}/shop.git", server.url());
    for args in [
        vec!["plugin", "marketplace", "add", folder(&acme)],
        vec!["plugin", "marketplace", "add", &url],
        vec!["plugin", "install", "hello@acme"],
        vec!["plugin", "install", "bye@acme"],
        vec!["plugin", "install", "tool@shop"],
        vec!["plugin", "disable", "bye@acme"],
    ] {
        copilot(&ctx, &bin, &own, &args);
    }
    // The git marketplace moves on after the install.
    shop.write(
        "plugins/tool/skills/tool-skill/SKILL.md",
        "---\nname: tool-skill\ndescription: newer\n---\nNewer.\n",
    );
    shop.commit("a newer tool");
    let before = contents(&own);

    let run = ctx.ok(&[
        "plugins",
        "import",
        "--from",
        "copilot",
        own.to_str().expect("UTF-8"),
    ]);
    assert!(run.stderr.contains("Imported 2 plugins"), "{}", run.stderr);
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("the manifest");
    for needle in [
        "source = \"hello@acme\"".to_owned(),
        "source = \"tool@shop\"".to_owned(),
        format!("source = \"git+{url}\"\nref = \"{installed}\"\n"),
        "# `bye@acme` is installed but disabled there; left out.".to_owned(),
    ] {
        assert!(manifest.contains(&needle), "{needle} in {manifest}");
    }
    assert_eq!(contents(&own), before, "Copilot's folder is left as it was");

    ctx.ok(&["plugins", "sync"]);
    let fresh = ctx.root.join("copilot-fresh");
    ctx.ok(&["materialize", "copilot", fresh.to_str().expect("UTF-8")]);
    let theirs = copilot_view(&ctx, &bin, &own);
    assert!(
        theirs.contains(&"skill \"tool:tool-skill\" \"says tool\"".to_owned())
            || theirs
                .iter()
                .any(|l| l.contains("tool-skill") && l.contains("says tool")),
        "Copilot's own view was read, at the commit it installed: {theirs:#?}"
    );
    assert!(
        theirs.iter().any(|l| l == "plugin \"hello\" \"1.0.0\""),
        "{theirs:#?}"
    );
    assert!(!theirs.iter().any(|l| l.contains("bye")), "{theirs:#?}");
    assert_eq!(copilot_view(&ctx, &bin, &fresh), theirs);
}
