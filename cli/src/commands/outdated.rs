//! `berth plugins outdated`: what `berth plugins lock --upgrade` would move, and what each
//! move changes, with nothing written.
//!
//! The upgraded lock (ALLOWED: the newest the manifest allows) is resolved in memory, and
//! again with the manifest's constraints lifted (NEWEST, `newest.rs`); the lock and its
//! upgrade are then compared as `berth plugins diff` compares them (each plugin's
//! capability surface, fetched into the store if missing). Entries pair by how they were
//! asked for, so two plugins of one name are never compared with each other.

use std::fmt::Write as _;

use anyhow::Result;
use berth_lockfile_schema::{Lock, LockedPlugin, is_full_commit_id};
use berth_resolver::{Network, Upgrade};
use berth_review::SurfaceDiff;
use serde::Serialize;

use super::diff::{counterpart, lock_diff};
use super::diff_lines::lines;
use super::diff_report::{PayloadDiff, PinView, PluginDiff};
use super::lock::resolve;
use super::newest::resolve_newest;
use crate::args::OutdatedArgs;
use crate::context::{Context, Exit, Failure};

/// The document `--json` prints.
#[derive(Debug, Serialize)]
struct Outdated {
    /// The document's format version (2: `allowed` beside `newest`).
    version: u32,
    /// How many plugins the lock holds.
    locked: usize,
    /// Every plugin whose pin would move, or that has a newer version than the manifest
    /// allows, in the upgraded lock's order, then those the upgrade would drop.
    plugins: Vec<OutdatedPlugin>,
    /// Every marketplace that would be read at another commit (or whose local catalog
    /// changed), or that has a newer one than its `ref` allows.
    marketplaces: Vec<MovedMarketplace>,
    /// MCP server packages whose pinned version would move.
    payloads: Vec<PayloadDiff>,
    /// The `[agent]` package, when its pin would move.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<MovedAgent>,
}

impl Outdated {
    fn is_empty(&self) -> bool {
        self.plugins.is_empty()
            && self.marketplaces.is_empty()
            && self.payloads.is_empty()
            && self.agent.is_none()
    }

    /// Whether `lock --upgrade` moves anything (rather than only newer versions the
    /// manifest does not allow being there).
    fn upgrade_moves(&self) -> bool {
        self.plugins.iter().any(|p| p.status != HELD)
            || self.marketplaces.iter().any(|m| m.current != m.allowed)
            || !self.payloads.is_empty()
            || self.agent.is_some()
    }
}

/// The status of a plugin whose pin stays while a newer version than the manifest allows
/// exists.
const HELD: &str = "held";

/// One plugin whose pin would move, or that the manifest holds back.
#[derive(Debug, Serialize)]
struct OutdatedPlugin {
    name: String,
    /// `outdated` (its pin moves), `held` (it stays; NEWEST is newer than its `ref` or
    /// `version` allows), `added` (a dependency the newest versions bring) or `removed`
    /// (a dependency no longer needed).
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<Pinned>,
    /// What `lock --upgrade` moves it to: the newest the manifest allows.
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed: Option<Pinned>,
    /// The newest there is, whatever the manifest's `ref` or `version` (a branch is its
    /// own newest); the release-age cutoff still holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    newest: Option<Pinned>,
    /// Whether its content differs at all, current against allowed (a commit that
    /// changed other files of its repository moves the pin and not the content).
    content_changed: bool,
    /// Whether what it runs or grants changes (as in `berth plugins diff`).
    runs_different_code: bool,
    /// What it may run and what it tells the agent, current against allowed.
    changes: SurfaceDiff,
}

/// A pin, with the branch, tag or version tag it follows.
#[derive(Debug, Serialize)]
struct Pinned {
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    git_ref: Option<String>,
    #[serde(flatten)]
    pin: PinView,
}

impl Pinned {
    fn of(plugin: &LockedPlugin) -> Self {
        Self {
            git_ref: followed_ref(plugin).map(str::to_owned),
            pin: PinView::of(plugin),
        }
    }
}

/// A marketplace whose commit would move, or has a newer one than its `ref` allows.
#[derive(Debug, Serialize)]
struct MovedMarketplace {
    name: String,
    /// The commit read now (`null`: a local folder).
    current: Option<String>,
    /// The commit its `ref` names now.
    allowed: Option<String>,
    /// Its default branch's commit when its `ref` is a version tag or a commit, else
    /// `allowed`.
    newest: Option<String>,
}

/// The agent package's move.
#[derive(Debug, Serialize)]
struct MovedAgent {
    package: String,
    current: String,
    newest: String,
}

pub fn run(ctx: &Context, args: &OutdatedArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let manifest = ctx.read_manifest()?;
    let current = ctx.require_lock("")?;
    let stale = current.staleness(&manifest);
    if !stale.is_empty() {
        return Err(Failure {
            message: format!(
                "`{}` is out of date with `{}`; run `berth plugins lock` first (`outdated` compares the lock with what `--upgrade` would make of it)",
                ctx.lock_label(),
                ctx.manifest_label()
            ),
            notes: stale.iter().map(ToString::to_string).collect(),
        }
        .into());
    }
    let allowed = resolve(ctx, &manifest, Some(&current), Upgrade::All)?;
    let newest = resolve_newest(ctx, &manifest, &current, &allowed);
    let report = compare(ctx, &current, &allowed, &newest)?;
    if args.output.json() {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        ctx.printer.json(&text);
    } else {
        ctx.printer.data(&text(&report));
        say_what_to_do(ctx, &report);
    }
    if args.exit_code && report.upgrade_moves() {
        return Err(Exit(1).into());
    }
    Ok(())
}

/// The status lines under the table: what `update` moves, and what only an edit of the
/// manifest can.
fn say_what_to_do(ctx: &Context, report: &Outdated) {
    if report.upgrade_moves() {
        let what = match report.plugins.iter().filter(|p| p.status != HELD).count() {
            0 => format!(
                "none of {} (what they come from moves)",
                super::plugins(report.locked)
            ),
            n => format!("{n} of {}", super::plugins(report.locked)),
        };
        ctx.printer.status(
            "Outdated",
            &format!(
                "{what}; `berth plugins update` moves everything (`berth plugins update NAME` one plugin, `berth marketplace update NAME` one marketplace)"
            ),
        );
    }
    let plugins = report.plugins.iter().filter(|p| p.status == HELD).count();
    let markets = report
        .marketplaces
        .iter()
        .filter(|m| m.allowed != m.newest)
        .count();
    let held = match (plugins, markets) {
        (0, 0) => return,
        (n, 0) => super::plugins(n),
        (0, 1) => "1 marketplace".to_owned(),
        (0, m) => format!("{m} marketplaces"),
        (n, m) => format!(
            "{} and {m} marketplace{}",
            super::plugins(n),
            if m == 1 { "" } else { "s" }
        ),
    };
    ctx.printer.status(
        "Held back",
        &format!(
            "{held} by a `ref` or `version` of `{}`: NEWEST is newer than it allows; edit it to move",
            ctx.manifest_label()
        ),
    );
}

/// What moves between the lock and its upgrade, and what is newer still.
fn compare(ctx: &Context, current: &Lock, allowed: &Lock, newest: &Lock) -> Result<Outdated> {
    let diff = lock_diff(
        ctx,
        current,
        allowed,
        Network::Online,
        ctx.lock_label(),
        "the upgraded lock".to_owned(),
    )?;
    let mut diffs = diff.plugins;
    let mut take = |before: Option<&LockedPlugin>, after: Option<&LockedPlugin>| {
        let hash = |p: Option<&LockedPlugin>| p.map(|p| p.hash.to_sri());
        let at = diffs.iter().position(|d| {
            d.old.as_ref().map(|v| v.hash.clone()) == hash(before)
                && d.new.as_ref().map(|v| v.hash.clone()) == hash(after)
                && after.or(before).is_some_and(|p| p.name == d.name)
        })?;
        Some(diffs.remove(at))
    };
    let mut plugins = Vec::new();
    for after in &allowed.plugins {
        let before = counterpart(current, allowed, after);
        let latest = same_entry(newest, allowed, after);
        let moves = before.is_none_or(|b| moved(b, after));
        if !moves && !latest.is_some_and(|l| newer(after, l)) {
            continue;
        }
        let diff = if moves {
            take(before, Some(after))
        } else {
            None
        };
        plugins.push(entry(before, Some(after), latest, moves, diff));
    }
    for before in &current.plugins {
        if counterpart(allowed, current, before).is_none() {
            plugins.push(entry(
                Some(before),
                None,
                None,
                true,
                take(Some(before), None),
            ));
        }
    }
    let agent = match (&current.agent, &allowed.agent) {
        (Some(before), Some(after)) if before != after => Some(MovedAgent {
            package: after.package.clone(),
            current: before.version.clone(),
            newest: after.version.clone(),
        }),
        _ => None,
    };
    Ok(Outdated {
        version: 2,
        locked: current.plugins.len(),
        plugins,
        marketplaces: moved_marketplaces(current, allowed, newest),
        payloads: diff.payloads,
        agent,
    })
}

/// The marketplaces read at another commit by the upgrade, or newer than their `ref`.
fn moved_marketplaces(current: &Lock, allowed: &Lock, newest: &Lock) -> Vec<MovedMarketplace> {
    use berth_lockfile_schema::marketplace::LockedMarketplace;
    let rev = |m: &LockedMarketplace| m.git.as_ref().map(|(_, r)| r.to_string());
    let named =
        |lock: &Lock, name: &str| lock.marketplaces.iter().find(|m| m.name == name).cloned();
    allowed
        .marketplaces
        .iter()
        .filter_map(|after| {
            let before = named(current, &after.name)?;
            let latest = named(newest, &after.name).unwrap_or_else(|| after.clone());
            let moves = before.git != after.git || before.catalog_hash != after.catalog_hash;
            (moves || latest.git != after.git).then(|| MovedMarketplace {
                name: after.name.clone(),
                current: rev(&before),
                allowed: rev(after),
                newest: rev(&latest),
            })
        })
        .collect()
}

/// The entry of `newest` (locked from the manifest with its constraints lifted) that
/// answers the same manifest entry as `plugin` of `allowed`: requested entries are in the
/// manifest's order in both; a dependency is the one of its name asked the same way.
fn same_entry<'a>(
    newest: &'a Lock,
    allowed: &Lock,
    plugin: &LockedPlugin,
) -> Option<&'a LockedPlugin> {
    let found = if plugin.is_requested() {
        let at = allowed
            .plugins
            .iter()
            .filter(|p| p.is_requested())
            .position(|p| std::ptr::eq(p, plugin))?;
        newest.plugins.iter().filter(|p| p.is_requested()).nth(at)
    } else {
        newest.plugins.iter().find(|p| {
            !p.is_requested() && p.requested == plugin.requested && p.source == plugin.source
        })
    };
    found.filter(|p| p.name == plugin.name)
}

/// Whether `lock --upgrade` moves the pin of a plugin: its commit or archive, its content,
/// the tag its range resolved to, or its marketplace entry's definition.
fn moved(before: &LockedPlugin, after: &LockedPlugin) -> bool {
    before.pin != after.pin
        || before.hash != after.hash
        || before.resolved_ref != after.resolved_ref
        || before.definition != after.definition
        || before.plugin_version != after.plugin_version
}

/// Whether `latest` holds other content than `after`, or another pin of it (what they
/// were asked by differs, so the tag a range resolved to is not compared).
fn newer(after: &LockedPlugin, latest: &LockedPlugin) -> bool {
    after.pin != latest.pin
        || after.hash != latest.hash
        || after.definition != latest.definition
        || after.plugin_version != latest.plugin_version
}

fn entry(
    before: Option<&LockedPlugin>,
    after: Option<&LockedPlugin>,
    latest: Option<&LockedPlugin>,
    moves: bool,
    diff: Option<PluginDiff>,
) -> OutdatedPlugin {
    let status = match (before, after) {
        (None, _) => "added",
        (_, None) => "removed",
        _ if moves => "outdated",
        _ => HELD,
    };
    let name = after.or(before).map(|p| p.name.clone()).unwrap_or_default();
    OutdatedPlugin {
        name,
        status,
        current: before.map(Pinned::of),
        allowed: after.map(Pinned::of),
        newest: latest.or(after).map(Pinned::of),
        content_changed: diff.is_some(),
        runs_different_code: diff.as_ref().is_some_and(|d| d.runs_different_code),
        changes: diff.map(|d| d.changes).unwrap_or_default(),
    }
}

/// The branch, tag or version tag a plugin follows; not a full commit (a marketplace's
/// relative entry follows the marketplace's commit, shown as its pin already).
fn followed_ref(plugin: &LockedPlugin) -> Option<&str> {
    plugin
        .resolved_ref
        .as_deref()
        .or(plugin.git_ref.as_deref())
        .filter(|r| !is_full_commit_id(r))
}

/// A pin for people: `v1.4.0 1a2b3c4d5e6f`, `main 1a2b3c4d5e6f (1.0.0)`, an archive's
/// hash.
fn pin_text(plugin: &Pinned) -> String {
    let at = match &plugin.pin.rev {
        Some(rev) => rev.chars().take(12).collect(),
        None => plugin.pin.hash.chars().take(19).collect::<String>(),
    };
    let mut text = match &plugin.git_ref {
        Some(r) => format!("{r} {at}"),
        None => at,
    };
    if let Some(version) = &plugin.pin.version {
        let _ = write!(text, " ({version})");
    }
    text
}

/// For a terminal: a table of what moves, then the capability changes of each plugin.
fn text(report: &Outdated) -> String {
    let mut out = String::new();
    if report.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            match report.locked {
                0 => "the lock has no plugins".to_owned(),
                1 => "the 1 plugin is up to date".to_owned(),
                n => format!("all {n} plugins are up to date"),
            }
        );
        return out;
    }
    let dash = || "-".to_owned();
    let mut rows = vec![[
        "PLUGIN".to_owned(),
        "CURRENT".to_owned(),
        "ALLOWED".to_owned(),
        "NEWEST".to_owned(),
        "CHANGES".to_owned(),
    ]];
    for p in &report.plugins {
        rows.push([
            p.name.clone(),
            p.current.as_ref().map_or_else(dash, pin_text),
            p.allowed.as_ref().map_or_else(dash, pin_text),
            p.newest.as_ref().map_or_else(dash, pin_text),
            summary(p),
        ]);
    }
    for m in &report.marketplaces {
        let rev = |r: &Option<String>| {
            r.as_deref()
                .map_or_else(|| "local".to_owned(), |r| r.chars().take(12).collect())
        };
        rows.push([
            format!("{} (marketplace)", m.name),
            rev(&m.current),
            rev(&m.allowed),
            rev(&m.newest),
            String::new(),
        ]);
    }
    if let Some(agent) = &report.agent {
        rows.push([
            format!("{} (agent)", agent.package),
            agent.current.clone(),
            agent.newest.clone(),
            agent.newest.clone(),
            String::new(),
        ]);
    }
    super::table(&mut out, &rows, "");
    for p in &report.payloads {
        let to = p.to.as_deref().unwrap_or("no longer pinned");
        let from = p.from.as_deref().unwrap_or("not pinned");
        let _ = writeln!(
            out,
            "package of {}'s MCP server {} ({}): {} {from} -> {to}",
            p.plugin, p.server, p.runner, p.package
        );
    }
    for p in &report.plugins {
        let lines = lines(&p.changes);
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}:", p.name);
        for l in lines {
            let _ = writeln!(out, "  {} {}: {}", l.sign, l.what, l.literal);
        }
    }
    out
}

/// The CHANGES column: how much of the plugin moves.
fn summary(p: &OutdatedPlugin) -> String {
    let count = lines(&p.changes).len();
    match (p.status, p.content_changed, count) {
        ("added", ..) => "new dependency".to_owned(),
        ("removed", ..) => "no longer needed".to_owned(),
        (HELD, ..) => "held back by the manifest".to_owned(),
        (_, false, _) => "same content".to_owned(),
        (_, true, 0) => "text of skills, commands or agents".to_owned(),
        (_, true, n) => format!(
            "{n} change{}{}",
            if n == 1 { "" } else { "s" },
            if p.runs_different_code {
                ", runs different code"
            } else {
                ""
            }
        ),
    }
}
