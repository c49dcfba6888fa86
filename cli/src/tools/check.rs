//! Asking recorded servers again: `observe --check`, `--check-tools`, and a policy's
//! `tools = "pinned"`, each answer compared with the lock's record.

use anyhow::Result;
use berth_lockfile_schema::Lock;
use berth_lockfile_schema::governance::ToolsRule;

use super::{Again, Observed, Remote, allowed, observe_lock, rule, summary};
use crate::context::Context;

/// `made` (servers observed now) against `lock`'s records: exit 1 naming each server whose
/// answer is not the one recorded (or that has no record), or, under `tools = "pinned"`,
/// that was not observed.
pub fn check_against(ctx: &Context, lock: &Lock, made: &[Observed]) -> Result<()> {
    let pinned = rule(ctx)? == Some(ToolsRule::Pinned);
    let mut problems = Vec::new();
    for observed in made {
        let now = &observed.record;
        let recorded = lock
            .tools
            .iter()
            .find(|t| t.plugin == now.plugin && t.server == now.server);
        let name = format!("MCP server `{}` of plugin `{}`", now.server, now.plugin);
        match recorded {
            None => problems.push(format!(
                "{name} has no record in the lock; run `berth plugins observe {}`",
                now.plugin
            )),
            Some(r) if r.manifest != now.manifest => problems.push(match &now.unobserved {
                Some(why) => format!(
                    "{name} answered when it was recorded and now does not: {}",
                    observed.said.as_deref().unwrap_or(why)
                ),
                None => format!(
                    "{name} offers something else than the lock records ({}); `berth plugins observe {}` records it, then review it with `berth plugins diff`",
                    observed.manifest.as_ref().map(summary).unwrap_or_default(),
                    now.plugin
                ),
            }),
            Some(r) => {
                if let (true, Some(why)) = (pinned, &r.unobserved) {
                    problems.push(format!(
                        "{name} was never observed ({why}) and the policy says `tools = \"pinned\"`"
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        ctx.printer.status(
            "Checked",
            &format!(
                "{} MCP servers answer as `{}` records",
                made.len(),
                ctx.lock_label()
            ),
        );
        return Ok(());
    }
    Err(crate::context::Failure {
        message: format!(
            "{} MCP server{} of `{}` answer otherwise than recorded",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            ctx.lock_label()
        ),
        notes: problems,
    }
    .into())
}

/// `--check-tools` (and a policy's `tools = "pinned"`): every recorded server of `lock`
/// that may run is asked again and compared with its record.
pub fn recheck(ctx: &Context, lock: &Lock, asked: bool) -> Result<()> {
    if !asked && rule(ctx)? != Some(ToolsRule::Pinned) {
        return Ok(());
    }
    let (_, made) = observe_lock(
        ctx,
        lock,
        &|| allowed(ctx, lock),
        &[],
        Again::All,
        Remote::default(),
    )?;
    check_against(ctx, lock, &made)
}
