//! `berth plugins verify`

use anyhow::Result;
use berth_resolver::{
    AgentVerifyOutcome, AgentVerifyStatus, Network, VerifyOutcome, VerifyStatus, verify_agent,
    verify_payloads, verify_plugins,
};
use serde_json::json;

use crate::args::VerifyArgs;
use crate::context::{Context, Failure};

pub fn run(ctx: &Context, args: &VerifyArgs) -> Result<()> {
    let lock = ctx.require_lock("")?;
    // The manifest is optional here; when present it supplies credentials the lock omits.
    let manifest = if ctx.manifest_path.exists() {
        Some(ctx.read_manifest()?)
    } else {
        None
    };
    let mut settings = ctx.settings(Network::Online);
    // Each payload's npm registry signatures are checked from the lock before it is
    // fetched, under what the policy asks of them.
    if ctx.policy_path.is_some() {
        settings.require_registry_signatures = ctx
            .governance()?
            .policy
            .require_registry_signatures()
            .map(str::to_owned);
    }
    let outcomes = verify_plugins(
        &ctx.store,
        &settings,
        &ctx.printer,
        &lock,
        manifest.as_ref(),
    );
    let payload_outcomes = verify_payloads(&ctx.store, &settings, &ctx.printer, &lock);
    let agent_outcomes = verify_agent(
        &ctx.store,
        &settings,
        &ctx.printer,
        &lock,
        manifest.as_ref(),
    );
    let mut problems = unsigned_sources(ctx, &lock, manifest.as_ref())?;
    let mut rows = Vec::new();
    let mut payload_rows = Vec::new();
    for outcome in &outcomes {
        rows.push(entry_row(ctx, outcome, "plugin", &mut problems));
    }
    for outcome in &payload_outcomes {
        payload_rows.push(entry_row(ctx, outcome, "package", &mut problems));
    }
    let mut agent_rows = Vec::new();
    if let Some(agent) = &lock.agent {
        for outcome in &agent_outcomes {
            agent_rows.push(agent_row(ctx, &agent.package, outcome, &mut problems));
        }
    }
    if args.output.json() {
        let mut doc = json!({ "ok": problems.is_empty(), "plugins": rows });
        if lock.agent.is_some() {
            doc["agent"] = json!(agent_rows);
        }
        if !lock.payloads.is_empty() {
            doc["payloads"] = json!(payload_rows);
        }
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        ctx.printer.json(&text);
    }
    match problems.len() {
        0 => {
            ctx.printer.status(
                "Verified",
                &format!("{} match `{}`", super::contents(&lock), ctx.lock_label()),
            );
            Ok(())
        }
        1 => Err(Failure {
            message: problems.remove(0),
            notes: Vec::new(),
        }
        .into()),
        n => Err(Failure {
            message: format!("{n} artifacts do not match `{}`", ctx.lock_label()),
            notes: problems,
        }
        .into()),
    }
}

/// Under `[sources] require_signed`, each plugin whose commit (or tag), fetched afresh, is
/// not signed as the policy asks, one line each.
fn unsigned_sources(
    ctx: &Context,
    lock: &berth_lockfile_schema::Lock,
    manifest: Option<&berth_lockfile_schema::Manifest>,
) -> Result<Vec<String>> {
    if ctx.policy_path.is_none() {
        return Ok(Vec::new());
    }
    Ok(ctx.unsigned_sources(
        &ctx.governance()?.policy,
        lock,
        manifest,
        Network::Online,
        berth_resolver::ObjectsFrom::Fresh,
    ))
}

/// The row of a verified plugin or package (`kind`), its status printed, a problem noted.
fn entry_row(
    ctx: &Context,
    outcome: &VerifyOutcome,
    kind: &str,
    problems: &mut Vec<String>,
) -> serde_json::Value {
    let (status, actual, error) = match &outcome.status {
        VerifyStatus::Ok => {
            ctx.printer.status(
                "Verified",
                &format!("{} {}", outcome.name, outcome.expected),
            );
            ("ok", Some(outcome.expected.to_sri()), None)
        }
        VerifyStatus::Mismatch { actual } => {
            problems.push(format!(
                "{kind} `{}`: hash mismatch: expected `{}`, got `{actual}`",
                outcome.name, outcome.expected
            ));
            ("mismatch", Some(actual.to_sri()), None)
        }
        VerifyStatus::Failed(e) => {
            problems.push(format!("{kind} `{}`: {e}", outcome.name));
            ("error", None, Some(e.to_string()))
        }
    };
    json!({
        "name": outcome.name,
        "status": status,
        "expected": outcome.expected.to_sri(),
        "actual": actual,
        "error": error,
    })
}

/// The row of one verified part of the agent package `package`.
fn agent_row(
    ctx: &Context,
    package: &str,
    outcome: &AgentVerifyOutcome,
    problems: &mut Vec<String>,
) -> serde_json::Value {
    let (status, actual, error) = match &outcome.status {
        AgentVerifyStatus::Ok => {
            ctx.printer.status(
                "Verified",
                &format!("agent `{package}`: {} {}", outcome.what, outcome.expected),
            );
            ("ok", Some(outcome.expected.clone()), None)
        }
        AgentVerifyStatus::Mismatch { actual } => {
            problems.push(format!(
                "agent `{package}`: {}: hash mismatch: expected `{}`, got `{actual}`",
                outcome.what, outcome.expected
            ));
            ("mismatch", Some(actual.clone()), None)
        }
        AgentVerifyStatus::Failed(e) => {
            problems.push(format!("agent `{package}`: {}: {e}", outcome.what));
            ("error", None, Some(e.to_string()))
        }
    };
    json!({
        "what": outcome.what,
        "status": status,
        "expected": outcome.expected,
        "actual": actual,
        "error": error,
    })
}
