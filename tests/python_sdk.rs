//! `berth.openhands` against the real OpenHands SDK (`openhands-sdk` 1.58.2 from PyPI, in
//! the Python `BERTH_SDK_PYTHON` names; `.ci/run` makes that venv): `plugin_sources(lock)`
//! gives the SDK's own `PluginSource`s pinned to the locked commits, and the SDK's own
//! `Plugin.fetch` then gets exactly the locked content even after the branch moved.
//!
//! The SDK imports LiteLLM, which fetches a price list from the internet unless told not
//! to: every run here sets `LITELLM_LOCAL_MODEL_COST_MAP`, so nothing leaves 127.0.0.1.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{FileServer, TestContext, berth_bin, require_or_skip};

fn sdk_python() -> Option<PathBuf> {
    std::env::var_os("BERTH_SDK_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Runs `script` (Python) with the SDK's interpreter, this checkout's `berth` module and
/// the berth binary under test; returns stdout, failing the test on a non-zero exit.
fn python(ctx: &TestContext, python: &Path, script: &str, args: &[&str]) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .join("python");
    let out = Command::new(python)
        .current_dir(&ctx.work)
        .env("PYTHONPATH", repo)
        .env("BERTH_BIN", berth_bin())
        .env("BERTH_STORE", &ctx.store)
        .env("HOME", &ctx.home)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("OPENHANDS_SUPPRESS_BANNER", "1")
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
