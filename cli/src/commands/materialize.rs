//! `berth materialize TARGET DIR`: the locked set where a harness reads it.

use anyhow::{Context as _, Result};
use berth_runtime::harness::claude::Scope;
use berth_runtime::harness::{self, Plan};
use berth_runtime::{BuildOptions, build_plugin_set};

use crate::args::{MaterializeArgs, MaterializeTarget};
use crate::context::{Context, Exit};

pub fn run(ctx: &Context, args: &MaterializeArgs) -> Result<()> {
    let repo = match (&args.project_repo, args.target) {
        (None, _) => None,
        // As Claude Code names a project: its real path.
        (Some(repo), MaterializeTarget::Claude) => {
            Some(std::fs::canonicalize(repo).with_context(|| {
                format!(
                    "the repository `{}` of `--project` is not a folder here",
                    repo.display()
                )
            })?)
        }
        (Some(_), target) => anyhow::bail!(
            "`--project` is for the claude target only (Claude Code's project settings); `{}` has no project form",
            target_name(target)
        ),
    };
    let _hold = ctx.hold_store()?;
    let lock = ctx.runtime_lock(args.frozen)?;
    let set = build_plugin_set(
        &ctx.store,
        &lock,
        &BuildOptions {
            max_skills: None,
            ..BuildOptions::default()
        },
    )?;
    ctx.gate_runtime(&lock, &set)?;
    if !args.check {
        std::fs::create_dir_all(&args.dir)
            .with_context(|| format!("could not create `{}`", args.dir.display()))?;
    }
    let root = absolute(&args.dir)?;
    // Each folder written, with its plan: the harness folder, and for `claude --project`
    // the repository's settings.
    let mut plans: Vec<(std::path::PathBuf, Plan)> = Vec::new();
    let harness = match args.target {
        MaterializeTarget::Claude => {
            let scope = repo.as_deref().map_or(Scope::User, Scope::Project);
            plans.push((root.clone(), harness::claude::plan(&set, &root, scope)?));
            if let Some(repo) = &repo {
                plans.push((repo.clone(), harness::claude::project_settings(&set, repo)?));
            }
            "Claude Code"
        }
        MaterializeTarget::Codex => {
            plans.push((root.clone(), harness::codex::plan(&set, &root)?));
            "Codex"
        }
        MaterializeTarget::Gemini => {
            plans.push((root.clone(), harness::gemini::plan(&set, &root)?));
            "Gemini CLI"
        }
        MaterializeTarget::AgentPlugins => {
            plans.push((root.clone(), harness::agent_plugins::plan(&set, &root)?));
            "Agent Plugins"
        }
    };
    for warning in plans.iter().flat_map(|(_, plan)| &plan.warnings) {
        ctx.printer.warn(warning);
    }
    let shown = args.dir.display();
    if args.check {
        let mut drift = Vec::new();
        for (dir, plan) in &plans {
            let found = harness::check(dir, plan)
                .with_context(|| format!("could not read `{}`", dir.display()))?;
            // Paths in the harness folder are named relative to it, others in full.
            drift.extend(found.iter().map(|d| {
                if *dir == root {
                    d.to_string()
                } else {
                    d.under(dir).to_string()
                }
            }));
        }
        if drift.is_empty() {
            ctx.printer.status(
                "Checked",
                &format!("`{shown}` holds the locked set for {harness}"),
            );
            return Ok(());
        }
        let again = match &args.project_repo {
            Some(repo) => format!(" --project {}", repo.display()),
            None => String::new(),
        };
        ctx.printer.error(&format!(
            "`{shown}` drifted from the locked set for {harness} ({} paths); run `berth materialize {} {shown}{again}` to restore it",
            drift.len(),
            target_name(args.target)
        ));
        for d in &drift {
            ctx.printer.note(d);
        }
        return Err(Exit(1).into());
    }
    let mut total = harness::Applied::default();
    for (dir, plan) in &plans {
        let applied = harness::apply(dir, plan)
            .with_context(|| format!("could not write `{}`", dir.display()))?;
        total.written.extend(applied.written);
        total.unchanged += applied.unchanged;
        total.removed.extend(applied.removed);
    }
    let place = match &args.project_repo {
        Some(repo) => format!("`{shown}`, enabled in `{}`", repo.display()),
        None => format!("`{shown}`"),
    };
    ctx.printer.status(
        "Wrote",
        &format!(
            "{} for {harness} in {place} ({} written, {} unchanged, {} removed)",
            super::approve::count(set.plugins.len(), "plugin"),
            total.written.len(),
            total.unchanged,
            total.removed.len()
        ),
    );
    Ok(())
}

fn absolute(path: &std::path::Path) -> Result<std::path::PathBuf> {
    std::path::absolute(path).with_context(|| format!("`{}` has no absolute form", path.display()))
}

fn target_name(target: MaterializeTarget) -> &'static str {
    match target {
        MaterializeTarget::Claude => "claude",
        MaterializeTarget::Codex => "codex",
        MaterializeTarget::Gemini => "gemini",
        MaterializeTarget::AgentPlugins => "agent-plugins",
    }
}
