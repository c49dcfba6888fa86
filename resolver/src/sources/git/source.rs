//! Git sources as values: a repository loaded for a request ([`GitSource`]: a ref or
//! version range pinned to a commit, its tree hashed from git objects) or for a locked
//! commit ([`GitCommit`]: the tree exported into staging, or fetched afresh).

use std::sync::Arc;

use berth_lockfile_schema::{
    CommitId, GitPin, Location, LockedPlugin, Pin, PluginRequest, Sha256Hash, Source, SourceKind,
};
use berth_store::{Live, Staging, StoreEntry, UnpackLimits};
use berth_transport::url::{SourceUrl, cache_dir_name, repo_name};
use gix::ObjectId;

use super::age::Dated;
use super::halfway::HalfwayPause;
use super::{GitDb, Remote, Want};
use crate::context::{Env, KEPT_TREE_BYTES, KeptTree, Network, TagList, git_cache_name};
use crate::error::{PinMismatch, ResolveError};
use crate::meta::plugin_name_from_manifest;
use crate::sources::local::MAX_METADATA_BYTES;
use crate::sources::{
    Declared, GitObjects, HeldBack, ObjectsFrom, PinKind, PinnedSource, PluginSource, Resolved,
    check_pins, source_of, substitute_or_stage,
};

/// The git URL of a git source, `${VAR}` references still in it: where the source is
/// fetched from ([`Source::location`]), for the kind that is a git repository.
pub fn git_url(source: &Source, github_url: &str) -> Option<String> {
    match (source.kind(), source.location(github_url)) {
        (SourceKind::Git, Location::Url(url)) => Some(url),
        _ => None,
    }
}

/// A git repository, loaded for a run: its remote (credentials expanded, checked against
/// the source policy) and its cache.
pub(crate) struct GitSource<'a> {
    env: &'a Env<'a>,
    pub(crate) remote: Remote,
    /// The cache's folder under `git-v1/db/`.
    cache: String,
}

impl<'a> GitSource<'a> {
    /// The repository a git `source` names.
    pub(crate) fn load(env: &'a Env<'a>, source: &Source) -> Result<Self, ResolveError> {
        let raw = git_url(source, &env.settings.github_url).expect("only called for git sources");
        let url = SourceUrl::new(&raw)?;
        berth_transport::url::refuse_plain_http_password(&url)?;
        if let (Some(policy), Some(parsed)) = (&env.settings.policy, url.parsed()) {
            policy.check(parsed).map_err(|why| ResolveError::Refused {
                url: url.shown.clone(),
                why,
            })?;
        }
        let remote = Remote {
            url,
            policy: env.settings.policy.clone(),
            home: env.settings.home_dir.clone(),
            cancel: env.settings.cancel.clone(),
        };
        Ok(Self {
            env,
            remote,
            cache: cache_dir_name(&raw),
        })
    }

    /// The repository's database: its cache, or the repository itself when it is on this
    /// machine. Held (with the cache's lock) only while one step uses it.
    fn open(&self) -> Result<GitDb, ResolveError> {
        GitDb::for_remote(self.env.store, &self.remote, &self.cache, self.env.reporter)
    }

    /// The commit `wanted` (a ref, a full commit id, or `None` for the default branch)
    /// names: shared with the other resolutions of this run, fetched when a commit id is
    /// not in the cache, resolved from the cache alone when offline.
    fn rev(&self, db: &GitDb, wanted: Option<String>) -> Result<ObjectId, ResolveError> {
        let env = self.env;
        let memo_key = (self.cache.clone(), wanted.clone().unwrap_or_default());
        let rev = match (env.memo.rev(&memo_key, env.started), wanted.as_deref()) {
            (Some(id), _) => id,
            (None, Some(r)) if let Some(commit) = CommitId::parse(r) => {
                let id = ObjectId::from(commit.to_bytes());
                if !db.has_commit(id) {
                    env.settings.require_network(|| {
                        format!("commit `{r}` of `{}`", self.remote.url.shown)
                    })?;
                    db.fetch_commit(&self.remote, id, None, env.reporter)?;
                }
                id
            }
            (None, other) => {
                let want = other.map_or(Want::DefaultBranch, |r| Want::Named(r.to_owned()));
                match env.settings.network {
                    Network::Online => db.resolve(&self.remote, &want, env.reporter)?,
                    Network::Offline => {
                        db.resolve_offline(&want)
                            .ok_or_else(|| ResolveError::Offline {
                                what: format!(
                                    "{} of `{}`",
                                    other.map_or("the default branch".to_owned(), |r| format!(
                                        "`{r}`"
                                    )),
                                    self.remote.url.shown
                                ),
                            })?
                    }
                }
            }
        };
        env.memo.remember_rev(memo_key, rev);
        Ok(rev)
    }

    /// The tag a `version` range picks: among the remote's tags, or offline the cache's;
    /// under a release-age cutoff the best one made before it, and the best passed over.
    fn pick_tag(
        &self,
        db: &GitDb,
        range: &str,
    ) -> Result<(String, Option<HeldBack>), ResolveError> {
        let req =
            semver::VersionReq::parse(range).map_err(|source| ResolveError::VersionRange {
                range: range.to_owned(),
                source,
            })?;
        let tags = self.tag_list(db)?;
        let candidates = super::semver_tags::candidates(&req, tags.iter().map(|(t, _)| t.as_str()))
            .map_err(|nearest| ResolveError::NoMatchingVersion {
                url: self.remote.url.shown.clone(),
                range: range.to_owned(),
                nearest,
            })?;
        let Some(dated) = self.dated(db) else {
            return Ok((candidates[0].clone(), None));
        };
        let with_commits: Vec<(String, ObjectId)> = candidates
            .into_iter()
            .filter_map(|tag| {
                let commit = tags.iter().find(|(t, _)| *t == tag)?.1;
                Some((tag, commit))
            })
            .collect();
        dated.pick_tag(range, &with_commits)
    }

    /// The repository as release age reads it, when the run has a cutoff.
    fn dated<'d>(&'d self, db: &'d GitDb) -> Option<Dated<'d>> {
        Dated::new(db, &self.remote, self.env)
    }

    /// The commit `wanted` names ([`GitSource::rev`]), settled under the run's release-age
    /// cutoff: a branch walked back to a commit made before it, an exact pin made after
    /// it refused.
    fn rev_within(
        &self,
        db: &GitDb,
        wanted: Option<String>,
    ) -> Result<(ObjectId, Option<HeldBack>), ResolveError> {
        let rev = self.rev(db, wanted.clone())?;
        match self.dated(db) {
            Some(dated) => dated.settle(wanted.as_deref(), rev),
            None => Ok((rev, None)),
        }
    }

    /// The remote's tags and their commits, listed once per run (offline: the cache's).
    fn tag_list(&self, db: &GitDb) -> Result<TagList, ResolveError> {
        let env = self.env;
        let tags = match (
            env.memo.tags(&self.cache, env.started),
            env.settings.network,
        ) {
            (Some(tags), _) => tags,
            (None, Network::Online) => db.list_tags(&self.remote)?,
            (None, Network::Offline) => db.local_tags(),
        };
        env.memo.remember_tags(&self.cache, tags.clone());
        Ok(tags)
    }

    /// Runs `read` over the files of the `subdir` folder of the commit `wanted` names (see
    /// [`GitSource::rev`]): a marketplace's catalog. Returns the commit and what `read`
    /// found; the database is closed when this returns.
    pub(crate) fn read_at<T>(
        &self,
        wanted: Option<String>,
        subdir: Option<&str>,
        read: impl FnOnce(
            &dyn Fn(&str, u64) -> Result<Option<Vec<u8>>, ResolveError>,
        ) -> Result<T, ResolveError>,
    ) -> Result<(CommitId, T), ResolveError> {
        let db = self.open()?;
        let (rev, _) = self.rev_within(&db, wanted)?;
        let (tree, _) = db.plugin_tree(rev, subdir)?;
        let found = read(&|rel, limit| db.read_file(tree, rel, limit))?;
        db.finish()?;
        Ok((commit_id(rev), found))
    }

    fn warn_submodules(&self, name: &str, skipped: &[String]) {
        warn_submodules(self.env, name, skipped);
    }
}

impl PluginSource for GitSource<'_> {
    fn lock(
        &self,
        request: &PluginRequest,
        _previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        let db = self.open()?;
        // A `version` range becomes the tag it picks, then resolves like `ref = "<tag>"`
        // (the tag is made before the cutoff, if there is one).
        let (rev, resolved_ref, held_back) = match &request.version {
            Some(range) => {
                let (tag, held_back) = self.pick_tag(&db, range)?;
                let rev = self.rev(&db, Some(format!("refs/tags/{tag}")))?;
                (rev, Some(tag), held_back)
            }
            None => {
                let (rev, held_back) = self.rev_within(&db, request.git_ref.clone())?;
                (rev, None, held_back)
            }
        };
        // A `repo_path` that is a symlink is followed: the plugin is the folder it leads to,
        // named after that folder when it has no manifest (as the SDK names it).
        let (tree, real_path) = db.plugin_tree(rev, request.subdir())?;
        let fallback = real_path
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .map_or_else(|| repo_name(&self.remote.url.shown), str::to_owned);
        let name = plugin_name_from_manifest(
            |rel| db.read_file(tree, rel, MAX_METADATA_BYTES),
            &fallback,
        )?;
        let declared =
            Declared::read(|rel| db.read_file(tree, rel, MAX_METADATA_BYTES).ok().flatten());
        let (hashed, nar) = db.nar_hash_keeping(tree, rev, KEPT_TREE_BYTES)?;
        let tag = super::objects::tag_named(resolved_ref.as_deref(), request.git_ref.as_deref());
        db.keep_signature_objects(self.env, (&self.remote, &self.cache), rev, tag);
        db.finish()?;
        self.warn_submodules(&name, &hashed.submodules);
        check_pins(request, &name, &hashed.hash)?;
        // Read once: the sync that stores this tree next writes it from this NAR.
        if let Some(nar) = nar
            && self.env.store.lookup(&hashed.hash, &name).is_none()
        {
            self.env.memo.keep_tree(hashed.hash, KeptTree { nar });
        }
        let pin = Pin::Git(GitPin {
            url: self.remote.url.shown.clone(),
            rev: commit_id(rev),
        });
        let mut plugin = LockedPlugin::new(request, name, pin, hashed.hash);
        plugin.resolved_ref = resolved_ref;
        Ok(Resolved {
            plugin,
            skipped: hashed.skipped,
            declared,
            held_back,
        })
    }

    fn tags(&self) -> Result<Option<Vec<String>>, ResolveError> {
        let db = self.open()?;
        let tags = self.tag_list(&db)?;
        db.finish()?;
        Ok(Some(tags.into_iter().map(|(t, _)| t).collect()))
    }
}

/// A locked commit of a git repository, and the plugin folder in it.
pub(crate) struct GitCommit<'a> {
    env: &'a Env<'a>,
    locked: &'a LockedPlugin,
    request: Option<&'a PluginRequest>,
    pin: &'a GitPin,
}

impl PinKind for GitPin {
    fn load<'a>(
        &'a self,
        env: &'a Env<'a>,
        locked: &'a LockedPlugin,
        request: Option<&'a PluginRequest>,
    ) -> Box<dyn PinnedSource + 'a> {
        Box::new(GitCommit {
            env,
            locked,
            request,
            pin: self,
        })
    }

    fn mark_live(&self, live: &mut Live) {
        live.git_caches.insert(git_cache_name(&self.url));
    }

    fn may_be_signed(&self) -> bool {
        true
    }
}

impl<'a> GitCommit<'a> {
    /// The repository to fetch the commit from, and the plugin's folder in it.
    fn repository(&self) -> Result<(GitSource<'a>, Option<String>), ResolveError> {
        let source = source_of(self.locked, self.request)?;
        Ok((
            GitSource::load(self.env, &source)?,
            subdir_of(self.locked, &source),
        ))
    }

    fn id(&self) -> ObjectId {
        ObjectId::from(self.pin.rev.to_bytes())
    }

    /// The tree this process serialised when it locked the commit, written into a new
    /// staging folder; `None` when that fails, and the tree is exported from git instead.
    fn stage_kept(&self, kept: &KeptTree) -> Option<Staging> {
        let staging = self.env.store.stage().ok()?;
        // The unpacker makes the folder itself.
        fs_err::remove_dir(staging.path()).ok()?;
        let reader = HalfwayPause::new(&kept.nar);
        match berth_store::unpack_nar(reader, staging.path(), &UnpackLimits::default()) {
            Ok(_) => Some(staging),
            Err(e) => {
                tracing::debug!(
                    "writing out the kept tree of `{}` failed: {e}",
                    self.locked.name
                );
                None
            }
        }
    }
}

impl PinnedSource for GitCommit<'_> {
    fn stage(&self) -> Result<Staging, ResolveError> {
        let (env, locked, id) = (self.env, self.locked, self.id());
        if let Some(kept) = env.memo.take_tree(&locked.hash)
            && let Some(staging) = self.stage_kept(&kept)
        {
            // The walk that kept the tree (this process's lock) warned of its submodules.
            return Ok(staging);
        }
        let (repository, subdir) = self.repository()?;
        let remote = &repository.remote;
        let staging = env.store.stage()?;
        let db = repository.open()?;
        if !db.has_commit(id) {
            env.settings.require_network(|| {
                // The plugin's name is the error's label already.
                format!("commit `{}` of `{}`", self.pin.rev, remote.url.shown)
            })?;
            db.fetch_commit(remote, id, hint_ref(locked), env.reporter)?;
        }
        let (tree, _) = db.plugin_tree(id, subdir.as_deref())?;
        let skipped = db.export(tree, id, staging.path())?;
        db.finish()?;
        repository.warn_submodules(&locked.name, &skipped);
        Ok(staging)
    }

    fn add_to_store(&self) -> Result<StoreEntry, ResolveError> {
        substitute_or_stage(self.env, self.locked, || self.stage())
    }

    fn fresh_hash(&self) -> Result<Sha256Hash, Arc<ResolveError>> {
        let (env, id) = (self.env, self.id());
        let (repository, subdir) = self.repository()?;
        let remote = &repository.remote;
        env.settings
            .require_network(|| format!("`{}`", remote.url.shown))?;
        // One throw-away repository per remote for the run, each commit fetched into it
        // once: verify must not trust anything already cached.
        let folder = env
            .scratch
            .folder(&remote.url.fetch, || Ok(env.store.stage()?));
        folder.fetch_once(&id.to_string(), |dir| {
            let db = GitDb::temporary(&dir.join("repo"))?;
            if db.has_commit(id) {
                return Ok(());
            }
            db.fetch_commit(remote, id, hint_ref(self.locked), env.reporter)
        })?;
        let dir = folder.path()?.join("repo");
        let hash = || -> Result<Sha256Hash, ResolveError> {
            // Each worker opens the repository for itself (a gix repository is per thread).
            let db = GitDb::temporary(&dir)?;
            let (tree, _) = db.plugin_tree(id, subdir.as_deref())?;
            Ok(db.nar_hash(tree, id)?.hash)
        };
        hash().map_err(Arc::new)
    }

    fn pin_hash(&self) -> Result<Sha256Hash, ResolveError> {
        let (env, id) = (self.env, self.id());
        let (repository, subdir) = self.repository()?;
        let remote = &repository.remote;
        if remote.url.shown != self.pin.url {
            return Err(PinMismatch::Url {
                url: self.pin.url.clone(),
                fetched: remote.url.shown.clone(),
            }
            .into());
        }
        // The repository's own cache: what is in it came from that URL.
        let db = repository.open()?;
        if !db.has_commit(id) {
            env.settings.require_network(|| {
                format!("commit `{}` of `{}`", self.pin.rev, remote.url.shown)
            })?;
            db.fetch_commit(remote, id, hint_ref(self.locked), env.reporter)?;
        }
        let (tree, _) = db.plugin_tree(id, subdir.as_deref())?;
        let hash = db.nar_hash(tree, id)?.hash;
        db.finish()?;
        Ok(hash)
    }

    fn git_objects(&self, from: ObjectsFrom) -> Result<Option<GitObjects>, ResolveError> {
        let (env, locked, id) = (self.env, self.locked, self.id());
        let (repository, _) = self.repository()?;
        let remote = &repository.remote;
        if from == ObjectsFrom::Fresh {
            // A throw-away repository, gone when this returns: nothing cached is trusted.
            let staging = env.store.stage()?;
            let db = GitDb::temporary(&staging.path().join("repo"))?;
            let objects = db.objects_for(env, remote, (id, locked), Network::Online);
            return objects.map(Some);
        }
        if let Some(objects) = super::objects::kept(env, &repository.cache, id, locked) {
            return Ok(Some(objects));
        }
        let db = repository.open()?;
        let objects = db.objects_for(env, remote, (id, locked), env.settings.network)?;
        db.finish()?;
        Ok(Some(objects))
    }
}

/// Warns of submodules left out of a tree.
pub(crate) fn warn_submodules(env: &Env<'_>, name: &str, skipped: &[String]) {
    for path in skipped {
        env.reporter.warn(&format!(
            "`{name}`: skipped git submodule `{path}` (berth does not fetch submodules)"
        ));
    }
}

/// The ref to fall back on when a server will not send a commit by id.
fn hint_ref(locked: &LockedPlugin) -> Option<&str> {
    locked.resolved_ref.as_deref().or(locked.git_ref.as_deref())
}

/// The plugin's folder in the repository: the lock's `repo_path`, else the one a
/// `github:OWNER/REPO/PATH` source names.
fn subdir_of(locked: &LockedPlugin, source: &Source) -> Option<String> {
    if let Some(path) = &locked.repo_path {
        return berth_lockfile_schema::normalize_repo_path(path).ok();
    }
    match source {
        Source::GitHub { subpath, .. } => subpath.clone(),
        _ => None,
    }
}

/// The lock's commit id of a git object id.
pub(crate) fn commit_id(id: ObjectId) -> CommitId {
    let mut bytes = [0u8; 20];
    bytes.copy_from_slice(id.as_bytes());
    CommitId::from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_sources_expand_under_the_base() {
        let source = Source::parse("github:acme/tools/plugins/x").expect("valid");
        assert_eq!(
            git_url(&source, "http://127.0.0.1:9/git/").as_deref(),
            Some("http://127.0.0.1:9/git/acme/tools.git")
        );
    }
}
