//! Git sources: a ref or version range resolved to a commit, its tree hashed from git
//! objects and exported into staging.

use berth_lockfile_schema::{LockedPlugin, Pin, PluginRequest, Source};
use berth_store::Staging;
use gix::ObjectId;

use crate::context::Network;
use crate::context::*;
use crate::error::ResolveError;
use crate::meta::plugin_name_from_manifest;
use crate::sources::PluginSource;
use crate::sources::git::{GitDb, Remote, Want};
use crate::sources::local::MAX_METADATA_BYTES;
use berth_transport::url::{SourceUrl, cache_dir_name, repo_name};

/// The git URL of a git source, `${VAR}` references still in it.
pub fn git_url(source: &Source, github_url: &str) -> Option<String> {
    match source {
        Source::GitHub { owner, repo, .. } => Some(format!(
            "{}/{owner}/{repo}.git",
            github_url.trim_end_matches('/')
        )),
        Source::Git { url } => Some(url.clone()),
        Source::Archive { .. } | Source::Local { .. } | Source::Marketplace { .. } => None,
    }
}

impl Ctx<'_> {
    pub(crate) fn remote(&self, source: &Source) -> Result<(Remote, String), ResolveError> {
        let raw = git_url(source, &self.settings.github_url).expect("only called for git sources");
        let url = SourceUrl::new(&raw)?;
        berth_transport::url::refuse_plain_http_password(&url)?;
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

    pub(crate) fn lock_git(&self, request: &PluginRequest) -> Result<Resolved, ResolveError> {
        let (remote, cache) = self.remote(request.parsed_source())?;
        let db = GitDb::for_remote(self.store, &remote, &cache, self.reporter)?;
        // A `version` range becomes the tag it picks, then resolves like `ref = "<tag>"`.
        let resolved_ref = match &request.version {
            Some(range) => Some(self.pick_tag(&db, &remote, &cache, range)?),
            None => None,
        };
        let wanted = resolved_ref
            .as_ref()
            .map(|tag| format!("refs/tags/{tag}"))
            .or_else(|| request.git_ref.clone());
        let rev = self.git_rev(&db, &remote, &cache, wanted)?;
        // A `repo_path` that is a symlink is followed: the plugin is the folder it leads to,
        // named after that folder when it has no manifest (as the SDK names it).
        let (tree, real_path) = db.plugin_tree(rev, request.subdir())?;
        let fallback = real_path
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .map_or_else(|| repo_name(&remote.url.shown), str::to_owned);
        let name = plugin_name_from_manifest(
            |rel| db.read_file(tree, rel, MAX_METADATA_BYTES),
            &fallback,
        )?;
        let declared =
            Declared::read(|rel| db.read_file(tree, rel, MAX_METADATA_BYTES).ok().flatten());
        let hashed = db.nar_hash(tree, rev)?;
        db.finish()?;
        self.warn_submodules(&name, &hashed.submodules);
        check_pins(request, &name, &hashed.hash)?;
        Ok(Resolved {
            plugin: LockedPlugin {
                name,
                requested: None,
                plugin_version: None,
                dependencies: Vec::new(),
                needed_by: Vec::new(),
                definition: None,
                source: request.display_source(),
                git_ref: request.git_ref.clone(),
                version: request.version.clone(),
                resolved_ref,
                repo_path: request.repo_path.clone(),
                pin: Pin::Git(berth_lockfile_schema::GitPin {
                    url: remote.url.shown,
                    rev: commit_id(rev),
                }),
                hash: hashed.hash,
            },
            skipped: hashed.skipped,
            declared,
        })
    }

    /// The commit `wanted` (a ref, a full commit id, or `None` for the default branch)
    /// names in `db`'s remote: shared with the other resolutions of this run, fetched when
    /// a commit id is not in the cache, resolved from the cache alone when offline.
    pub(crate) fn git_rev(
        &self,
        db: &GitDb,
        remote: &Remote,
        cache: &str,
        wanted: Option<String>,
    ) -> Result<ObjectId, ResolveError> {
        let memo_key = (cache.to_owned(), wanted.clone().unwrap_or_default());
        let memo = self.memo.rev(&memo_key, self.started);
        let rev = match (memo, wanted.as_deref()) {
            (Some(id), _) => id,
            (None, Some(r)) if let Some(commit) = berth_lockfile_schema::CommitId::parse(r) => {
                let id = ObjectId::from(commit.to_bytes());
                if !db.has_commit(id) {
                    self.require_network(|| format!("commit `{r}` of `{}`", remote.url.shown))?;
                    db.fetch_commit(remote, id, None, self.reporter)?;
                }
                id
            }
            (None, other) => {
                let want = other.map_or(Want::DefaultBranch, |r| Want::Named(r.to_owned()));
                match self.settings.network {
                    Network::Online => db.resolve(remote, &want, self.reporter)?,
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
        Ok(rev)
    }

    /// The tag a `version` range picks: among the remote's tags, or offline the cache's.
    pub(crate) fn pick_tag(
        &self,
        db: &GitDb,
        remote: &Remote,
        cache: &str,
        range: &str,
    ) -> Result<String, ResolveError> {
        let req =
            semver::VersionReq::parse(range).map_err(|source| ResolveError::VersionRange {
                range: range.to_owned(),
                source,
            })?;
        let tags = self.tags(db, remote, cache)?;
        crate::sources::git::semver_tags::pick(&req, tags.iter().map(|(t, _)| t.as_str())).map_err(
            |nearest| ResolveError::NoMatchingVersion {
                url: remote.url.shown.clone(),
                range: range.to_owned(),
                nearest,
            },
        )
    }

    /// The remote's tags and their commits, listed once per run (offline: the cache's).
    pub(crate) fn tags(
        &self,
        db: &GitDb,
        remote: &Remote,
        cache: &str,
    ) -> Result<Vec<(String, ObjectId)>, ResolveError> {
        let cached = self.memo.tags(cache, self.started);
        let tags = match (cached, self.settings.network) {
            (Some(tags), _) => tags,
            (None, Network::Online) => db.list_tags(remote)?,
            (None, Network::Offline) => db.local_tags(),
        };
        self.memo.remember_tags(cache, tags.clone());
        Ok(tags)
    }

    pub(crate) fn stage_git(
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
            let db = GitDb::for_remote(self.store, &remote, &cache, self.reporter)?;
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

    pub(crate) fn warn_submodules(&self, name: &str, skipped: &[String]) {
        for path in skipped {
            self.reporter.warn(&format!(
                "`{name}`: skipped git submodule `{path}` (berth does not fetch submodules)"
            ));
        }
    }
}

/// Git repositories.
pub(crate) struct Git;

impl PluginSource for Git {
    fn lock(
        &self,
        ctx: &Ctx<'_>,
        request: &PluginRequest,
        _previous: Option<&LockedPlugin>,
    ) -> Result<Resolved, ResolveError> {
        ctx.lock_git(request)
    }

    fn stage(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<Staging, ResolveError> {
        let Pin::Git(berth_lockfile_schema::GitPin { rev, .. }) = &locked.pin else {
            return Err(crate::sources::other_kind(locked));
        };
        ctx.stage_git(locked, request, rev)
    }

    fn fresh_hash(
        &self,
        ctx: &Ctx<'_>,
        locked: &LockedPlugin,
        request: Option<&PluginRequest>,
    ) -> Result<berth_lockfile_schema::Sha256Hash, ResolveError> {
        let want = ctx.fresh_want(locked, request)?;
        // A throw-away repository: verify must not trust anything already cached.
        let staging = ctx.store.stage()?;
        let db = GitDb::temporary(&staging.path().join("repo"))?;
        db.fetch_commit(&want.remote, want.id, want.hint.as_deref(), ctx.reporter)?;
        let (tree, _) = db.plugin_tree(want.id, want.subdir.as_deref())?;
        Ok(db.nar_hash(tree, want.id)?.hash)
    }
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
