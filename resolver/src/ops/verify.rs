//! `verify`: fetch every locked plugin afresh, bypassing store and cache, and compare.

use std::sync::Arc;

use berth_lockfile_schema::{Lock, Manifest, PluginRequest, Sha256Hash};
use berth_store::Store;

use crate::context::{Env, Reporter, Settings, run_parallel};
use crate::error::ResolveError;
use crate::sources::kind_of;

/// The result of verifying one plugin.
#[derive(Debug)]
pub struct VerifyOutcome {
    /// The plugin's name.
    pub name: String,
    /// What the lock says.
    pub expected: Sha256Hash,
    /// What was found.
    pub status: VerifyStatus,
}

/// Whether a plugin fetched afresh matches its lock entry.
#[derive(Debug)]
pub enum VerifyStatus {
    /// It hashes to the locked hash.
    Ok,
    /// It hashes to something else.
    Mismatch {
        /// The hash found.
        actual: Sha256Hash,
    },
    /// It could not be fetched or hashed (shared: plugins of one commit share a fetch, and
    /// so its failure).
    Failed(Arc<ResolveError>),
}

/// Fetches every locked plugin afresh from its source, bypassing the store and the git
/// cache, and compares its hash with the lock.
///
/// Git plugins are fetched the way `lock` fetches them, once per repository: one throw-away
/// repository per remote for this run, each distinct commit fetched into it once (the
/// remotes in parallel), then every plugin of that commit hashed from its objects.
pub fn verify_plugins(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
    manifest: Option<&Manifest>,
) -> Vec<VerifyOutcome> {
    let env = Env::new(store, settings, reporter);
    run_parallel(&lock.plugins, settings.jobs, |i, locked| {
        let request: Option<&PluginRequest> = manifest
            .and_then(|m| m.plugins.get(i))
            .filter(|r| locked.satisfies(r));
        // Its npm registry signature, from the lock's keys, before it is fetched.
        let hashed = match crate::payload::source_refusal(&env, locked, &lock.registry_keys) {
            Some(refused) => Err(Arc::new(refused.into())),
            None => kind_of(&locked.pin)
                .load(&env, locked, request)
                .fresh_hash(),
        };
        let status = VerifyStatus::of(hashed, &locked.hash);
        // Seen now: the pin gives the entry (whether or not the store has it yet).
        if matches!(status, VerifyStatus::Ok) {
            crate::sources::record_pin(&env, locked);
        }
        VerifyOutcome {
            name: locked.name.clone(),
            expected: locked.hash,
            status,
        }
    })
}

impl VerifyStatus {
    /// What fetching afresh found, against the `expected` hash.
    fn of(hashed: Result<Sha256Hash, Arc<ResolveError>>, expected: &Sha256Hash) -> Self {
        match hashed {
            Ok(actual) if actual == *expected => VerifyStatus::Ok,
            Ok(actual) => VerifyStatus::Mismatch { actual },
            Err(e) => VerifyStatus::Failed(e),
        }
    }
}

/// Fetches every locked payload (an MCP server's or hook's package closure) afresh from
/// its registry, bypassing the store and the substituters, and compares its NAR hash with
/// the lock; `name` is `PACKAGE@VERSION (plugin PLUGIN)`.
pub fn verify_payloads(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
) -> Vec<VerifyOutcome> {
    let env = Env::new(store, settings, reporter);
    run_parallel(&lock.payloads, settings.jobs, |_, payload| {
        // Its registry signatures, from the lock's keys, before it is fetched.
        let refused = crate::payload::refusals_of(&env, payload, &lock.registry_keys);
        let hashed = match refused.into_iter().next() {
            Some(refused) => Err(Arc::new(refused.into())),
            None => crate::payload::fresh_payload_hash(&env, payload).map_err(Arc::new),
        };
        let status = VerifyStatus::of(hashed, &payload.hash);
        VerifyOutcome {
            name: format!(
                "{}@{} (plugin {})",
                payload.package, payload.version, payload.plugin
            ),
            expected: payload.hash,
            status,
        }
    })
}

/// Fetches the locked agent's source tree and wheels afresh, bypassing the store, and
/// compares each with the lock. Empty when the lock has no agent.
pub fn verify_agent(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
    manifest: Option<&Manifest>,
) -> Vec<crate::agent::AgentVerifyOutcome> {
    let Some(agent) = &lock.agent else {
        return Vec::new();
    };
    let env = Env::new(store, settings, reporter);
    let request = manifest
        .and_then(|m| m.agent.as_ref())
        .filter(|r| agent.satisfies(r));
    crate::agent::verify_agent(&env, agent, request)
}
