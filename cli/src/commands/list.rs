//! `berth plugins list`

use anyhow::Result;
use berth_lockfile_schema::{Lock, LockedPluginWire, Pin};
use serde_json::json;

use super::short_pin;
use crate::args::ListArgs;
use crate::context::Context;

pub fn run(ctx: &Context, args: &ListArgs) -> Result<()> {
    let lock = ctx.require_lock("")?;
    if args.json {
        let doc = document(ctx, &lock);
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        ctx.printer.json(&text);
        return Ok(());
    }
    let mut text = String::new();
    super::table(&mut text, &rows(ctx, &lock), "");
    ctx.printer.data(&text);
    Ok(())
}

/// `list --json`: the lock's entries as the lock writes them, with their kind and store
/// path, its marketplaces, its agent's wheels and its payloads.
fn document(ctx: &Context, lock: &Lock) -> serde_json::Value {
    let plugins: Vec<serde_json::Value> = lock
        .plugins
        .iter()
        .map(|p| {
            let mut value =
                serde_json::to_value(LockedPluginWire::from(p)).expect("lock entries serialise");
            value["kind"] = json!(p.pin.kind().to_string());
            // Only an entry that is there unchanged has a path to use.
            value["store_path"] = json!(
                ctx.store
                    .checked_lookup(&p.hash, &p.name)
                    .ok()
                    .flatten()
                    .map(|e| e.path.display().to_string())
            );
            value
        })
        .collect();
    let agent = lock.agent.as_ref().map(|a| {
        json!({
            "package": a.package,
            "version": a.version,
            "source": a.source,
            "entry_point": a.entry_point.to_string(),
            "python_version": a.python_version,
            "wheels": a.wheels.iter().map(|w| json!({
                "name": w.name,
                "version": w.version,
                "file": w.file,
                "url": w.url,
                "sha256": w.sha256,
                "synced": ctx.store.wheel(&w.sha256, &w.file).is_some(),
            })).collect::<Vec<_>>(),
        })
    });
    // `agent` and `payloads` only when the lock has them: the spec's shape (docs/spec.md section 6) is
    // `{"plugins": [...]}`.
    let mut doc = json!({ "plugins": plugins });
    if let Some(agent) = agent {
        doc["agent"] = agent;
    }
    // The marketplaces as the lock pins them (what a conversation's registrations are
    // checked against), when it has any.
    if !lock.marketplaces.is_empty() {
        doc["marketplaces"] = lock
            .marketplaces
            .iter()
            .map(|m| {
                serde_json::to_value(
                    berth_lockfile_schema::marketplace::LockedMarketplaceWire::from(m),
                )
                .expect("lock entries serialise")
            })
            .collect();
    }
    if !lock.payloads.is_empty() {
        doc["payloads"] = lock
            .payloads
            .iter()
            .map(|p| {
                json!({
                    "plugin": p.plugin,
                    "server": p.server,
                    "use": p.used_by.as_str(),
                    "runner": p.runner,
                    "spec": p.spec,
                    "package": p.package,
                    "version": p.version,
                    "registry": p.registry,
                    "hash": p.hash.to_sri(),
                    "store_path": payload_path(ctx, p),
                })
            })
            .collect();
    }
    doc
}

/// `list` for people: a row per plugin, the agent and each payload.
fn rows(ctx: &Context, lock: &Lock) -> Vec<[String; 4]> {
    let mut rows: Vec<[String; 4]> = lock
        .plugins
        .iter()
        .map(|p| {
            let pinned = match (&p.pin, &p.resolved_ref, &p.git_ref) {
                (Pin::Git(_), Some(tag), _) => format!("{tag} {}", short_pin(p)),
                (Pin::Git(_), None, Some(r)) => format!("{r} {}", short_pin(p)),
                (Pin::Git(_), None, None) => format!("HEAD {}", short_pin(p)),
                _ => short_pin(p),
            };
            let present = match ctx.store.checked_lookup(&p.hash, &p.name) {
                Ok(Some(_)) => "synced",
                Ok(None) => "not synced",
                Err(_) => "changed since synced (run `berth plugins sync`)",
            };
            let name = match (&p.auto_load, p.standalone_skill) {
                (Some(market), true) => format!("{} (skill, auto-loaded by {market})", p.name),
                (Some(market), false) => format!("{} (auto-loaded by {market})", p.name),
                (None, _) => p.name.clone(),
            };
            [name, pinned, p.source.clone(), present.to_owned()]
        })
        .collect();
    if let Some(agent) = &lock.agent {
        let missing = ctx.store.missing_wheels(agent).len();
        rows.push([
            format!("agent {}", agent.package),
            format!("{} ({} wheels)", agent.version, agent.wheels.len()),
            agent.source.clone(),
            if missing == 0 {
                "synced".to_owned()
            } else {
                format!("not synced ({missing} wheels missing)")
            },
        ]);
    }
    for p in &lock.payloads {
        let user = p.used_by.describe(&p.server).replace('`', "");
        rows.push([
            format!("  {}: {user}", p.plugin),
            format!("{} {}", p.package, p.version),
            format!("{} {}", p.runner, p.spec),
            match payload_path(ctx, p) {
                Some(_) => "synced".to_owned(),
                None => "not synced".to_owned(),
            },
        ]);
    }
    rows
}

/// The store path of a payload's closure, when it is there unchanged.
fn payload_path(ctx: &Context, p: &berth_lockfile_schema::LockedPayload) -> Option<String> {
    ctx.store
        .checked_lookup(&p.hash, &p.entry_name())
        .ok()
        .flatten()
        .map(|e| e.path.display().to_string())
}
