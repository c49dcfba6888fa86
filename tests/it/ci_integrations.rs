//! What a project adds to run berth in its CI: the GitHub Action (`action.yml`) and the
//! pre-commit hooks (`.pre-commit-hooks.yaml`), each run as its runner runs it. The
//! action's steps run as GitHub's runner runs a composite action's (`bash --noprofile
//! --norc -eo pipefail`, its inputs substituted, `if:` honoured, the first failing step
//! ending the job); the hooks through the real `pre-commit` from PyPI (`BERTH_PRE_COMMIT`),
//! offline, from a repository holding this checkout's hook file.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;

use crate::common::{self, GitRepo, TestContext, apply_env, berth_bin};

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A project locking one plugin at a tag of a repository, locked and synced.
fn project(ctx: &TestContext) -> GitRepo {
    let repo = ctx.repo("review");
    repo.copy_fixture("house-rules", "");
    repo.commit("house rules");
    repo.tag("v1.0.0");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\nref = \"v1.0.0\"\n");
    ctx.ok(&["plugins", "sync"]);
    repo
}

/// The environment a runner's step gets here: the context's home, store and `github:`,
/// and the tested `berth` first on `PATH`.
fn runner_env(ctx: &TestContext, cmd: &mut Command) {
    apply_env(cmd, &ctx.home);
    let bin = berth_bin();
    let path = format!(
        "{}:{}",
        bin.parent().expect("a folder").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("PATH", path)
        .env("BERTH_STORE", &ctx.store)
        .env("BERTH_GITHUB_URL", ctx.github_url());
}

/// `text` with `${{ inputs.NAME }}` replaced by the input's value.
fn substitute(text: &str, inputs: &[(String, String)]) -> String {
    let mut out = text.to_owned();
    for (name, value) in inputs {
        out = out.replace(&format!("${{{{ inputs.{name} }}}}"), value);
    }
    assert!(
        !out.contains("${{"),
        "an expression the test cannot evaluate: {out}"
    );
    out
}

/// Runs the action's steps in `workspace` with `given` inputs over its defaults; returns
/// the name of the first step that failed, with its output, or `None`.
fn run_action(
    ctx: &TestContext,
    workspace: &Path,
    given: &[(&str, &str)],
) -> Option<(String, String)> {
    let text = std::fs::read_to_string(checkout().join("action.yml")).expect("read action.yml");
    let action: Value = serde_yaml_ng::from_str(&text).expect("action.yml is YAML");
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let mut inputs: Vec<(String, String)> = action["inputs"]
        .as_mapping()
        .expect("inputs")
        .iter()
        .map(|(k, v)| {
            let name = k.as_str().expect("an input's name").to_owned();
            let default = v["default"].as_str().unwrap_or_default().to_owned();
            let value = given
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(default, |(_, v)| (*v).to_owned());
            (name, value)
        })
        .collect();
    inputs.sort();
    let steps = action["runs"]["steps"].as_sequence().expect("steps");
    assert!(steps.len() >= 4, "the action's steps were read: {steps:?}");
    for step in steps {
        let name = step["name"].as_str().expect("a step's name").to_owned();
        if let Some(condition) = step["if"].as_str() {
            let (input, wanted) = condition
                .split_once(" == ")
                .expect("`if: inputs.NAME == 'VALUE'`");
            let input = input.trim().strip_prefix("inputs.").expect("an input");
            let value = &inputs.iter().find(|(n, _)| n == input).expect("known").1;
            if value != wanted.trim().trim_matches('\'') {
                continue;
            }
        }
        assert_eq!(step["shell"].as_str(), Some("bash"), "{name}");
        let script = substitute(step["run"].as_str().expect("a run step"), &inputs);
        let dir = step["working-directory"]
            .as_str()
            .map_or(workspace.to_owned(), |d| {
                workspace.join(substitute(d, &inputs))
            });
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
            .current_dir(dir);
        runner_env(ctx, &mut cmd);
        if let Some(env) = step["env"].as_mapping() {
            for (k, v) in env {
                cmd.env(
                    k.as_str().expect("a name"),
                    substitute(v.as_str().unwrap_or_default(), &inputs),
                );
            }
        }
        let out = cmd.output().expect("run a step");
        if !out.status.success() {
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return Some((name, said));
        }
    }
    None
}

#[test]
fn the_action_passes_a_current_lock_and_writes_its_audit_as_sarif() {
    let ctx = TestContext::new();
    let _repo = project(&ctx);
    let failed = run_action(&ctx, &ctx.work, &[("sarif", "reports/berth.sarif")]);
    assert_eq!(failed, None);
    let sarif: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(ctx.work.join("reports/berth.sarif")).expect("the SARIF file"),
    )
    .expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0", "{sarif}");
    assert!(sarif["runs"][0]["tool"]["driver"]["name"].is_string());
}

#[test]
fn the_action_fails_a_lock_the_manifest_moved_past_and_a_policy_it_breaks() {
    let ctx = TestContext::new();
    let repo = project(&ctx);
    repo.write(
        "skills/new/SKILL.md",
        "---\nname: new\ndescription: new\n---\nNew.\n",
    );
    repo.commit("a new skill");
    repo.tag("v1.1.0");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\nref = \"v1.1.0\"\n");
    let (step, said) = run_action(&ctx, &ctx.work, &[]).expect("the job fails");
    assert_eq!(step, "The lock is current", "{said}");
    assert!(said.contains("plugins.lock"), "{said}");

    // Locked again, it passes; a policy the plugin breaks fails the audit step, and the
    // report is written for upload-sarif all the same.
    ctx.ok(&["plugins", "lock"]);
    ctx.ok(&["plugins", "sync"]);
    assert_eq!(run_action(&ctx, &ctx.work, &[("verify", "false")]), None);
    std::fs::write(
        ctx.root.join("strict.toml"),
        "[sources]\nallow = [\"github:elsewhere/*\"]\n",
    )
    .expect("write a policy");
    let policy = ctx.root.join("strict.toml");
    let (step, said) = run_action(
        &ctx,
        &ctx.work,
        &[
            ("policy", policy.to_str().expect("UTF-8")),
            ("verify", "false"),
        ],
    )
    .expect("the audit fails");
    assert_eq!(step, "Audit", "{said}");
    assert!(ctx.work.join("berth.sarif").is_file());
}

/// The real `pre-commit`, or `None` after the missing-tool rule.
fn pre_commit() -> Option<PathBuf> {
    match std::env::var_os("BERTH_PRE_COMMIT") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            common::require_or_skip(
                "pre-commit",
                "set BERTH_PRE_COMMIT to a `pre-commit` 4.3.0 (`pip install pre-commit==4.3.0`)",
            );
            None
        }
    }
}

fn git(dir: &Path, args: &[&str], home: &Path) {
    let mut cmd = Command::new("git");
    cmd.args(args).current_dir(dir);
    apply_env(&mut cmd, home);
    let out = cmd
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn pre_commit_runs_the_hooks_a_project_adds_and_fails_a_stale_lock() {
    let Some(pre_commit) = pre_commit() else {
        return;
    };
    let ctx = TestContext::new();
    let repo = project(&ctx);
    // The hook repository: this checkout's hook file at a commit.
    let hooks = ctx.repo("berth-hooks");
    let file = std::fs::read_to_string(checkout().join(".pre-commit-hooks.yaml"))
        .expect("read .pre-commit-hooks.yaml");
    hooks.write(".pre-commit-hooks.yaml", &file);
    let rev = hooks.commit("hooks");
    let config = format!(
        "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: berth-lock-check\n      - id: berth-audit\n",
        ctx.upstream.join("berth-hooks.git").display()
    );
    std::fs::write(ctx.work.join(".pre-commit-config.yaml"), config).expect("write config");
    git(&ctx.work, &["init", "-q"], &ctx.home);
    git(&ctx.work, &["add", "-A"], &ctx.home);
    let run = || {
        let mut cmd = Command::new(&pre_commit);
        cmd.args(["run", "--all-files", "--color", "never"])
            .current_dir(&ctx.work);
        runner_env(&ctx, &mut cmd);
        let out = cmd
            .env("PRE_COMMIT_HOME", ctx.root.join("pre-commit-home"))
            .output()
            .expect("run pre-commit");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (passed, said) = run();
    assert!(passed, "{said}");
    assert!(
        said.contains("plugins.lock is current") && said.contains("berth audit"),
        "{said}"
    );

    repo.write(
        "skills/new/SKILL.md",
        "---\nname: new\ndescription: new\n---\nNew.\n",
    );
    repo.commit("a new skill");
    repo.tag("v1.1.0");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\nref = \"v1.1.0\"\n");
    git(&ctx.work, &["add", "-A"], &ctx.home);
    let (passed, said) = run();
    assert!(!passed, "a stale lock passes: {said}");
    assert!(
        said.contains("plugins.lock is current") && said.contains("Failed"),
        "{said}"
    );
}
