//! `verify`: fetch every locked plugin afresh, bypassing store and cache, and compare.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use berth_lockfile_schema::{Lock, LockedPlugin, Manifest, Pin, PluginRequest, Sha256Hash};
use berth_store::{Staging, Store};
use gix::ObjectId;

use crate::context::*;
use crate::context::{Reporter, Settings};
use crate::error::ResolveError;
use crate::sources::git::{GitDb, Remote};

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
    let ctx = Ctx::new(store, settings, reporter);
    let requests: Vec<Option<&PluginRequest>> = lock
        .plugins
        .iter()
        .enumerate()
        .map(|(i, locked)| {
            manifest
                .and_then(|m| m.plugins.get(i))
                .filter(|r| locked.satisfies(r))
        })
        .collect();
    let mut remotes: Vec<FreshRemote> = Vec::new();
    let plans: Vec<Plan> = lock
        .plugins
        .iter()
        .zip(&requests)
        .map(|(locked, request)| match &locked.pin {
            Pin::Git(_) => match ctx.fresh_want(locked, *request) {
                Ok(want) => FreshRemote::plan(&mut remotes, want),
                Err(e) => Plan::Failed(Arc::new(e)),
            },
            Pin::Local(_) | Pin::Archive(_) => Plan::Other,
        })
        .collect();
    let fetched = run_parallel(&remotes, settings.jobs, |_, remote| ctx.fetch_fresh(remote));
    run_parallel(&lock.plugins, settings.jobs, |i, locked| {
        let hashed = match &plans[i] {
            Plan::Other => ctx.fresh_hash(locked, requests[i]).map_err(Arc::new),
            Plan::Failed(e) => Err(e.clone()),
            Plan::Git { remote, id, subdir } => fetched[*remote].hash(*id, subdir.as_deref()),
        };
        let status = match hashed {
            Ok(actual) if actual == locked.hash => VerifyStatus::Ok,
            Ok(actual) => VerifyStatus::Mismatch { actual },
            Err(e) => VerifyStatus::Failed(e),
        };
        VerifyOutcome {
            name: locked.name.clone(),
            expected: locked.hash,
            status,
        }
    })
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
    let ctx = Ctx::new(store, settings, reporter);
    run_parallel(&lock.payloads, settings.jobs, |_, payload| {
        let status = match ctx.fresh_payload_hash(payload) {
            Ok(actual) if actual == payload.hash => VerifyStatus::Ok,
            Ok(actual) => VerifyStatus::Mismatch { actual },
            Err(e) => VerifyStatus::Failed(Arc::new(e)),
        };
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

/// How `verify` gets a locked plugin.
pub(crate) enum Plan {
    /// A local folder or an archive: on its own.
    Other,
    /// A git plugin: commit `id` of `remotes[remote]`, then the `subdir` folder of it.
    Git {
        remote: usize,
        id: ObjectId,
        subdir: Option<String>,
    },
    /// A git plugin whose remote could not even be named (an unset `${VAR}`, offline).
    Failed(Arc<ResolveError>),
}

/// A locked git plugin, as `verify` fetches it.
pub(crate) struct FreshWant {
    pub(crate) remote: Remote,
    pub(crate) id: ObjectId,
    pub(crate) subdir: Option<String>,
    pub(crate) hint: Option<String>,
}

/// One remote and the distinct commits `verify` needs from it (each with a ref to fall
/// back on when the server will not send a commit by id).
pub(crate) struct FreshRemote {
    remote: Remote,
    commits: Vec<(ObjectId, Option<String>)>,
}

impl FreshRemote {
    /// Adds `want` to the remote it names (a new one the first time) and returns the plan
    /// to hash it from there.
    fn plan(remotes: &mut Vec<FreshRemote>, want: FreshWant) -> Plan {
        let index = match remotes
            .iter()
            .position(|r| r.remote.url.fetch == want.remote.url.fetch)
        {
            Some(index) => index,
            None => {
                remotes.push(FreshRemote {
                    remote: want.remote,
                    commits: Vec::new(),
                });
                remotes.len() - 1
            }
        };
        let commits = &mut remotes[index].commits;
        match commits.iter_mut().find(|(id, _)| *id == want.id) {
            Some((_, hint)) => {
                if hint.is_none() {
                    *hint = want.hint;
                }
            }
            None => commits.push((want.id, want.hint)),
        }
        Plan::Git {
            remote: index,
            id: want.id,
            subdir: want.subdir,
        }
    }
}

/// A remote's throw-away repository after `verify` fetched into it.
pub(crate) struct FreshRepo {
    /// Holds the repository; removed when `verify` is done.
    staging: Result<Staging, Arc<ResolveError>>,
    /// Whether each commit arrived.
    commits: HashMap<ObjectId, Result<(), Arc<ResolveError>>>,
}

impl FreshRepo {
    fn dir(staging: &Staging) -> PathBuf {
        staging.path().join("repo")
    }

    /// The NAR hash of the `subdir` folder of commit `id`, from this repository's objects.
    fn hash(&self, id: ObjectId, subdir: Option<&str>) -> Result<Sha256Hash, Arc<ResolveError>> {
        let staging = self.staging.as_ref().map_err(Arc::clone)?;
        if let Some(Err(e)) = self.commits.get(&id) {
            return Err(e.clone());
        }
        let hash = || -> Result<Sha256Hash, ResolveError> {
            // Each worker opens the repository for itself (a gix repository is per thread).
            let db = GitDb::temporary(&Self::dir(staging))?;
            let (tree, _) = db.plugin_tree(id, subdir)?;
            Ok(db.nar_hash(tree, id)?.hash)
        };
        hash().map_err(Arc::new)
    }
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
    let ctx = Ctx::new(store, settings, reporter);
    let request = manifest
        .and_then(|m| m.agent.as_ref())
        .filter(|r| agent.satisfies(r));
    ctx.verify_agent(agent, request)
}

impl Ctx<'_> {
    /// What `verify` fetches for a locked git plugin: its remote, commit and folder.
    pub(crate) fn fresh_want(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<FreshWant, ResolveError> {
        let Pin::Git(berth_lockfile_schema::GitPin { rev, .. }) = &locked.pin else {
            unreachable!("only called for git pins");
        };
        let source = Self::source_of(locked, request)?;
        let (remote, _) = self.remote(&source)?;
        self.require_network(|| format!("`{}`", remote.url.shown))?;
        Ok(FreshWant {
            remote,
            id: ObjectId::from(rev.to_bytes()),
            subdir: subdir_of(locked, &source),
            hint: hint_ref(locked).map(str::to_owned),
        })
    }

    /// Fetches a remote's commits into a new throw-away repository: `verify` must not trust
    /// anything already cached. Each commit is fetched once (or not at all when an earlier
    /// fetch of this run brought it).
    pub(crate) fn fetch_fresh(&self, fresh: &FreshRemote) -> FreshRepo {
        let mut commits = HashMap::new();
        let staging = self.store.stage().map_err(|e| Arc::new(e.into()));
        let db = staging
            .as_ref()
            .map_err(Arc::clone)
            .and_then(|s| GitDb::temporary(&FreshRepo::dir(s)).map_err(Arc::new));
        for (id, hint) in &fresh.commits {
            let fetched = match &db {
                Err(e) => Err(e.clone()),
                Ok(db) if db.has_commit(*id) => Ok(()),
                Ok(db) => db
                    .fetch_commit(&fresh.remote, *id, hint.as_deref(), self.reporter)
                    .map_err(Arc::new),
            };
            commits.insert(*id, fetched);
        }
        FreshRepo { staging, commits }
    }

    /// Fetches one locked entry afresh, bypassing the store and the git cache, and hashes it.
    pub(crate) fn fresh_hash(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Sha256Hash, ResolveError> {
        crate::sources::of(locked.pin.kind()).fresh_hash(self, locked, request)
    }
}
