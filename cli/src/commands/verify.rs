//! `berth plugins verify`

use anyhow::Result;
use berth_resolver::{
    AgentVerifyStatus, Network, VerifyStatus, verify_agent, verify_payloads, verify_plugins,
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
    let settings = ctx.settings(Network::Online);
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
    let mut problems = Vec::new();
    let mut rows = Vec::new();
    let mut payload_rows = Vec::new();
    for (outcome, is_payload) in outcomes
        .iter()
        .map(|o| (o, false))
        .chain(payload_outcomes.iter().map(|o| (o, true)))
    {
        let kind = if is_payload { "package" } else { "plugin" };
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
        let row = json!({
            "name": outcome.name,
            "status": status,
            "expected": outcome.expected.to_sri(),
            "actual": actual,
            "error": error,
        });
        if is_payload {
            payload_rows.push(row);
        } else {
            rows.push(row);
        }
    }
    let mut agent_rows = Vec::new();
    if let Some(agent) = &lock.agent {
        for outcome in &agent_outcomes {
            let (status, actual, error) = match &outcome.status {
                AgentVerifyStatus::Ok => {
                    ctx.printer.status(
                        "Verified",
                        &format!(
                            "agent `{}`: {} {}",
                            agent.package, outcome.what, outcome.expected
                        ),
                    );
                    ("ok", Some(outcome.expected.clone()), None)
                }
                AgentVerifyStatus::Mismatch { actual } => {
                    problems.push(format!(
                        "agent `{}`: {}: hash mismatch: expected `{}`, got `{actual}`",
                        agent.package, outcome.what, outcome.expected
                    ));
                    ("mismatch", Some(actual.clone()), None)
                }
                AgentVerifyStatus::Failed(e) => {
                    problems.push(format!("agent `{}`: {}: {e}", agent.package, outcome.what));
                    ("error", None, Some(e.to_string()))
                }
            };
            agent_rows.push(json!({
                "what": outcome.what,
                "status": status,
                "expected": outcome.expected,
                "actual": actual,
                "error": error,
            }));
        }
    }
    if args.json {
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
