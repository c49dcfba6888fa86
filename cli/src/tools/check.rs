//! Asking recorded servers again: `observe --check`, `--check-tools`, and a policy's
//! `tools = "pinned"`, each answer compared with the lock's record.

use anyhow::Result;
use berth_lockfile_schema::Lock;
use berth_lockfile_schema::governance::ToolsRule;

use super::{Again, Observed, Remote, observable, observe_lock, rule, summary};
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
        &|| observable(ctx, lock),
        &[],
        Again::All,
        Remote::default(),
    )?;
    check_against(ctx, lock, &made)
}

/// The records of `lock` made for other code than the lock pins now (`lock --check`), one
/// line each: such a record says nothing of what the server offers now. `None` when the
/// records cannot be checked here, because a plugin is not in the store as it was added
/// (nothing is fetched or started to check them).
pub fn stale_records(ctx: &Context, lock: &Lock) -> Result<Option<Vec<String>>> {
    if lock.tools.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let options = berth_runtime::BuildOptions {
        max_skills: None,
        no_view: true,
        ..berth_runtime::BuildOptions::default()
    };
    let set = match berth_runtime::build_plugin_set(&ctx.store, lock, &options) {
        Ok(set) => set,
        // Not in the store, or changed there: `sync` says so; the records cannot be
        // checked here.
        Err(_) => return Ok(None),
    };
    let scratch = std::env::temp_dir();
    let codes: Vec<_> = berth_review::observe::targets(
        &set,
        ctx.store.root(),
        &scratch,
        berth_review::observe::timeout(),
        ctx.sandboxing(),
    )
    .into_iter()
    .map(|target| {
        let code = super::code_digest(lock, &target, ctx.store.root());
        (target.plugin, target.server, code)
    })
    .collect();
    Ok(Some(
        lock.tools
            .iter()
            .filter_map(|r| {
                let name = format!("MCP server `{}` of plugin `{}`", r.server, r.plugin);
                match codes
                    .iter()
                    .find(|(p, s, _)| *p == r.plugin && *s == r.server)
                {
                    None => Some(format!("{name} has a record but is not in the lock's plugins")),
                    Some((_, _, code)) if *code != r.code => Some(format!(
                        "{name}'s record was made of other code than the lock pins now; `berth plugins lock` observes it again"
                    )),
                    Some(_) => None,
                }
            })
            .collect(),
    ))
}
