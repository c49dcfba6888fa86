//! The three operations the CLI and the server run over a whole manifest or lock: lock,
//! sync and verify. Each works on entries in parallel and reports every failure, not just
//! the first.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use berth_lockfile_schema::{
    Lock, LockedPlugin, Manifest, Pin, PluginRequest, Sha256Hash, Source, SourceKind,
};
use berth_store::{Staging, Store, StoreEntry};
use gix::ObjectId;

use crate::archive::{self, ArchiveSource};
use crate::error::{EntryError, ResolveError};
use crate::git::{GitDb, Remote, Want};
use crate::local::{LOCAL_EXCLUDE, LOCAL_EXCLUDED, existing_dir, local_dir, name_and_hash};
use crate::meta::plugin_name_from_manifest;
use crate::skipped::Skipped;
use crate::url::{SourceUrl, cache_dir_name, git_url, repo_name};
use crate::{Network, Reporter, Settings};

/// Which locked pins `lock` may move.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Upgrade {
    /// Keep every pin whose request is unchanged (`berth plugins lock`).
    #[default]
    Nothing,
    /// Re-resolve every entry (`--upgrade`).
    All,
    /// Re-resolve the entries with these plugin names (`--upgrade-plugin NAME`).
    Plugins(Vec<String>),
}

/// How to run `lock`.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Which pins may move.
    pub upgrade: Upgrade,
    /// The manifest's name in messages (`plugins.toml`).
    pub manifest_label: String,
    /// What to do with local folders whose request is unchanged.
    pub local: LocalRelock,
}

/// Whether locking re-hashes local folders that are already locked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LocalRelock {
    /// Re-hash them and lock their current content (`berth plugins lock`).
    #[default]
    Rehash,
    /// Keep their locked hash; `sync` then reports a changed folder instead of silently
    /// locking it (the lock that `sync` makes when the manifest changed).
    Keep,
}

/// The new lock and what it took to make it.
#[derive(Debug, Clone)]
pub struct LockOutcome {
    /// The lock, one entry per manifest entry, in order.
    pub lock: Lock,
    /// How many entries were resolved afresh (the rest kept their pins).
    pub resolved: usize,
}

/// Resolves the manifest into a lock, keeping the pins of `previous` entries whose request
/// is unchanged. Only new, changed or upgraded git entries touch the network; local folders
/// are always re-hashed (they have no other pin).
pub fn lock_plugins(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    manifest: &Manifest,
    previous: Option<&Lock>,
    options: &LockOptions,
) -> Result<LockOutcome, Vec<EntryError>> {
    if let Upgrade::Plugins(names) = &options.upgrade {
        let unknown: Vec<EntryError> = names
            .iter()
            .filter(|n| {
                !previous.is_some_and(|l| {
                    l.plugins.iter().any(|p| &p.name == *n)
                        || l.agent.as_ref().is_some_and(|a| &a.package == *n)
                })
            })
            .map(|n| EntryError {
                label: format!("`--upgrade-plugin {n}`"),
                error: Box::new(ResolveError::UnknownPlugin { name: n.clone() }),
            })
            .collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
    }
    let mut used = vec![false; previous.map_or(0, |l| l.plugins.len())];
    let kept: Vec<Option<LockedPlugin>> = manifest
        .plugins
        .iter()
        .enumerate()
        .map(|(i, request)| {
            let previous = previous?;
            // Prefer the entry at the same position; an entry that moved keeps its pin too.
            let index = std::iter::once(i)
                .chain(0..previous.plugins.len())
                .find(|&j| {
                    j < previous.plugins.len() && !used[j] && previous.plugins[j].satisfies(request)
                })?;
            let locked = &previous.plugins[index];
            let upgrade = match &options.upgrade {
                Upgrade::Nothing => false,
                Upgrade::All => true,
                Upgrade::Plugins(names) => names.contains(&locked.name),
            };
            if upgrade {
                return None;
            }
            used[index] = true;
            Some(locked.clone())
        })
        .collect();
    let resolved = AtomicUsize::new(0);
    let ctx = Ctx::new(store, settings, reporter);
    let results = run_parallel(&manifest.plugins, settings.jobs, |i, request| {
        let label = || entry_label(&options.manifest_label, request);
        let result = match (&kept[i], request.parsed_source().kind()) {
            (Some(locked), SourceKind::Local) if options.local == LocalRelock::Rehash => {
                ctx.lock_local(request, Some(locked))
            }
            (Some(locked), _) => Ok(Resolved {
                plugin: locked.clone(),
                skipped: Vec::new(),
            }),
            (None, _) => {
                resolved.fetch_add(1, Ordering::Relaxed);
                ctx.resolve_new(request)
            }
        }
        .map(|resolved| {
            // Only what this run resolved: a kept pin was warned about when it was locked.
            for skipped in &resolved.skipped {
                ctx.reporter.warn(&skipped.message(&resolved.plugin.name));
            }
            resolved.plugin
        });
        result.map_err(|error| EntryError {
            label: label(),
            error: Box::new(error),
        })
    });
    let (plugins, mut errors) = split(results);
    let agent = match &manifest.agent {
        None => None,
        Some(request) => {
            let kept = previous
                .and_then(|l| l.agent.as_ref())
                .filter(|a| a.satisfies(request))
                .filter(|a| match &options.upgrade {
                    Upgrade::Nothing => true,
                    Upgrade::All => false,
                    Upgrade::Plugins(names) => !names.contains(&a.package),
                });
            match kept {
                Some(agent) => Some(agent.clone()),
                None if !errors.is_empty() => None,
                None => {
                    resolved.fetch_add(1, Ordering::Relaxed);
                    match ctx.lock_agent(request) {
                        Ok(agent) => Some(agent),
                        Err(error) => {
                            errors.push(EntryError {
                                label: format!(
                                    "{}:{}: `[agent]` `{}`",
                                    options.manifest_label,
                                    request.line,
                                    request.display_source()
                                ),
                                error: Box::new(error),
                            });
                            None
                        }
                    }
                }
            }
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(LockOutcome {
        lock: Lock { plugins, agent },
        resolved: resolved.into_inner(),
    })
}

/// How `sync` treats local folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalCheck {
    /// Re-hash each local folder and fail if it no longer matches the lock.
    Rehash,
    /// Trust the store copy when there is one (`--frozen`).
    TrustStore,
}

/// What `sync` did.
#[derive(Debug, Clone)]
pub struct SyncOutcome {
    /// The store entry of every locked plugin, in lock order.
    pub entries: Vec<StoreEntry>,
    /// How many entries were added to the store by this run.
    pub added: usize,
}

/// Makes every locked plugin present in the store, verified against the lock. `manifest`
/// (when the caller read one) supplies sources with credentials the lock leaves out.
pub fn sync_plugins(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
    manifest: Option<&Manifest>,
    local: LocalCheck,
) -> Result<SyncOutcome, Vec<EntryError>> {
    // The common case, a store that already has everything: no threads, no clean-up.
    let present: Option<Vec<StoreEntry>> = lock
        .plugins
        .iter()
        .map(|p| match (&p.pin, local) {
            (Pin::Local { .. }, LocalCheck::Rehash) => None,
            _ => store.lookup(&p.hash, &p.name),
        })
        .collect();
    let agent_present = lock
        .agent
        .as_ref()
        .is_none_or(|a| berth_runtime::agent_env::agent_in_store(store, a));
    if let Some(entries) = present
        && agent_present
    {
        return Ok(SyncOutcome { entries, added: 0 });
    }
    let ctx = Ctx::new(store, settings, reporter);
    // Staging folders of syncs that were killed would otherwise pile up in `tmp/`.
    if let Err(e) = store.clean_tmp() {
        reporter.warn(&format!("could not clean the store's `tmp/`: {e}"));
    }
    let added = AtomicUsize::new(0);
    let results = run_parallel(&lock.plugins, settings.jobs, |i, locked| {
        let request = manifest
            .and_then(|m| m.plugins.get(i))
            .filter(|r| locked.satisfies(r));
        ctx.sync_one(locked, request, local, &added)
            .map_err(|error| EntryError {
                label: format!("plugin `{}`", locked.name),
                error: Box::new(error),
            })
    });
    let (entries, mut errors) = split(results);
    if let Some(agent) = &lock.agent {
        let request = manifest
            .and_then(|m| m.agent.as_ref())
            .filter(|r| agent.satisfies(r));
        if let Err(error) = ctx.sync_agent(agent, request, &added) {
            errors.push(EntryError {
                label: format!("agent `{}`", agent.package),
                error: Box::new(error),
            });
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(SyncOutcome {
        entries,
        added: added.into_inner(),
    })
}

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
            Pin::Git { .. } => match ctx.fresh_want(locked, *request) {
                Ok(want) => FreshRemote::plan(&mut remotes, want),
                Err(e) => Plan::Failed(Arc::new(e)),
            },
            Pin::Local { .. } | Pin::Archive { .. } => Plan::Other,
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

/// How `verify` gets a locked plugin.
enum Plan {
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
struct FreshWant {
    remote: Remote,
    id: ObjectId,
    subdir: Option<String>,
    hint: Option<String>,
}

/// One remote and the distinct commits `verify` needs from it (each with a ref to fall
/// back on when the server will not send a commit by id).
struct FreshRemote {
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
struct FreshRepo {
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
) -> Vec<crate::AgentVerifyOutcome> {
    let Some(agent) = &lock.agent else {
        return Vec::new();
    };
    let ctx = Ctx::new(store, settings, reporter);
    let request = manifest
        .and_then(|m| m.agent.as_ref())
        .filter(|r| agent.satisfies(r));
    ctx.verify_agent(agent, request)
}

fn entry_label(manifest: &str, request: &PluginRequest) -> String {
    format!(
        "{manifest}:{}: `{}`",
        request.line,
        request.display_source()
    )
}

pub(crate) struct Ctx<'a> {
    pub(crate) store: &'a Store,
    pub(crate) settings: &'a Settings,
    pub(crate) reporter: &'a dyn Reporter,
    /// Resolutions made since this run started (by it, or by a concurrent run sharing
    /// them): entries on one repository share one ref listing and one fetch.
    memo: SharedResolutions,
    started: Instant,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        store: &'a Store,
        settings: &'a Settings,
        reporter: &'a dyn Reporter,
    ) -> Self {
        Self {
            store,
            settings,
            reporter,
            memo: settings.shared.clone().unwrap_or_default(),
            started: Instant::now(),
        }
    }
}

/// Ref resolutions and tag listings, keyed by git cache, shared by the lock runs of one
/// process. A run only reuses what was resolved after it started, which is as fresh as
/// resolving again: concurrent runs (a server starting many conversations) then share one
/// listing and one fetch per repository, and a later run still sees upstream's changes.
#[derive(Debug, Clone, Default)]
pub struct SharedResolutions {
    refs: Arc<Mutex<HashMap<RefKey, (Instant, ObjectId)>>>,
    tags: Arc<Mutex<HashMap<String, (Instant, TagList)>>>,
}

/// A git cache and a ref in it (`""`: the default branch).
type RefKey = (String, String);
/// Tag names and the commits they point to.
type TagList = Vec<(String, ObjectId)>;

impl SharedResolutions {
    fn rev(&self, key: &(String, String), since: Instant) -> Option<ObjectId> {
        lock_ignoring_poison(&self.refs)
            .get(key)
            .filter(|(at, _)| *at >= since)
            .map(|(_, id)| *id)
    }

    fn remember_rev(&self, key: (String, String), id: ObjectId) {
        lock_ignoring_poison(&self.refs).insert(key, (Instant::now(), id));
    }

    fn tags(&self, cache: &str, since: Instant) -> Option<Vec<(String, ObjectId)>> {
        lock_ignoring_poison(&self.tags)
            .get(cache)
            .filter(|(at, _)| *at >= since)
            .map(|(_, tags)| tags.clone())
    }

    fn remember_tags(&self, cache: &str, tags: Vec<(String, ObjectId)>) {
        lock_ignoring_poison(&self.tags).insert(cache.to_owned(), (Instant::now(), tags));
    }
}

/// A plugin `lock` resolved, and the files in it the runtime will skip.
struct Resolved {
    plugin: LockedPlugin,
    skipped: Vec<Skipped>,
}

impl Ctx<'_> {
    /// Pins a request afresh (for the agent's source tree too).
    pub(crate) fn lock_new(&self, request: &PluginRequest) -> Result<LockedPlugin, ResolveError> {
        self.resolve_new(request).map(|r| r.plugin)
    }

    fn resolve_new(&self, request: &PluginRequest) -> Result<Resolved, ResolveError> {
        match request.parsed_source().kind() {
            SourceKind::Local => self.lock_local(request, None),
            SourceKind::Git => self.lock_git(request),
            SourceKind::Archive => self.lock_archive(request),
        }
    }

    /// Hashes a local folder; the files the runtime will skip are looked for only when it is
    /// new or changed.
    fn lock_local(
        &self,
        request: &PluginRequest,
        previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        let Source::Local { path } = request.parsed_source() else {
            unreachable!("only called for local sources");
        };
        let dir = existing_dir(&local_dir(path, self.settings))?;
        let (name, hash) = name_and_hash(&dir)?;
        check_pins(request, &name, &hash)?;
        if previous.is_some_and(|p| p.hash != hash) {
            self.reporter.status(
                "Updating",
                &format!("`{name}` ({path}): its content changed"),
            );
        }
        let skipped = if previous.is_some_and(|p| p.hash == hash) {
            Vec::new()
        } else {
            crate::skipped::scan_dir(&dir, LOCAL_EXCLUDED)?
        };
        Ok(Resolved {
            plugin: LockedPlugin {
                name,
                source: request.display_source(),
                git_ref: None,
                version: None,
                resolved_ref: None,
                repo_path: None,
                pin: Pin::Local { path: path.clone() },
                hash,
            },
            skipped,
        })
    }

    fn remote(&self, source: &Source) -> Result<(Remote, String), ResolveError> {
        let raw = git_url(source, &self.settings.github_url).expect("only called for git sources");
        let url = SourceUrl::new(&raw)?;
        crate::url::refuse_plain_http_password(&url)?;
        if let (Some(policy), Some(parsed)) = (&self.settings.policy, url.parsed()) {
            policy.check(parsed).map_err(|why| ResolveError::Refused {
                url: url.shown.clone(),
                why,
            })?;
        }
        let remote = Remote {
            url,
            policy: self.settings.policy.clone(),
            home: self.settings.home_dir.clone(),
            cancel: self.settings.cancel.clone(),
        };
        Ok((remote, cache_dir_name(&raw)))
    }

    fn lock_git(&self, request: &PluginRequest) -> Result<Resolved, ResolveError> {
        let (remote, cache) = self.remote(request.parsed_source())?;
        let db = GitDb::open(self.store, &cache, &remote.url.shown, self.reporter)?;
        // A `version` range becomes the tag it picks, then resolves like `ref = "<tag>"`.
        let resolved_ref = match &request.version {
            Some(range) => Some(self.pick_tag(&db, &remote, &cache, range)?),
            None => None,
        };
        let wanted = resolved_ref
            .as_ref()
            .map(|tag| format!("refs/tags/{tag}"))
            .or_else(|| request.git_ref.clone());
        let memo_key = (cache.clone(), wanted.clone().unwrap_or_default());
        let memo = self.memo.rev(&memo_key, self.started);
        let rev = match (memo, wanted.as_deref()) {
            (Some(id), _) => id,
            (None, Some(r)) if let Some(commit) = berth_lockfile_schema::CommitId::parse(r) => {
                let id = ObjectId::from(commit.to_bytes());
                if !db.has_commit(id) {
                    self.require_network(|| format!("commit `{r}` of `{}`", remote.url.shown))?;
                    db.fetch_commit(&remote, id, None, self.reporter)?;
                }
                id
            }
            (None, other) => {
                let want = other.map_or(Want::DefaultBranch, |r| Want::Named(r.to_owned()));
                match self.settings.network {
                    Network::Online => db.resolve(&remote, &want, self.reporter)?,
                    Network::Offline => {
                        db.resolve_offline(&want)
                            .ok_or_else(|| ResolveError::Offline {
                                what: format!(
                                    "{} of `{}`",
                                    other.map_or("the default branch".to_owned(), |r| format!(
                                        "`{r}`"
                                    )),
                                    remote.url.shown
                                ),
                            })?
                    }
                }
            }
        };
        self.memo.remember_rev(memo_key, rev);
        // A `repo_path` that is a symlink is followed: the plugin is the folder it leads to,
        // named after that folder when it has no manifest (as the SDK names it).
        let (tree, real_path) = db.plugin_tree(rev, request.subdir())?;
        let fallback = real_path
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .map_or_else(|| repo_name(&remote.url.shown), str::to_owned);
        let name = plugin_name_from_manifest(|rel| db.read_file(tree, rel), &fallback)?;
        let hashed = db.nar_hash(tree, rev)?;
        db.finish()?;
        self.warn_submodules(&name, &hashed.submodules);
        check_pins(request, &name, &hashed.hash)?;
        Ok(Resolved {
            plugin: LockedPlugin {
                name,
                source: request.display_source(),
                git_ref: request.git_ref.clone(),
                version: request.version.clone(),
                resolved_ref,
                repo_path: request.repo_path.clone(),
                pin: Pin::Git {
                    url: remote.url.shown,
                    rev: commit_id(rev),
                },
                hash: hashed.hash,
            },
            skipped: hashed.skipped,
        })
    }

    /// The tag a `version` range picks: among the remote's tags, or offline the cache's.
    fn pick_tag(
        &self,
        db: &GitDb,
        remote: &Remote,
        cache: &str,
        range: &str,
    ) -> Result<String, ResolveError> {
        let req = semver::VersionReq::parse(range)
            .map_err(|e| ResolveError::Unsupported(format!("`version = \"{range}\"`: {e}")))?;
        let cached = self.memo.tags(cache, self.started);
        let tags = match (cached, self.settings.network) {
            (Some(tags), _) => tags,
            (None, Network::Online) => db.list_tags(remote)?,
            (None, Network::Offline) => db.local_tags(),
        };
        self.memo.remember_tags(cache, tags.clone());
        crate::semver_tags::pick(&req, tags.iter().map(|(t, _)| t.as_str())).map_err(|nearest| {
            ResolveError::NoMatchingVersion {
                url: remote.url.shown.clone(),
                range: range.to_owned(),
                nearest,
            }
        })
    }

    fn archive_source(&self, source: &Source) -> Result<ArchiveSource, ResolveError> {
        let Source::Archive { url, format } = source else {
            unreachable!("only called for archive sources");
        };
        Ok(ArchiveSource {
            url: SourceUrl::new(url)?,
            format: *format,
        })
    }

    fn lock_archive(&self, request: &PluginRequest) -> Result<Resolved, ResolveError> {
        let source = self.archive_source(request.parsed_source())?;
        self.require_network(|| format!("`{}`", source.url.shown))?;
        let limits = self.settings.archive_limits;
        let (download, file, archive_hash) = self.download(&source)?;
        if let Some(expected) = request.archive_hash
            && expected != archive_hash
        {
            return Err(ResolveError::ArchiveHashMismatch {
                name: source.url.shown.clone(),
                expected,
                actual: archive_hash,
            });
        }
        let unpacked = archive::unpack(self.store, &source, &file, request.subdir(), limits)?;
        // Only an archive that unpacked cleanly is kept for `sync`.
        archive::keep(self.store, &file, &archive_hash, source.format)?;
        drop(download);
        let dir = unpacked.staging.path();
        let name = plugin_name_from_manifest(
            |rel| crate::local::read_regular_file(dir, rel),
            &unpacked.folder_name,
        )?;
        let hash = berth_store::hash_path(dir)?;
        check_pins(request, &name, &hash)?;
        let skipped = crate::skipped::scan_dir(dir, &[])?;
        Ok(Resolved {
            plugin: LockedPlugin {
                name,
                source: request.display_source(),
                git_ref: None,
                version: None,
                resolved_ref: None,
                repo_path: request.repo_path.clone(),
                pin: Pin::Archive {
                    url: source.url.shown,
                    archive_hash,
                },
                hash,
            },
            skipped,
        })
    }

    /// Unpacks a locked archive into a staging folder: from the download cache when it
    /// holds the locked bytes, else downloaded again and checked against `archive_hash`.
    fn stage_archive(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
        archive_hash: &Sha256Hash,
    ) -> Result<Staging, ResolveError> {
        let source = self.archive_source(&Self::source_of(locked, request)?)?;
        let limits = self.settings.archive_limits;
        let cached = archive::cached(self.store, archive_hash, source.format)
            .filter(|path| berth_store::hash_file(path).is_ok_and(|h| h == *archive_hash));
        let subdir = archive_subdir(locked);
        if let Some(file) = cached {
            let unpacked = archive::unpack(self.store, &source, &file, subdir.as_deref(), limits)?;
            return Ok(unpacked.staging);
        }
        self.require_network(|| format!("plugin `{}` (`{}`)", locked.name, source.url.shown))?;
        let (download, file) = self.download_expecting(&source, &locked.name, archive_hash)?;
        let unpacked = archive::unpack(self.store, &source, &file, subdir.as_deref(), limits)?;
        archive::keep(self.store, &file, archive_hash, source.format)?;
        drop(download);
        Ok(unpacked.staging)
    }

    /// Downloads `source` into a new staging folder with this run's limits and credentials
    /// (see [`archive::download`]).
    pub(crate) fn download(
        &self,
        source: &ArchiveSource,
    ) -> Result<(Staging, PathBuf, Sha256Hash), ResolveError> {
        archive::download(
            self.store,
            source,
            self.settings.archive_limits,
            self.settings.home_dir.as_deref(),
            self.reporter,
            &self.settings.cancel,
            self.settings.policy.as_ref(),
        )
    }

    /// Downloads an archive that must hash to `expected`; a mismatch names `name`.
    fn download_expecting(
        &self,
        source: &ArchiveSource,
        name: &str,
        expected: &Sha256Hash,
    ) -> Result<(Staging, PathBuf), ResolveError> {
        let (staging, file, actual) = self.download(source)?;
        if actual != *expected {
            return Err(ResolveError::ArchiveHashMismatch {
                name: name.to_owned(),
                expected: *expected,
                actual,
            });
        }
        Ok((staging, file))
    }

    fn warn_submodules(&self, name: &str, skipped: &[String]) {
        for path in skipped {
            self.reporter.warn(&format!(
                "`{name}`: skipped git submodule `{path}` (berth does not fetch submodules)"
            ));
        }
    }

    pub(crate) fn require_network(
        &self,
        what: impl FnOnce() -> String,
    ) -> Result<(), ResolveError> {
        self.settings.cancel.check()?;
        match self.settings.network {
            Network::Online => Ok(()),
            Network::Offline => Err(ResolveError::Offline { what: what() }),
        }
    }

    pub(crate) fn sync_one(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
        local: LocalCheck,
        added: &AtomicUsize,
    ) -> Result<StoreEntry, ResolveError> {
        if let (Pin::Local { path }, LocalCheck::Rehash) = (&locked.pin, local) {
            let dir = existing_dir(&local_dir(path, self.settings))?;
            let (_, actual) = name_and_hash(&dir)?;
            if actual != locked.hash {
                return Err(ResolveError::LocalChanged {
                    name: locked.name.clone(),
                    path: path.clone(),
                    expected: locked.hash,
                    actual,
                });
            }
        }
        if let Some(entry) = self.store.lookup(&locked.hash, &locked.name) {
            return Ok(entry);
        }
        // One process materialises an entry; others wait and then find it present.
        let _guard = self
            .store
            .lock(&format!("entry-{}", locked.hash.to_nix32()), || {
                self.reporter.status(
                    "Waiting",
                    &format!("for another berth adding `{}`", locked.name),
                );
            })?;
        if let Some(entry) = self.store.lookup(&locked.hash, &locked.name) {
            return Ok(entry);
        }
        let entry = match &locked.pin {
            Pin::Local { path } => {
                let dir = existing_dir(&local_dir(path, self.settings))?;
                self.store
                    .add_dir(&dir, &locked.name, Some(&locked.hash), LOCAL_EXCLUDE)?
            }
            Pin::Git { .. } | Pin::Archive { .. } => {
                let staging = self.stage_tree(locked, request)?;
                self.store
                    .commit(staging, &locked.name, Some(&locked.hash))?
            }
        };
        added.fetch_add(1, Ordering::Relaxed);
        self.reporter.status(
            "Added",
            &format!("{} {}", locked.name, entry.path.display()),
        );
        Ok(entry)
    }

    /// The source to fetch a locked entry from: the manifest's (which may carry credentials
    /// the lock leaves out) when it still matches, else the lock's.
    fn source_of(
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Source, ResolveError> {
        match request {
            Some(r) => Ok(r.parsed_source().clone()),
            None => Source::parse(&locked.source).map_err(|e| ResolveError::Unsupported(e.message)),
        }
    }

    /// Exports a locked git or archive entry's tree into a new staging folder (not yet
    /// checked against the lock: [`Store::commit`] does that).
    pub(crate) fn stage_tree(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Staging, ResolveError> {
        match &locked.pin {
            Pin::Git { rev, .. } => self.stage_git(locked, request, rev),
            Pin::Archive { archive_hash, .. } => self.stage_archive(locked, request, archive_hash),
            Pin::Local { path } => {
                let dir = existing_dir(&local_dir(path, self.settings))?;
                let staging = self.store.stage()?;
                berth_store::copy_tree(&dir, staging.path(), LOCAL_EXCLUDE)?;
                Ok(staging)
            }
        }
    }

    fn stage_git(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
        rev: &berth_lockfile_schema::CommitId,
    ) -> Result<Staging, ResolveError> {
        let source = Self::source_of(locked, request)?;
        let (remote, cache) = self.remote(&source)?;
        let id = ObjectId::from(rev.to_bytes());
        let staging = self.store.stage()?;
        {
            let db = GitDb::open(self.store, &cache, &remote.url.shown, self.reporter)?;
            if !db.has_commit(id) {
                self.require_network(|| {
                    format!(
                        "plugin `{}` (commit `{rev}` of `{}`)",
                        locked.name, remote.url.shown
                    )
                })?;
                db.fetch_commit(&remote, id, hint_ref(locked), self.reporter)?;
            }
            let (tree, _) = db.plugin_tree(id, subdir_of(locked, &source).as_deref())?;
            let skipped = db.export(tree, id, staging.path())?;
            db.finish()?;
            self.warn_submodules(&locked.name, &skipped);
        }
        Ok(staging)
    }

    /// What `verify` fetches for a locked git plugin: its remote, commit and folder.
    fn fresh_want(
        &self,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<FreshWant, ResolveError> {
        let Pin::Git { rev, .. } = &locked.pin else {
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
    fn fetch_fresh(&self, fresh: &FreshRemote) -> FreshRepo {
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
        match &locked.pin {
            Pin::Local { path } => {
                let dir = existing_dir(&local_dir(path, self.settings))?;
                Ok(name_and_hash(&dir)?.1)
            }
            Pin::Git { .. } => {
                let want = self.fresh_want(locked, request)?;
                // A throw-away repository: verify must not trust anything already cached.
                let staging = self.store.stage()?;
                let db = GitDb::temporary(&FreshRepo::dir(&staging))?;
                db.fetch_commit(&want.remote, want.id, want.hint.as_deref(), self.reporter)?;
                let (tree, _) = db.plugin_tree(want.id, want.subdir.as_deref())?;
                Ok(db.nar_hash(tree, want.id)?.hash)
            }
            Pin::Archive { archive_hash, .. } => {
                // A fresh download, not the cache: verify must see what the server sends now.
                let source = self.archive_source(&Self::source_of(locked, request)?)?;
                self.require_network(|| format!("`{}`", source.url.shown))?;
                let (_download, file) =
                    self.download_expecting(&source, &locked.name, archive_hash)?;
                let unpacked = archive::unpack(
                    self.store,
                    &source,
                    &file,
                    archive_subdir(locked).as_deref(),
                    self.settings.archive_limits,
                )?;
                Ok(berth_store::hash_path(unpacked.staging.path())?)
            }
        }
    }
}

/// The `repo_path` of a locked archive, normalised.
fn archive_subdir(locked: &LockedPlugin) -> Option<String> {
    locked
        .repo_path
        .as_deref()
        .and_then(|p| berth_lockfile_schema::normalize_repo_path(p).ok())
}

/// The ref to fall back on when a server will not send a commit by id.
fn hint_ref(locked: &LockedPlugin) -> Option<&str> {
    locked.resolved_ref.as_deref().or(locked.git_ref.as_deref())
}

fn subdir_of(locked: &LockedPlugin, source: &Source) -> Option<String> {
    if let Some(path) = &locked.repo_path {
        return berth_lockfile_schema::normalize_repo_path(path).ok();
    }
    match source {
        Source::GitHub { subpath, .. } => subpath.clone(),
        _ => None,
    }
}

fn check_pins(request: &PluginRequest, name: &str, hash: &Sha256Hash) -> Result<(), ResolveError> {
    if let Some(expected) = &request.hash
        && expected != hash
    {
        return Err(ResolveError::HashMismatch {
            name: name.to_owned(),
            expected: *expected,
            actual: *hash,
        });
    }
    if let Some(expected) = &request.name
        && expected != name
    {
        return Err(ResolveError::NameMismatch {
            expected: expected.clone(),
            actual: name.to_owned(),
        });
    }
    Ok(())
}

/// The lock's commit id of a git object id.
fn commit_id(id: ObjectId) -> berth_lockfile_schema::CommitId {
    let mut bytes = [0u8; 20];
    bytes.copy_from_slice(id.as_bytes());
    berth_lockfile_schema::CommitId::from_bytes(bytes)
}

fn lock_ignoring_poison<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f` over `items` on up to `jobs` threads; results keep the items' order.
fn run_parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let jobs = jobs.clamp(1, items.len().max(1));
    if jobs == 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(i, item)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker threads do not panic"))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

fn split<T>(results: Vec<Result<T, EntryError>>) -> (Vec<T>, Vec<EntryError>) {
    let mut ok = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(value) => ok.push(value),
            Err(e) => errors.push(e),
        }
    }
    (ok, errors)
}
