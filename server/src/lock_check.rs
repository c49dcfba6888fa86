//! What a lock must pass on this server, whoever wrote it: a lock posted with a request and
//! one read from a bucket other servers (or anyone with its credentials) can write.

use berth_lockfile_schema::governance::SignerChange;
use berth_lockfile_schema::{AgentOrigin, AgentRequest, Lock};

use crate::api::MAX_PLUGINS;
use crate::error::AppError;

/// The source policy for an agent package: a git or archive source is a plugin source; a
/// requirement comes from the server's own index, and is only checked for credentials.
pub(crate) fn check_agent_source(
    policy: &crate::policy::SourcePolicy,
    written: &str,
    origin: &AgentOrigin,
) -> Result<(), AppError> {
    match origin {
        AgentOrigin::Tree(request) => policy
            .check(written, request.parsed_source())
            .map_err(|e| AppError::new(e.status, e.code, format!("agent: {}", e.message))),
        AgentOrigin::Index { .. } => policy.check_literal(written),
    }
}

/// A lockfile's limits and sources against this server's rules: a posted lock, and one read
/// from a bucket others can write, pass exactly the same checks.
pub(crate) fn check_lock_against(
    policy: &crate::policy::SourcePolicy,
    lock: &berth_lockfile_schema::Lock,
) -> Result<(), AppError> {
    if lock.plugins.len() > MAX_PLUGINS {
        return Err(AppError::bad_request(format!(
            "the lockfile has {} plugins; a conversation may have at most {MAX_PLUGINS}",
            lock.plugins.len()
        )));
    }
    crate::input::check_lock(lock)?;
    for plugin in &lock.plugins {
        let source = berth_lockfile_schema::Source::parse(&plugin.source)
            .map_err(|e| AppError::bad_request(e.message))?;
        policy.check(&plugin.source, &source)?;
    }
    if let Some(agent) = &lock.agent {
        let request = AgentRequest::new(&agent.source, agent.git_ref.as_deref(), None, None)
            .map_err(|(_, m)| AppError::bad_request(format!("agent: {m}")))?;
        check_agent_source(policy, &agent.source, request.origin())?;
    }
    Ok(())
}

/// What may run on this server (`berth serve --policy`, with its approvals file): the same
/// policy the CLI applies, checked when a plugin set is first built for a lock (a start, or
/// a restored conversation's set), so a lock that does not pass is never served.
#[derive(Debug, Clone, Default)]
pub struct RunPolicy {
    /// The effective policy (berth's defaults without `--policy`).
    pub policy: berth_lockfile_schema::governance::Policy,
    /// The approvals beside it.
    pub approvals: berth_lockfile_schema::governance::Approvals,
    /// The approvals file's name, as clients are told it (`None`: without `--policy`, the
    /// server reads no approvals).
    pub approvals_file: Option<String>,
    /// The time conversations lock at, for the policy's `exclude-newer` spans (`None`: the
    /// clock's; the CLI's `$BERTH_NOW` sets it, for tests and reproduction).
    pub now: Option<berth_lockfile_schema::release_age::Timestamp>,
    /// Under `tools = "pinned"`, fill `${VAR}` in remote MCP servers' headers from the
    /// server's environment when asking them again (`--tools-env`); otherwise such a header
    /// is not sent.
    pub tools_env: bool,
}

/// Whether the policy says `tools = "pinned"`: each start asks the MCP servers again.
pub(crate) fn tools_pinned(run: &RunPolicy) -> bool {
    run.policy.tools().map(|(rule, _)| rule)
        == Some(berth_lockfile_schema::governance::ToolsRule::Pinned)
}

/// Checks a built set's plugins against the server's [`RunPolicy`]: sources,
/// capabilities, approvals and hidden Unicode (in the plugins `store` does not remember as
/// scanned clean, as the CLI's `show` and `run` do; those found clean are remembered). A
/// violation is 403 `policy_denied`, naming plugin, capability, rule and policy file.
pub(crate) fn check_run_policy(
    run: &RunPolicy,
    store: &berth_store::Store,
    fetch: &std::sync::Arc<berth_transport::policy::FetchPolicy>,
    set: &berth_runtime::PluginSet,
) -> Result<(), AppError> {
    use berth_review::{UnderReview, check_plugins, load_manifests, remember_clean, scanned_clean};
    let tools = load_manifests(store, &set.tools);
    let plugins: Vec<UnderReview<'_>> = set
        .plugins
        .iter()
        .map(|p| UnderReview {
            locked: &p.locked,
            entry: &p.path,
            scan: !scanned_clean(store, &p.locked),
            payloads: &set.payloads,
            tools: &tools,
            read: p.model.as_deref(),
            // A posted lock's record of where a plugin was picked from is the client's
            // word, so on this server every plugin matches `[sources]` by its own source.
            marketplaces: &[],
        })
        .collect();
    let checked = check_plugins(&run.policy, &run.approvals, &plugins)
        .map_err(|e| AppError::from_runtime(&e))?;
    remember_clean(store, &plugins, &checked);
    if checked.violations.is_empty() && tools_pinned(run) {
        // Plugin code runs here, on the server's host, and remote servers are asked from
        // it (their addresses checked as a source's are): only under the policy's opt-in.
        let ask = |url: &str, headers: &[(String, String)]| {
            crate::mcp_remote::observe(url, headers, run.tools_env, Some(fetch))
        };
        let problems = berth_review::observe::recheck(
            set,
            store,
            berth_review::observe::timeout(),
            Some(&ask),
        );
        if !problems.is_empty() {
            return Err(AppError::new(
                axum::http::StatusCode::FORBIDDEN,
                "tools_changed",
                format!(
                    "the policy says `tools = \"pinned\"` and {}",
                    problems.join("; ")
                ),
            ));
        }
    }
    match checked.violations.as_slice() {
        [] => Ok(()),
        violations => Err(AppError::new(
            axum::http::StatusCode::FORBIDDEN,
            "policy_denied",
            violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )),
    }
}

/// What a lock must pass before its set is built, whoever made it: the policy's
/// `exclude-newer` and `[sources] signer_change`, whose `warn` is logged here (once per lock
/// the server builds a set for).
pub(crate) fn check_lock_rules(run: &RunPolicy, lock: &Lock) -> Result<(), AppError> {
    check_release_age(run, lock)?;
    check_signer_change(run, lock)?;
    let changes = berth_review::signer_changes(&run.policy, &run.approvals, lock);
    for change in changes.iter().filter(|c| c.rule == SignerChange::Warn) {
        tracing::warn!(
            "plugin `{}`: {} [`{}` in `{}`]",
            change.plugin.name,
            change.describe(),
            change.rule_text(),
            change.file
        );
    }
    Ok(())
}

/// `[sources] signer_change` (`approve` by default, with or without `--policy`) on a lock
/// this server takes or makes, as the CLI's `sync` and `run` apply it, with the server's
/// approvals: a change of signer no approval covers is refused under `approve`, every one
/// under `deny` (403 `policy_denied`, naming the plugin and its signers before and after).
pub(crate) fn check_signer_change(run: &RunPolicy, lock: &Lock) -> Result<(), AppError> {
    let violations = berth_review::signer_violations(&run.policy, &run.approvals, lock);
    if violations.is_empty() {
        return Ok(());
    }
    let mut message = violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if violations.iter().any(|v| v.needs_approval) {
        message.push_str(&match &run.approvals_file {
            Some(file) => format!(
                "; this server reads its approvals from `{file}` when it starts: record the approval there and restart it"
            ),
            None => "; this server reads no approvals (it runs without `--policy` or `--approvals`): approve it where the lock is made (`berth plugins approve NAME`), then serve with `--approvals` naming that `plugins.approvals.toml`".to_owned(),
        });
    }
    Err(AppError::new(
        axum::http::StatusCode::FORBIDDEN,
        "policy_denied",
        message,
    ))
}

/// Under the policy's `exclude-newer`, a lock must have been made under a cutoff at or
/// before the one the policy asks now: a posted lock made without it, or under a later
/// one, may pin what the policy holds back (403 `policy_denied`). What this server locks
/// itself is locked under it, so it passes.
fn check_release_age(run: &RunPolicy, lock: &Lock) -> Result<(), AppError> {
    use berth_lockfile_schema::release_age::{Timestamp, made_too_late};
    let now = run.now.unwrap_or_else(Timestamp::now);
    match made_too_late(&run.policy.release_age(), lock.exclude_newer.as_ref(), now) {
        None => Ok(()),
        Some(why) => Err(AppError::new(
            axum::http::StatusCode::FORBIDDEN,
            "policy_denied",
            format!("the lockfile {why}; lock it under that cutoff"),
        )),
    }
}
