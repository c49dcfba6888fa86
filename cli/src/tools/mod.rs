//! Recording what a lock's MCP servers offer the model (`[[tools]]`): each stdio server
//! whose code the lock pins is started offline, in the sandbox, and asked
//! (`berth_review::observe`), the canonical answer kept in the store, and the lock
//! records its hash. Observation comes before the review: a plugin waiting for an
//! approval is observed (what it offers is part of what is approved); a plugin the policy
//! refuses outright is never started. A record whose code no longer matches the lock is
//! never kept: observed again, or recorded as not observed.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};
use berth_lockfile_schema::governance::ToolsRule;
use berth_lockfile_schema::{Lock, LockedTools, Sha256Hash, TOOLS_ENTRY_NAME, ToolsTrust};
use berth_review::MANIFEST_FILE;
use berth_review::observe::{NO_SANDBOX, Target, TargetKind, observe, targets};
use berth_runtime::{BuildOptions, build_plugin_set};
use serde_json::Value;

use crate::context::Context;
use crate::governance::Scan;

mod check;

pub use check::{check_against, recheck, stale_records};

/// Which servers to observe again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// Those without a record for their current code.
    Changed,
    /// Every one of the named plugins (all when none are named).
    All,
}

/// Whether remote servers are asked (their first answer recorded, trust on first use),
/// and whether `${VAR}` in their headers is filled from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Remote {
    pub ask: bool,
    pub env: bool,
}

/// One server observed now: its record, and the manifest when it answered.
pub struct Observed {
    pub record: LockedTools,
    pub manifest: Option<Value>,
    /// Its program is not pinned, so it was not started: said once in `-v` detail, not
    /// warned at every lock (the payload's own warning already says it floats).
    pub unpinned: bool,
    /// Why it was not observed, in full (what the server said on stderr, the program's
    /// path), when that says more than the record's machine-independent reason.
    pub said: Option<String>,
}

/// The plugins of `lock` whose servers may be started to be observed, and why each other
/// one may not (its first violation). In the sandbox, a plugin that only waits for an
/// approval is observed, so that what its servers offer is shown before anyone approves
/// it; a plugin the policy refuses outright (a `deny`, a denied source, a refused
/// signature, hidden characters) is never started. Outside the sandbox
/// (`--observe-unsandboxed`) only the plugins the policy and the approvals let run are.
pub fn observable(ctx: &Context, lock: &Lock) -> Result<BTreeMap<String, Option<String>>> {
    let governance = ctx.governance()?;
    let checked = ctx.review(&governance, lock, Scan::Nothing)?;
    let sandboxed = !ctx.observe_unsandboxed;
    Ok(lock
        .plugins
        .iter()
        .map(|p| {
            let refused = checked
                .violations
                .iter()
                .find(|v| v.plugin == p.name && !(sandboxed && v.needs_approval))
                .map(ToString::to_string);
            (p.name.clone(), refused)
        })
        .collect())
}

/// Which plugins may be observed ([`observable`]), asked only when a server is to be
/// observed: a lock without servers, or whose servers all have records, reads no policy
/// for it.
pub type Allowed<'a> = dyn Fn() -> Result<BTreeMap<String, Option<String>>> + 'a;

/// Observes the servers of `lock`'s plugins named in `only` (all when empty) that may run
/// (`allowed`), as `again` says; returns the lock's records with those made now, and what
/// was made now. A plugin that may not run keeps its record (or has none).
pub fn observe_lock(
    ctx: &Context,
    lock: &Lock,
    allowed: &Allowed<'_>,
    only: &[String],
    again: Again,
    remote: Remote,
) -> Result<(Vec<LockedTools>, Vec<Observed>)> {
    // No view, and no limit on skills: a server's command line then names its plugin's
    // own entry, so its code digest is the same whatever else the lock holds.
    let options = BuildOptions {
        max_skills: None,
        no_view: true,
        ..BuildOptions::default()
    };
    let set = build_plugin_set(&ctx.store, lock, &options)?;
    if set.mcp_servers.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut may_run: Option<BTreeMap<String, Option<String>>> = None;
    let scratch = ctx
        .store
        .stage()
        .context("could not make a scratch folder")?;
    let store_root = ctx.store.root().to_owned();
    let mut records: Vec<LockedTools> = Vec::new();
    let mut asked = Vec::new();
    for target in targets(
        &set,
        &store_root,
        scratch.path(),
        berth_review::observe::timeout(),
        ctx.sandboxing(),
    ) {
        let previous = lock
            .tools
            .iter()
            .find(|t| t.plugin == target.plugin && t.server == target.server);
        let code = code_digest(lock, &target, &store_root);
        let wanted = only.is_empty() || only.contains(&target.plugin);
        let current = previous.filter(|p| p.code == code);
        let is_remote = matches!(target.kind, TargetKind::Remote { .. });
        let keep = match (again, current) {
            // A remote server is asked only when that is asked for.
            _ if is_remote && !remote.ask => true,
            (Again::Changed, Some(_)) => true,
            (Again::All, Some(_)) => !wanted,
            (_, None) => !wanted,
        };
        if !keep && may_run.is_none() {
            may_run = Some(allowed()?);
        }
        let refused = may_run
            .as_ref()
            .and_then(|m| m.get(&target.plugin))
            .map(Option::as_deref);
        let runs = refused.is_some_and(|why| why.is_none());
        if keep || !runs {
            // A record is kept only for the code it was made of: one for other code says
            // nothing of what this code offers.
            records.extend(previous.map(|p| match p.code == code {
                true => p.clone(),
                false => not_observed_again(p, code, &target, refused.flatten()),
            }));
            continue;
        }
        asked.push((target, code));
    }
    let made = observe_all(ctx, &asked, remote)?;
    records.extend(made.iter().map(|o| o.record.clone()));
    records.sort_by(|a, b| (&a.plugin, &a.server).cmp(&(&b.plugin, &b.server)));
    Ok((records, made))
}

/// The record of a server whose code changed since `previous` was made and which is not
/// observed now: what it offers is unknown (the lock says why, the same on every machine).
fn not_observed_again(
    previous: &LockedTools,
    code: Sha256Hash,
    target: &Target,
    refused: Option<&str>,
) -> LockedTools {
    let why = match (&target.kind, refused) {
        (TargetKind::Remote { .. }, _) => {
            "its URL changed and it was not asked again (`berth plugins observe --remote`)"
        }
        (_, Some(_)) => {
            "its code changed, and the policy refuses its plugin, so it was not started"
        }
        (_, None) => "its code changed and it was not observed again",
    };
    LockedTools {
        code,
        manifest: None,
        unobserved: Some(why.to_owned()),
        ..previous.clone()
    }
}

/// Observes `asked` (each server with its code digest), `ctx.jobs` at a time: a server may
/// take its whole time bound, so many silent ones cost about one bound per `jobs` of them
/// rather than one each. What each made comes back in `asked`'s order.
fn observe_all(
    ctx: &Context,
    asked: &[(Target, Sha256Hash)],
    remote: Remote,
) -> Result<Vec<Observed>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    // A server whose program is not pinned is recorded as such, not started.
    let started = asked
        .iter()
        .filter(|(t, _)| !matches!(t.kind, TargetKind::Unpinned { .. }))
        .count();
    if started > 0 {
        ctx.printer.status(
            "Observing",
            &format!(
                "{started} MCP server{} (each for at most {}s)",
                if started == 1 { "" } else { "s" },
                berth_review::observe::timeout().as_secs_f64()
            ),
        );
    }
    let next = AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Result<Observed>>>> =
        std::sync::Mutex::new(asked.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..ctx.jobs.clamp(1, asked.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((target, code)) = asked.get(i) else {
                        break;
                    };
                    let observed = observe_one(ctx, target, *code, remote);
                    berth_store::unpoisoned(results.lock())[i] = Some(observed);
                }
            });
        }
    });
    berth_store::unpoisoned(results.lock())
        .drain(..)
        .map(|r| r.expect("every server was observed"))
        .collect()
}

/// Observes one server and keeps its manifest in the store.
fn observe_one(
    ctx: &Context,
    target: &Target,
    code: Sha256Hash,
    remote: Remote,
) -> Result<Observed> {
    let trust = match target.kind {
        TargetKind::Remote { .. } => ToolsTrust::FirstUse,
        _ => ToolsTrust::Pinned,
    };
    let record = |manifest: Option<Sha256Hash>, unobserved: Option<String>| LockedTools {
        plugin: target.plugin.clone(),
        server: target.server.clone(),
        code,
        manifest,
        unobserved,
        trust,
    };
    // Failures as (what the lock records, what is said now).
    let outcome = match &target.kind {
        TargetKind::Pinned(launch) => observe(launch).map_err(|e| (e.reason(), e.to_string())),
        TargetKind::Unpinned { program } => {
            let why = format!(
                "its program `{program}` is neither in the plugin nor a package the lock pins, so what it offers could change under the same lock"
            );
            Err((why.clone(), why))
        }
        TargetKind::Remote { url, headers } => {
            berth_server::mcp_remote::observe(url, headers, remote.env, None)
                .map_err(|why| (why.clone(), why))
        }
    };
    Ok(match outcome {
        Ok(manifest) => {
            let entry = store_manifest(ctx, &manifest)?;
            Observed {
                record: record(Some(entry), None),
                manifest: Some(manifest),
                unpinned: false,
                said: None,
            }
        }
        Err((why, said)) => Observed {
            said: (said != why).then_some(said),
            record: record(None, Some(why)),
            manifest: None,
            unpinned: matches!(target.kind, TargetKind::Unpinned { .. }),
        },
    })
}

/// Puts a manifest in the store (`<hash>-mcp-tools/manifest.json`); returns its hash.
pub fn store_manifest(ctx: &Context, manifest: &Value) -> Result<Sha256Hash> {
    let staging = ctx.store.stage()?;
    let mut text = manifest.to_string();
    text.push('\n');
    std::fs::write(staging.path().join(MANIFEST_FILE), text)
        .context("could not write an observed manifest")?;
    let entry = ctx.store.commit(staging, TOOLS_ENTRY_NAME, None)?;
    Ok(entry.hash)
}

/// The digest of what a server runs: its plugin's hash, the hash of the package a runner
/// line starts (when the lock pins one), and the command line, with the store's path
/// written as `$STORE` so the digest is the same on every machine.
pub(crate) fn code_digest(
    lock: &Lock,
    target: &Target,
    store_root: &std::path::Path,
) -> Sha256Hash {
    use sha2::Digest as _;
    let root = store_root.display().to_string();
    let mut hasher = sha2::Sha256::new();
    let mut part = |text: &str| {
        hasher.update(text.replace(&root, "$STORE").as_bytes());
        hasher.update([0]);
    };
    if let Some(plugin) = lock.plugins.iter().find(|p| p.name == target.plugin) {
        part(&plugin.hash.to_sri());
    }
    for payload in lock
        .payloads
        .iter()
        .filter(|p| p.plugin == target.plugin && p.server == target.server)
    {
        part(&payload.hash.to_sri());
    }
    match &target.kind {
        TargetKind::Pinned(launch) => {
            part(&launch.program);
            for arg in &launch.args {
                part(arg);
            }
            for (key, _) in &launch.env {
                part(key);
            }
        }
        TargetKind::Unpinned { program } => part(program),
        TargetKind::Remote { url, .. } => part(url),
    }
    Sha256Hash::from_bytes(hasher.finalize().into())
}

/// `N tools, N prompts, N resources` of a manifest.
pub fn summary(manifest: &Value) -> String {
    let count = |key: &str| {
        manifest
            .get(key)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    let mut parts = Vec::new();
    for (key, one, many) in [
        ("tools", "tool", "tools"),
        ("prompts", "prompt", "prompts"),
        ("resources", "resource", "resources"),
        (
            "resourceTemplates",
            "resource template",
            "resource templates",
        ),
    ] {
        match count(key) {
            0 => {}
            1 => parts.push(format!("1 {one}")),
            n => parts.push(format!("{n} {many}")),
        }
    }
    if parts.is_empty() {
        "nothing offered".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The policy's `tools` rule, if any, with the file that sets it. Without a policy file
/// there is none, and nothing is read: this is asked on every `lock` and `sync`.
fn rule_of(ctx: &Context) -> Result<Option<(ToolsRule, String)>> {
    if ctx.policy_path.is_none() {
        return Ok(None);
    }
    Ok(ctx
        .governance()?
        .policy
        .tools()
        .map(|(rule, file)| (rule, file.to_owned())))
}

fn rule(ctx: &Context) -> Result<Option<ToolsRule>> {
    Ok(rule_of(ctx)?.map(|(rule, _)| rule))
}

/// Whether locking observes now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Observing {
    /// `--no-observe` or `BERTH_NO_OBSERVE`: nothing is started.
    Off,
    /// berth's default: servers whose code is new or changed.
    ByDefault,
    /// A policy's `tools` rule: every server without a record, even when no code changed.
    ByRule,
}

/// Whether locking observes now: a policy's `tools` rule always does (`--no-observe` is
/// refused under it); otherwise unless `--no-observe` or `BERTH_NO_OBSERVE` says not to.
fn observing(ctx: &Context) -> Result<Observing> {
    match (rule_of(ctx)?, ctx.observe) {
        (Some((rule, file)), false) => Err(crate::context::Failure {
            message: format!(
                "`{file}` says `tools = \"{}\"`: what each MCP server offers must be recorded, so `--no-observe` (or `BERTH_NO_OBSERVE`) cannot be used here",
                rule.as_str()
            ),
            notes: Vec::new(),
        }
        .into()),
        (Some(_), true) => Ok(Observing::ByRule),
        (None, true) => Ok(Observing::ByDefault),
        (None, false) => Ok(Observing::Off),
    }
}

/// Observes the servers of `lock`'s plugins that may run and whose code has no record yet,
/// and returns the lock with the records; `None` when nothing was to be observed. Without
/// a policy's `tools` rule, a lock whose plugins and payloads are `previous`'s starts
/// nothing and reads no store entry; `--no-observe` starts nothing at all.
pub fn recorded(ctx: &Context, previous: Option<&Lock>, lock: &Lock) -> Result<Option<Lock>> {
    // An unchanged lock starts nothing and reads no store entry, unless one of its records
    // was made for other code (a lock merged by hand): that one is observed again.
    let same_code = previous.is_some_and(|p| p.same_code(lock))
        && (lock.tools.is_empty()
            || stale_records(ctx, lock)?.is_none_or(|stale| stale.is_empty()));
    match observing(ctx)? {
        Observing::Off => return Ok(None),
        Observing::ByDefault if same_code => return Ok(None),
        _ if lock.plugins.is_empty() => return Ok(None),
        Observing::ByDefault | Observing::ByRule => {}
    }
    let (tools, made) = observe_lock(
        ctx,
        lock,
        &|| observable(ctx, lock),
        &[],
        Again::Changed,
        Remote::default(),
    )?;
    report(ctx, &made);
    Ok(Some(Lock {
        tools,
        ..lock.clone()
    }))
}

/// One status line or warning per server observed now; the servers not started because
/// no sandbox can be made here are named in `-v` detail and warned about once.
pub fn report(ctx: &Context, made: &[Observed]) {
    for observed in made {
        let r = &observed.record;
        match (&observed.manifest, &r.unobserved) {
            (Some(manifest), _) => ctx.printer.status(
                "Observed",
                &format!(
                    "MCP server `{}` of `{}`: {}",
                    r.server,
                    r.plugin,
                    summary(manifest)
                ),
            ),
            (None, Some(why)) if observed.unpinned || why == NO_SANDBOX => ctx.printer.detail(
                "Unobserved",
                &format!("MCP server `{}` of `{}`: {why}", r.server, r.plugin),
            ),
            (None, Some(why)) => ctx.printer.warn(&format!(
                "MCP server `{}` of plugin `{}` was not observed: {}",
                r.server,
                r.plugin,
                observed.said.as_deref().unwrap_or(why)
            )),
            (None, None) => {}
        }
    }
    say_no_sandbox(ctx, made);
}

/// Once per run: how many servers were not started because no sandbox can be made here,
/// why, and how to make one (or to start them anyway).
fn say_no_sandbox(ctx: &Context, made: &[Observed]) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let unstarted: Vec<&Observed> = made
        .iter()
        .filter(|o| o.manifest.is_none() && o.record.unobserved.as_deref() == Some(NO_SANDBOX))
        .collect();
    let once = |_: &&&Observed| !SAID.swap(true, std::sync::atomic::Ordering::Relaxed);
    let Some(first) = unstarted.first().filter(once) else {
        return;
    };
    let n = unstarted.len();
    ctx.printer.warn(&format!(
        "{n} MCP server{} not started, so not observed: {}; or pass `--observe-unsandboxed` to start {} as you, only for plugins you trust",
        if n == 1 { " was" } else { "s were" },
        first.said.as_deref().unwrap_or(NO_SANDBOX),
        if n == 1 { "it" } else { "them" },
    ));
}
