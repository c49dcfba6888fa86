//! `berth.openhands` against the real OpenHands SDK (`openhands-sdk` 1.58.2 from PyPI, in
//! the Python `BERTH_SDK_PYTHON` names; `.ci/run` makes that venv): `plugin_sources(lock)`
//! gives the SDK's own `PluginSource`s pinned to the locked commits, and the SDK's own
//! `Plugin.fetch` then gets exactly the locked content even after the branch moved.
//!
//! `berth.openhands` builds the set in-process with berth's extension (`berth._native`,
//! built here and named by `BERTH_NATIVE`) in every test; the comparison with the SDK's own
//! loader also runs with the binary instead (`BERTH_NATIVE=0`), and both must match it.
//!
//! The SDK imports LiteLLM, which fetches a price list from the internet unless told not
//! to: every run here sets `LITELLM_LOCAL_MODEL_COST_MAP`, so nothing leaves 127.0.0.1.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{FileServer, ServeProcess, TestContext, berth_bin, require_or_skip};

pub(crate) fn sdk_python() -> Option<PathBuf> {
    std::env::var_os("BERTH_SDK_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Runs `script` (Python) with the SDK's interpreter, this checkout's `berth` module, its
/// extension and the berth binary under test; returns stdout, failing the test on a
/// non-zero exit.
fn python(ctx: &TestContext, python: &Path, script: &str, args: &[&str]) -> String {
    python_with(ctx, python, Runtime::InProcess, script, args)
}

/// How `berth.openhands` builds a plugin set.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Runtime {
    /// In the Python process, with the extension `berth._native`.
    InProcess,
    /// By running the berth binary (`BERTH_NATIVE=0`).
    Binary,
}

pub(crate) fn python_with(
    ctx: &TestContext,
    python: &Path,
    runtime: Runtime,
    script: &str,
    args: &[&str],
) -> String {
    let native = match runtime {
        Runtime::InProcess => common::native::native_extension().into_os_string(),
        Runtime::Binary => "0".into(),
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .join("python");
    let out = Command::new(python)
        .current_dir(&ctx.work)
        .env("PYTHONPATH", repo)
        .env("BERTH_BIN", berth_bin())
        .env("BERTH_NATIVE", native)
        .env("BERTH_STORE", &ctx.store)
        .env("HOME", &ctx.home)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("OPENHANDS_SUPPRESS_BANNER", "1")
        .env("NO_PROXY", "127.0.0.1,localhost,::1")
        .args(["-c", script])
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const SOURCES: &str = r#"
import json, sys
from berth.openhands import plugin_sources
from openhands.sdk.plugin import Plugin, PluginSource
sources = plugin_sources(sys.argv[1])
assert all(type(s) is PluginSource for s in sources), sources
loaded = []
for s in sources:
    path = Plugin.fetch(source=s.source, ref=s.ref, repo_path=s.repo_path)
    plugin = Plugin.load(path)
    loaded.append({"name": plugin.name, "skills": sorted(k.content.strip() for k in plugin.skills)})
print(json.dumps({"sources": [s.model_dump() for s in sources], "loaded": loaded}))
"#;

#[test]
fn plugin_sources_pin_the_sdk_to_the_locked_commits() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip(
            "BERTH_SDK_PYTHON",
            "point it at a Python 3.12 with openhands-sdk==1.58.2 (fixtures/conformance/README.md says how)",
        );
        return;
    };
    let ctx = TestContext::new();
    let tools = ctx.repo("tools");
    tools.write(
        "plugins/alpha/.claude-plugin/plugin.json",
        r#"{"name": "alpha", "version": "1.0.0"}"#,
    );
    tools.write(
        "plugins/alpha/skills/greet/SKILL.md",
        "---\nname: greet\ndescription: greets\n---\nlocked body\n",
    );
    let locked = tools.commit("alpha");
    let local = ctx.work.join("house");
    std::fs::create_dir_all(local.join("skills/rules")).expect("mkdir");
    std::fs::write(
        local.join("skills/rules/SKILL.md"),
        "---\nname: rules\ndescription: house rules\n---\nhouse body\n",
    )
    .expect("write");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\nref = \"main\"\nrepo_path = \"plugins/alpha\"\n\n[[plugin]]\nsource = \"./house\"\n",
        tools.url()
    ));
    ctx.ok(&["plugins", "lock"]);
    // Upstream moves on: the SDK must still get the locked commit.
    tools.write(
        "plugins/alpha/skills/greet/SKILL.md",
        "---\nname: greet\ndescription: greets\n---\nmoved body\n",
    );
    tools.commit("moved");

    let out = python(
        &ctx,
        &python_bin,
        SOURCES,
        &[ctx.lock_path().to_str().expect("utf-8")],
    );
    let got: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(
        got["sources"],
        serde_json::json!([
            {"source": tools.url(), "ref": locked, "repo_path": "plugins/alpha"},
            {"source": local.display().to_string(), "ref": null, "repo_path": null}
        ])
    );
    assert_eq!(
        got["loaded"],
        serde_json::json!([
            {"name": "alpha", "skills": ["locked body"]},
            {"name": "house", "skills": ["house body"]}
        ])
    );
}

#[test]
fn an_archive_the_sdk_cannot_fetch_is_an_error_naming_the_plugin() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see the test above");
        return;
    };
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    let lint = common::fixtures().join("plugins/lint");
    std::fs::write(
        served.join("lint-1.0.tar.gz"),
        common::tar_gz(&lint, "lint-1.0"),
    )
    .expect("write");
    let server = FileServer::start(&served, None);
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\n",
        server.url("lint-1.0.tar.gz")
    ));
    ctx.ok(&["plugins", "lock"]);
    let out = python(
        &ctx,
        &python_bin,
        "import sys\nfrom berth.openhands import plugin_sources\ntry:\n    plugin_sources(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n",
        &[ctx.lock_path().to_str().expect("utf-8")],
    );
    assert!(
        out.contains("plugin `lint` comes from the archive") && out.contains("cannot fetch"),
        "{out}"
    );
}

/// Runs one of the scripts in `tests/py/` with the SDK's interpreter; its stdout is JSON.
fn script(ctx: &TestContext, python_bin: &Path, name: &str, args: &[&str]) -> serde_json::Value {
    script_with(ctx, python_bin, Runtime::InProcess, name, args)
}

pub(crate) fn script_with(
    ctx: &TestContext,
    python_bin: &Path,
    runtime: Runtime,
    name: &str,
    args: &[&str],
) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .join("tests/py")
        .join(name);
    let code = format!(
        "import runpy, sys\nsys.argv = [{:?}] + sys.argv[1:]\nrunpy.run_path({:?}, run_name='__main__')\n",
        name,
        path.display().to_string()
    );
    let out = python_with(ctx, python_bin, runtime, &code, args);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{name} printed JSON ({e}):\n{out}"))
}

/// Locks and syncs local plugin folders (copied into the work folder) in this order.
fn lock_folders(ctx: &TestContext, names: &[&str]) -> Vec<String> {
    let manifest: String = names
        .iter()
        .map(|n| format!("[[plugin]]\nsource = \"./{n}\"\n\n"))
        .collect();
    ctx.write_manifest(&manifest);
    ctx.ok(&["plugins", "sync"]);
    names
        .iter()
        .map(|n| ctx.work.join(n).display().to_string())
        .collect()
}

#[test]
fn load_plugins_gives_what_the_sdks_own_loader_gives() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see the first test in this file");
        return;
    };
    let ctx = TestContext::new();
    let samples = common::fixtures().join("conformance/samples");
    for name in ["alpha", "beta", "gamma", "delta", "epsilon"] {
        common::copy_tree(&samples.join(name), &ctx.work.join(name));
    }
    // A plugin whose skills carry what only a skill's folder adds: resources under
    // scripts/, references/ and assets/, and a skill-level `.mcp.json`; and a legacy
    // skill's `mcp_tools` front matter.
    let kit = ctx.work.join("kit");
    for (rel, text) in [
        (
            "skills/pdf/SKILL.md",
            "---\nname: pdf\ndescription: Reads PDFs.\n---\nUse the script.\n",
        ),
        (
            "skills/pdf/.mcp.json",
            r#"{"mcpServers": {"pdf-tools": {"command": "node", "args": ["${SKILL_ROOT}/server.js", "${API_KEY}"]}}}"#,
        ),
        ("skills/pdf/scripts/extract.py", "print()\n"),
        ("skills/pdf/references/spec/part1.md", "spec\n"),
        ("skills/pdf/references/a.md", "a\n"),
        ("skills/pdf/assets/logo.svg", "<svg/>\n"),
        (
            "skills/notes.md",
            "---\ntriggers: [notes]\nmcp_tools:\n  mcpServers:\n    notes-db:\n      command: python\n      args: [-m, notes]\n---\nKeep notes.\n",
        ),
    ] {
        let path = kit.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let orders: [(&[&str], &[&str]); 5] = [
        (&["alpha", "beta", "gamma"], &["plugin-data"]),
        (&["gamma", "beta", "alpha"], &["transport-inferred"]),
        (
            &["alpha", "beta", "gamma", "delta", "epsilon"],
            &[
                "description-notice",
                "plugin-data",
                "plugin-root-variables",
                "transport-inferred",
            ],
        ),
        (
            &["epsilon", "delta", "gamma", "beta", "alpha"],
            &[
                "description-notice",
                "plugin-root-variables",
                "transport-inferred",
            ],
        ),
        // alpha's `shared-server` names no transport.
        (&["kit", "alpha"], &["transport-inferred"]),
    ];
    for (names, differences) in orders {
        let folders = lock_folders(&ctx, names);
        let mut args = vec![ctx.lock_path().display().to_string()];
        args.extend(folders);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for runtime in [Runtime::InProcess, Runtime::Binary] {
            let got = script_with(&ctx, &python_bin, runtime, "compare_sdk.py", &args);
            assert_eq!(
                got["in_process"],
                matches!(runtime, Runtime::InProcess),
                "{runtime:?}: {got}"
            );
            assert_eq!(got["mismatch"], "", "{names:?} {runtime:?}: {got}");
            assert_eq!(got["agents_mismatch"], "", "{names:?} {runtime:?}: {got}");
            assert_eq!(
                got["differences"],
                serde_json::json!(differences),
                "{names:?} {runtime:?}: {got}"
            );
            assert_eq!(got["skills"], got["sdk_skills"], "{names:?}");
            assert!(
                got["skills"].as_array().expect("skills").len() >= 6,
                "{names:?}: {got}"
            );
        }
    }
}

/// A policy next to the lock is the binary's to enforce: `berth.openhands` sees it and runs
/// the binary instead of the extension, so a plugin the policy refuses is refused the same.
#[test]
fn a_policy_next_to_the_lock_is_enforced_with_the_extension_loaded() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see the first test in this file");
        return;
    };
    let ctx = TestContext::new();
    common::copy_tree(
        &common::fixtures().join("conformance/samples/beta"),
        &ctx.work.join("beta"),
    );
    lock_folders(&ctx, &["beta"]);
    let probe = "import json, sys\nimport berth.openhands as b\ntry:\n    doc = b.plugin_set(sys.argv[1], *sys.argv[2:])\n    print(json.dumps({'native': b.native() is not None, 'plugins': [p['name'] for p in doc['plugins']], 'hooks': sorted(k for k, v in doc['hooks'].items() if v)}))\nexcept b.BerthError as e:\n    print(json.dumps({'native': b.native() is not None, 'error': str(e)}))\n";
    let lock = ctx.lock_path().display().to_string();
    let read_from = |ctx: &TestContext, store: Option<&str>| -> serde_json::Value {
        let mut args = vec![lock.as_str()];
        args.extend(store);
        let out = python(ctx, &python_bin, probe, &args);
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("JSON ({e}): {out}"))
    };
    let read = |ctx: &TestContext| read_from(ctx, None);
    let open = read(&ctx);
    assert_eq!(open["native"], true, "{open}");
    assert_eq!(open["plugins"], serde_json::json!(["beta"]), "{open}");
    assert!(
        !open["hooks"].as_array().expect("hooks").is_empty(),
        "{open}"
    );

    std::fs::write(
        ctx.work.join("berth-policy.toml"),
        "[capabilities]\nhooks = \"deny\"\n",
    )
    .expect("write policy");
    let refused = read(&ctx);
    let error = refused["error"]
        .as_str()
        .unwrap_or_else(|| panic!("refused: {refused}"));
    for needle in ["plugin `beta`", "hooks", "berth-policy.toml"] {
        assert!(error.contains(needle), "{needle} not in {error}");
    }

    // In-process errors are the binary's: a plugin missing from the store names the fix.
    std::fs::remove_file(ctx.work.join("berth-policy.toml")).expect("remove policy");
    let empty = ctx.root.join("empty-store").display().to_string();
    let missing = read_from(&ctx, Some(&empty));
    assert_eq!(missing["native"], true, "{missing}");
    let error = missing["error"]
        .as_str()
        .unwrap_or_else(|| panic!("missing: {missing}"));
    assert!(
        error.starts_with("error: plugin `beta` is not in the store")
            && error.contains("berth plugins sync"),
        "{error}"
    );
}

#[test]
fn a_local_conversation_runs_a_locked_hook_from_the_store_and_is_blocked() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see the first test in this file");
        return;
    };
    let ctx = TestContext::new();
    let guard = ctx.repo("guard");
    guard.write(
        "hooks/hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/guard.sh"}]}]}}"#,
    );
    guard.write_exec(
        "scripts/guard.sh",
        "#!/bin/sh\ncat > guard-saw.json\necho \"guard: the locked guard refuses $PWD\" >&2\nexit 2\n",
    );
    guard.write(
        "skills/careful/SKILL.md",
        "---\nname: careful\ndescription: Be careful.\n---\nLook before you leap.\n",
    );
    guard.commit("guard");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\nref = \"main\"\n",
        guard.url()
    ));
    ctx.ok(&["plugins", "sync"]);
    // Upstream moves on and then vanishes: the conversation runs what the lock pinned.
    guard.write_exec("scripts/guard.sh", "#!/bin/sh\nexit 0\n");
    guard.commit("lenient");
    std::fs::remove_dir_all(&guard.path).expect("remove upstream");
    let workspace = ctx.root.join("workspace");
    std::fs::create_dir_all(&workspace).expect("mkdir");
    let got = script(
        &ctx,
        &python_bin,
        "conversation_hooks.py",
        &[
            ctx.lock_path().to_str().expect("utf-8"),
            workspace.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(got["conversation"], "LocalConversation", "{got}");
    assert_eq!(got["skills"], serde_json::json!(["careful"]), "{got}");
    let command = got["hook_commands"][0].as_str().expect("a hook command");
    assert!(
        command.starts_with(ctx.store.to_str().expect("utf-8"))
            && command.ends_with("/guard/scripts/guard.sh"),
        "the hook runs the store's script: {got}"
    );
    assert_eq!(got["continue"], false, "{got}");
    assert_eq!(got["blocked"], serde_json::json!([true]), "{got}");
    assert_eq!(got["exit_codes"], serde_json::json!([2]), "{got}");
    let reason = got["reason"].as_str().expect("a reason");
    assert!(
        reason.starts_with("guard: the locked guard refuses"),
        "{got}"
    );
    let saw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace.join("guard-saw.json")).expect("the hook ran"),
    )
    .expect("the hook got the event as JSON");
    assert_eq!(saw["event_type"], "PreToolUse");
    assert_eq!(saw["tool_name"], "terminal");
    assert_eq!(saw["tool_input"]["command"], "rm -rf /");
}

fn serve(ctx: &TestContext, data: &Path) -> ServeProcess {
    let mut cmd = ctx.berth();
    cmd.env("BERTH_API_KEY", "k3y")
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--data-dir",
        ])
        .arg(data);
    ServeProcess::start(cmd)
}

#[test]
fn the_client_gets_the_same_set_back_after_a_restart_and_errors_carry_their_codes() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see the first test in this file");
        return;
    };
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    common::copy_tree(
        &common::fixtures().join("plugins/house-rules"),
        &ctx.work.join("house-rules"),
    );
    ctx.write_manifest("[[plugin]]\nsource = \"./house-rules\"\n");
    ctx.ok(&["plugins", "lock"]);
    let lockfile = ctx.root.join("absolute.lock");
    std::fs::write(
        &lockfile,
        ctx.lock_text().replace(
            "./house-rules",
            &ctx.work.join("house-rules").display().to_string(),
        ),
    )
    .expect("write");
    let data = ctx.root.join("data");
    let server = serve(&ctx, &data);
    let started = script(
        &ctx,
        &python_bin,
        "client_steps.py",
        &[
            "start",
            &server.base,
            "k3y",
            "github:acme/review",
            lockfile.to_str().expect("utf-8"),
        ],
    );
    let ids: Vec<String> = started["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|i| i.as_str().expect("id").to_owned())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(
        started["sdk"][0]["skills"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{started}"
    );
    assert!(started["sdk"][0]["hooks"].is_object(), "{started}");

    // Restart; upstream moves on and then vanishes.
    server.stop();
    review.write(
        "skills/code-review/SKILL.md",
        "---\nname: moved\n---\nmoved\n",
    );
    review.commit("two");
    review.git(&["tag", "-f", "v1"]);
    std::fs::remove_dir_all(&review.path).expect("remove upstream");
    let server = serve(&ctx, &data);
    let mut args = vec!["restore", &server.base, "k3y"];
    args.extend(ids.iter().map(String::as_str));
    let restored = script(&ctx, &python_bin, "client_steps.py", &args);
    // Listed oldest first; two started in the same second are ordered by id.
    let sorted = |v: &serde_json::Value| {
        let mut ids: Vec<String> = v
            .as_array()
            .expect("ids")
            .iter()
            .map(|i| i.as_str().expect("id").to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        sorted(&restored["listed"]),
        sorted(&started["ids"]),
        "{restored}"
    );
    assert_eq!(restored["metadata"], serde_json::json!({"user": "ada"}));
    assert_eq!(restored["sets"], started["sets"]);
    assert_eq!(restored["locks"], started["locks"]);
    assert_eq!(restored["sdk"], started["sdk"]);

    let bad_lock = ctx.root.join("bad.lock");
    let text = std::fs::read_to_string(&lockfile).expect("read");
    let hash = common::lock_field(&text, 0, "hash").expect("hash");
    std::fs::write(
        &bad_lock,
        text.replace(&hash, "sha256-pQpattmS9VmO3ZIQUFn66az8GSmB4IvYhTTCFn6SUmo="),
    )
    .expect("write");
    // Refused by policy before any connection: a host off the allow list (loopback).
    let errors = script(
        &ctx,
        &python_bin,
        "client_steps.py",
        &[
            "errors",
            &server.base,
            "k3y",
            bad_lock.to_str().expect("utf-8"),
            "https://127.0.0.9:9/acme/tools.git",
        ],
    );
    assert_eq!(errors["refused"]["status"], 403, "{errors}");
    assert_eq!(errors["refused"]["code"], "forbidden", "{errors}");
    assert_eq!(errors["mismatch"]["status"], 422, "{errors}");
    assert_eq!(errors["mismatch"]["code"], "invalid_plugin", "{errors}");
    assert!(
        errors["mismatch"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("hash mismatch") && m.contains("house-rules")),
        "{errors}"
    );
    assert_eq!(errors["missing"]["status"], 404, "{errors}");
    assert_eq!(errors["wrong_key"]["status"], 401, "{errors}");
    assert_eq!(
        sorted(&errors["deleted"]),
        sorted(&started["ids"]),
        "{errors}"
    );
    assert_eq!(errors["left"], serde_json::json!([]), "{errors}");
    server.stop();
}

#[test]
fn the_shipped_example_builds_a_conversation_from_the_example_lock() {
    let Some(python_bin) = sdk_python() else {
        require_or_skip("BERTH_SDK_PYTHON", "see the first test in this file");
        return;
    };
    let ctx = TestContext::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned();
    // A copy of examples/team and the fixture plugins it names, so the checkout is
    // never written.
    common::copy_tree(&repo.join("examples/team"), &ctx.work.join("examples/team"));
    common::copy_tree(
        &repo.join("fixtures/plugins"),
        &ctx.work.join("fixtures/plugins"),
    );
    let example = repo.join("examples/openhands_sdk.py");
    let manifest = ctx.work.join("examples/team/plugins.toml");
    let lock_before = std::fs::read_to_string(ctx.work.join("examples/team/plugins.lock"))
        .expect("the example's lock");
    let out = python(
        &ctx,
        &python_bin,
        &format!(
            "import runpy, sys\nsys.argv = ['openhands_sdk.py'] + sys.argv[1:]\nrunpy.run_path({:?}, run_name='__main__')\n",
            example.display().to_string()
        ),
        &["--manifest", manifest.to_str().expect("utf-8")],
    );
    assert!(
        out.contains("skills: code-review, review:check, lint-rules, house-style"),
        "{out}"
    );
    assert!(out.contains("hooks on: pre_tool_use"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ctx.work.join("examples/team/plugins.lock")).expect("lock"),
        lock_before,
        "the committed lock is current"
    );
    assert_eq!(ctx.store_entries().len(), 3, "synced into the test's store");
}

#[test]
fn the_client_keeps_its_key_to_its_origin_and_stops_on_a_repeated_cursor() {
    // Standard library only: any Python 3.11 runs `berth.client`.
    let ctx = TestContext::new();
    let out = script(&ctx, Path::new("python3"), "client_untrusted.py", &[]);
    // A redirect to another origin arrives without the key; one within the origin keeps it.
    assert_eq!(out["far"]["id"], "far", "{out}");
    assert_eq!(out["keys"]["other"], serde_json::json!([null]), "{out}");
    assert_eq!(out["keys"]["kept"], serde_json::json!(["k3y"]), "{out}");
    // A server that gives the same cursor again is not paged forever.
    assert_eq!(out["pages"], 2, "{out}");
    assert_eq!(out["raised"]["code"], "repeated_cursor", "{out}");
}
