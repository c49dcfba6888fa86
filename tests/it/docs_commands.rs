//! docs/commands.md's examples run for real (issue #57, part 5): every `berth` line of the
//! page's blocks, in the page's order, in one project built here (a local plugin, and a
//! marketplace served as `github:anthropics/claude-plugins-official` whose plugin needs
//! another). A line is run as a reader would first type it: optional `[...]` parts left
//! out; a line that still holds a placeholder (`SOURCE`, `NAME`, `DIR`, `...`) cannot be
//! typed as it is and is only parsed (by `docs.rs`).

use crate::common;
use crate::docs::{SHELL, blocks, repo_root};

use std::path::Path;

use common::{GitRepo, TestContext, copy_tree, fixtures};

/// The line's arguments after `berth`, optional parts and the comment left out; `None`
/// when it is no `berth` line or still holds a placeholder.
fn runnable(line: &str) -> Option<Vec<String>> {
    let command = line.split(" #").next().unwrap_or_default().trim();
    let rest = command.strip_prefix("berth ")?;
    let mut args = Vec::new();
    let mut depth = 0usize;
    for word in rest.split_whitespace() {
        let opens = word.matches('[').count();
        let closes = word.matches(']').count();
        if depth == 0 && opens == 0 {
            args.push(word.to_owned());
        }
        depth = (depth + opens).saturating_sub(closes);
    }
    let placeholder = |w: &String| {
        w.contains("...")
            || w.contains('…')
            || (!w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()))
    };
    (!args.iter().any(placeholder)).then_some(args)
}

/// The page's marketplace: `code-review` (one command) needing `shared` (one skill).
fn marketplace(ctx: &TestContext) {
    let market = GitRepo::init(
        &ctx.upstream.join("anthropics/claude-plugins-official.git"),
        &ctx.home,
    );
    market.write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "claude-plugins-official", "plugins": [
            {"name": "code-review", "source": "./plugins/code-review",
             "description": "Automated code review for pull requests"},
            {"name": "shared", "source": "./plugins/shared", "description": "Shared rules"}]}"#,
    );
    market.write(
        "plugins/code-review/.claude-plugin/plugin.json",
        r#"{"name": "code-review", "version": "1.0.0", "dependencies": ["shared"]}"#,
    );
    market.write(
        "plugins/code-review/commands/code-review.md",
        "---\ndescription: Code review a pull request\n---\nReview the pull request.\n",
    );
    market.write(
        "plugins/shared/.claude-plugin/plugin.json",
        r#"{"name": "shared", "version": "1.0.0"}"#,
    );
    market.write(
        "plugins/shared/skills/rules/SKILL.md",
        "---\nname: rules\ndescription: The house rules\n---\nFollow them.\n",
    );
    market.commit("the official marketplace");
}

#[test]
fn the_command_pages_examples_run_as_written() {
    let root = repo_root();
    let page = std::fs::read_to_string(root.join("docs/commands.md")).expect("read the page");
    let page = &page[..page.find("\n## Reference").unwrap_or(page.len())];
    let ctx = TestContext::new();
    copy_tree(&fixtures().join("plugins/review"), &ctx.work.join("review"));
    marketplace(&ctx);
    ctx.write_manifest(
        "[[marketplace]]\nname = \"official\"\nsource = \"github:anthropics/claude-plugins-official\"\n\n[[plugin]]\nsource = \"./review\"\n\n[[plugin]]\nsource = \"code-review@official\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    std::fs::copy(ctx.lock_path(), ctx.work.join("old.lock")).expect("copy the lock");
    std::fs::write(
        ctx.work.join("event.json"),
        r#"{"tool_name": "terminal", "tool_input": {"command": "ls"}}"#,
    )
    .expect("write the event");
    // `berth run -- my-agent --task x`: an agent that says it ran.
    let bin = ctx.root.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let agent = bin.join("my-agent");
    std::fs::write(&agent, "#!/bin/sh\necho \"agent ran: $*\"\n").expect("write");
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let fresh = ctx.root.join("fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    let mut ran = Vec::new();
    for block in blocks(page)
        .iter()
        .filter(|b| SHELL.contains(&b.lang.as_str()))
    {
        for (offset, line) in block.lines.iter().enumerate() {
            let Some(args) = runnable(line) else {
                continue;
            };
            // Elsewhere, with what they need: `agent exec` an `[agent]` package
            // (tests/it/agent.rs), `serve` a port (the README's tour, tests/it/server.rs).
            if matches!(args[0].as_str(), "agent" | "serve") {
                continue;
            }
            // The page adds the marketplace the project already has: taken out first.
            if args.starts_with(&["marketplace".to_owned(), "add".to_owned()]) {
                ctx.ok(&["marketplace", "remove", "official", "--force"]);
            }
            let at = format!("docs/commands.md:{}: `{line}`", block.first_line + offset);
            // The shell's `~/`: the test's home.
            let args: Vec<String> = args
                .iter()
                .map(|a| match a.strip_prefix("~/") {
                    Some(rest) => ctx.home.join(rest).display().to_string(),
                    None => a.clone(),
                })
                .collect();
            // `init` writes a new manifest: in a folder of its own.
            let cwd: &Path = if args[0] == "init" { &fresh } else { &ctx.work };
            let out = ctx
                .berth()
                .current_dir(cwd)
                .env("PATH", &path)
                .args(&args)
                .output()
                .expect("run berth");
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(out.status.success(), "{at} failed:\n{stdout}{stderr}");
            if args.first().map(String::as_str) == Some("run") {
                assert!(stdout.contains("agent ran: --task x"), "{at}: {stdout}");
            }
            ran.push(
                line.split(" #")
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
            );
        }
    }
    for step in [
        "plugins lock --upgrade-plugin review",
        "plugins sync --frozen",
        "plugins outdated --exit-code",
        "plugins tree --invert shared",
        "plugins diff --from old.lock --format markdown",
        "plugins show --json",
        "run -- my-agent --task x",
        "materialize codex ~/.codex",
    ] {
        assert!(
            ran.iter().any(|r| r.strip_prefix("berth ") == Some(step)),
            "the page's `berth {step}` ran (ran: {ran:#?})"
        );
    }
}

#[test]
fn only_typeable_lines_run() {
    assert_eq!(
        runnable("berth plugins verify [--json]      # fetch everything afresh"),
        Some(vec!["plugins".to_owned(), "verify".to_owned()])
    );
    assert_eq!(
        runnable("berth plugins add SOURCE [--ref R | --version V] [--repo-path P]"),
        None
    );
    assert_eq!(
        runnable("berth plugins update [NAME]...   # all of them"),
        Some(vec!["plugins".to_owned(), "update".to_owned()])
    );
    assert_eq!(runnable("cargo build"), None);
}
