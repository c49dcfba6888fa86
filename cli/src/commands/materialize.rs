//! `berth materialize TARGET DIR`: the locked set where a harness reads it.

use anyhow::{Context as _, Result};
use berth_runtime::harness::{self, Plan};
use berth_runtime::{BuildOptions, build_plugin_set};

use crate::args::{MaterializeArgs, MaterializeTarget};
use crate::context::{Context, Exit};

pub fn run(ctx: &Context, args: &MaterializeArgs) -> Result<()> {
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
    ctx.gate_runtime(&lock)?;
    if !args.check {
        std::fs::create_dir_all(&args.dir)
            .with_context(|| format!("could not create `{}`", args.dir.display()))?;
    }
    let root = std::path::absolute(&args.dir)
        .with_context(|| format!("`{}` has no absolute form", args.dir.display()))?;
    let (plan, harness): (Plan, &str) = match args.target {
        MaterializeTarget::Claude => (harness::claude::plan(&set, &root)?, "Claude Code"),
        MaterializeTarget::Codex => (harness::codex::plan(&set, &root)?, "Codex"),
        MaterializeTarget::Gemini => (harness::gemini::plan(&set, &root)?, "Gemini CLI"),
        MaterializeTarget::AgentPlugins => {
            (harness::agent_plugins::plan(&set, &root)?, "Agent Plugins")
        }
    };
    for warning in &plan.warnings {
        ctx.printer.warn(warning);
    }
    let shown = args.dir.display();
    if args.check {
        let drift =
            harness::check(&root, &plan).with_context(|| format!("could not read `{shown}`"))?;
        if drift.is_empty() {
            ctx.printer.status(
                "Checked",
                &format!("`{shown}` holds the locked set for {harness}"),
            );
            return Ok(());
        }
        ctx.printer.error(&format!(
            "`{shown}` drifted from the locked set for {harness} ({} paths); run `berth materialize {} {shown}` to restore it",
            drift.len(),
            target_name(args.target)
        ));
        for d in &drift {
            ctx.printer.note(&d.to_string());
        }
        return Err(Exit(1).into());
    }
    let applied =
        harness::apply(&root, &plan).with_context(|| format!("could not write `{shown}`"))?;
    ctx.printer.status(
        "Wrote",
        &format!(
            "{} for {harness} in `{shown}` ({} written, {} unchanged, {} removed)",
            super::approve::count(set.plugins.len(), "plugin"),
            applied.written.len(),
            applied.unchanged,
            applied.removed.len()
        ),
    );
    Ok(())
}

fn target_name(target: MaterializeTarget) -> &'static str {
    match target {
        MaterializeTarget::Claude => "claude",
        MaterializeTarget::Codex => "codex",
        MaterializeTarget::Gemini => "gemini",
        MaterializeTarget::AgentPlugins => "agent-plugins",
    }
}
