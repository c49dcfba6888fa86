//! `berth plugins list`

use anyhow::Result;
use berth_lockfile_schema::{Lock, LockedPlugin, LockedPluginWire, Pin};
use serde_json::json;

use crate::args::ListArgs;
use crate::context::Context;

pub fn run(ctx: &Context, args: &ListArgs) -> Result<()> {
    let lock = ctx.lock_to_read(args.locked)?;
    if args.output.json() {
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

/// The header of `list` for people.
const HEADER: [&str; 7] = ["NAME", "VERSION", "REF", "REV", "SOURCE", "PATH", "STATE"];

/// `list` for people: a header, then a row per plugin, the agent and each payload; `-`
/// where a column does not apply.
fn rows(ctx: &Context, lock: &Lock) -> Vec<[String; 7]> {
    let dash = || "-".to_owned();
    let mut rows = vec![HEADER.map(str::to_owned)];
    rows.extend(lock.plugins.iter().map(|p| {
        let entry = ctx.store.checked_lookup(&p.hash, &p.name);
        let state = match &entry {
            Ok(Some(_)) => "synced",
            Ok(None) => "not synced",
            Err(_) => "changed since synced (run `berth plugins sync`)",
        };
        let version = p.plugin_version.clone().or_else(|| match &entry {
            Ok(Some(entry)) => declared_version(&entry.path, &p.name),
            _ => None,
        });
        let name = match (&p.auto_load, p.standalone_skill) {
            (Some(market), true) => format!("{} (skill, auto-loaded by {market})", p.name),
            (Some(market), false) => format!("{} (auto-loaded by {market})", p.name),
            (None, _) => p.name.clone(),
        };
        let rev = match &p.pin {
            Pin::Git(git) => git.rev.chars().take(12).collect(),
            _ => dash(),
        };
        [
            name,
            version.unwrap_or_else(dash),
            ref_column(p),
            rev,
            p.requested.clone().unwrap_or_else(|| p.source.clone()),
            p.repo_path.clone().unwrap_or_else(dash),
            state.to_owned(),
        ]
    }));
    if let Some(agent) = &lock.agent {
        let missing = ctx.store.missing_wheels(agent).len();
        rows.push([
            format!("agent {}", agent.package),
            agent.version.clone(),
            dash(),
            dash(),
            agent.source.clone(),
            dash(),
            if missing == 0 {
                format!("synced ({} wheels)", agent.wheels.len())
            } else {
                format!(
                    "not synced ({missing} of {} wheels missing)",
                    agent.wheels.len()
                )
            },
        ]);
    }
    for p in &lock.payloads {
        let user = p.used_by.describe(&p.server).replace('`', "");
        rows.push([
            format!("  {}: {user}", p.plugin),
            format!("{} {}", p.package, p.version),
            dash(),
            dash(),
            format!("{} {}", p.runner, p.spec),
            dash(),
            match payload_path(ctx, p) {
                Some(_) => "synced".to_owned(),
                None => "not synced".to_owned(),
            },
        ]);
    }
    rows
}

/// The version the plugin's manifest in the store declares, if it has a manifest.
fn declared_version(path: &std::path::Path, name: &str) -> Option<String> {
    let read = |rel: &str| match std::fs::read(path.join(rel)) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    };
    let manifest = berth_plugin::read_manifest(read, name).ok()?;
    manifest.file.map(|_| manifest.version)
}

/// What the entry asked for: a tag a `version` range chose (with the range), a branch or
/// tag, `default` for the default branch; a commit asked for is the REV column's, so `-`.
fn ref_column(p: &LockedPlugin) -> String {
    let is_commit = |r: &str| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit());
    match (&p.pin, &p.resolved_ref, &p.version, &p.git_ref) {
        (Pin::Git(_), Some(tag), Some(range), _) => format!("{tag} ({range})"),
        (Pin::Git(_), Some(tag), None, _) => tag.clone(),
        (Pin::Git(_), None, _, Some(r)) if is_commit(r) => "-".to_owned(),
        (Pin::Git(_), None, _, Some(r)) => r.clone(),
        (Pin::Git(_), None, _, None) => "default".to_owned(),
        _ => "-".to_owned(),
    }
}

/// The store path of a payload's closure, when it is there unchanged.
fn payload_path(ctx: &Context, p: &berth_lockfile_schema::LockedPayload) -> Option<String> {
    ctx.store
        .checked_lookup(&p.hash, &p.entry_name())
        .ok()
        .flatten()
        .map(|e| e.path.display().to_string())
}
