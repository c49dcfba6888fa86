//! Git sources through gix: bare caches per URL, ref resolution from the remote's
//! advertisement, fetching exactly the needed commit, and reading trees straight from git
//! objects (to hash them, or to export them into a store staging folder).

mod age;
mod halfway;
mod local;
mod loose;
mod objects;
mod refs;
mod remote;
mod semver_tags;
mod source;
mod tree;

pub(crate) use remote::{CacheError, Remote, fetch_error};
pub(crate) use source::GitSource;

use std::path::{Path, PathBuf};

use berth_store::{FileLock, Staging, Store};
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::protocol::handshake::Ref;
use gix::remote::Direction;
use gix::remote::fetch::{Shallow, Tags};
use gix::remote::ref_map;

use crate::context::Reporter;
use crate::error::ResolveError;
use local::{LocalRepo, has_commit_in, refs_of, tags_of};
pub(crate) use refs::Want;
use refs::{advertised, pick, ref_names};

/// A bare git database under `git-v1/db/`, locked for this process while open.
pub(crate) struct GitDb {
    repo: gix::Repository,
    path: PathBuf,
    /// A database created by this process lives in a staging folder until something was
    /// fetched into it ([`GitDb::finish`]), so a failed first fetch leaves no cache behind.
    pending: Option<Staging>,
    /// The cache's cross-process lock (none for a throw-away database).
    _lock: Option<FileLock>,
    /// `repo` is the remote's own repository on this machine (a `file://` remote), read in
    /// place: nothing is fetched into it or written to it.
    in_place: bool,
}

impl GitDb {
    /// Opens (creating if needed) the cache for `dir_name`, holding its cross-process lock.
    pub(crate) fn open(
        store: &Store,
        dir_name: &str,
        shown_url: &str,
        reporter: &dyn Reporter,
    ) -> Result<Self, ResolveError> {
        let path = store.git_dir().join("db").join(dir_name);
        let lock = store.lock(&format!("git-{dir_name}"), || {
            reporter.status(
                "Waiting",
                &format!("for the lock on the git cache of `{shown_url}`"),
            );
        })?;
        if !path.join("HEAD").is_file() {
            let staging = store.stage()?;
            let repo = open_or_init(staging.path()).map_err(|source| ResolveError::Cache {
                path: staging.path().to_owned(),
                source,
            })?;
            return Ok(Self {
                repo,
                path,
                pending: Some(staging),
                _lock: Some(lock),
                in_place: false,
            });
        }
        // We hold the lock, so lock files inside the repository are leftovers of a process
        // that died mid-write; they would make every later ref update fail.
        remove_stale_lock_files(&path);
        let repo = match open_or_init(&path) {
            Ok(repo) => repo,
            Err(first) => {
                // The cache is disposable: start over rather than fail on a damaged one.
                tracing::warn!(
                    "recreating damaged git cache at {}: {first}",
                    path.display()
                );
                berth_store::remove_tree(&path)?;
                open_or_init(&path).map_err(|source| ResolveError::Cache {
                    path: path.clone(),
                    source,
                })?
            }
        };
        Ok(Self {
            repo,
            path,
            pending: None,
            _lock: Some(lock),
            in_place: false,
        })
    }

    /// The database to resolve `remote` with: a `file://` remote's own repository, read in
    /// place (see [`local`]); any other remote's cache `dir_name` ([`GitDb::open`]).
    pub(crate) fn for_remote(
        store: &Store,
        remote: &Remote,
        dir_name: &str,
        reporter: &dyn Reporter,
    ) -> Result<Self, ResolveError> {
        match LocalRepo::of(remote) {
            Some(local) => Ok(Self {
                repo: local?.into_repo(),
                path: remote
                    .url
                    .parsed()
                    .and_then(|u| u.to_file_path().ok())
                    .unwrap_or_default(),
                pending: None,
                _lock: None,
                in_place: true,
            }),
            None => Self::open(store, dir_name, &remote.url.shown, reporter),
        }
    }

    /// Keeps a database this process created, now that it holds something.
    pub(crate) fn finish(mut self) -> Result<(), ResolveError> {
        if let Some(staging) = self.pending.take() {
            staging.persist_to(&self.path)?;
        }
        Ok(())
    }

    /// A throw-away database in `dir`, a folder no one else uses (for `verify`, which must
    /// not trust the cache).
    pub(crate) fn temporary(dir: &Path) -> Result<Self, ResolveError> {
        let repo = open_or_init(dir).map_err(|source| ResolveError::Cache {
            path: dir.to_owned(),
            source,
        })?;
        Ok(Self {
            repo,
            path: dir.to_owned(),
            pending: None,
            _lock: None,
            in_place: false,
        })
    }

    /// Whether the commit is already here (then it is never fetched again).
    /// A gix remote at `remote`'s URL fetching `specs` and no tags of its own accord.
    fn remote_with<'s>(
        &self,
        specs: impl IntoIterator<Item = &'s str>,
        remote: &Remote,
    ) -> Result<gix::Remote<'_>, ResolveError> {
        let fetch_error = |e: gix::Error| fetch_error(remote, &e);
        self.repo
            .remote_at(remote.url.fetch.as_str())
            .map_err(fetch_error)?
            .with_fetch_tags(Tags::None)
            .with_refspecs(specs, Direction::Fetch)
            .map_err(fetch_error)
    }

    pub(crate) fn has_commit(&self, id: ObjectId) -> bool {
        has_commit_in(&self.repo, id)
    }

    /// Resolves `want` from the remote's ref advertisement and fetches its commit (depth 1)
    /// unless it is already cached. One connection does both.
    pub(crate) fn resolve(
        &self,
        remote: &Remote,
        want: &Want,
        reporter: &dyn Reporter,
    ) -> Result<ObjectId, ResolveError> {
        if self.in_place {
            let (_, commit) = pick(
                &refs_of(&self.repo, &ref_names(want)),
                want,
                remote,
                reporter,
            )?;
            return self.refresh_after_fetch(commit, remote);
        }
        if let Some(local) = LocalRepo::of(remote) {
            return self.resolve_local(&local?, remote, want, reporter);
        }
        let specs = match want {
            Want::DefaultBranch => vec!["+HEAD:refs/berth/HEAD".to_owned()],
            Want::Named(name) if name.starts_with("refs/") => vec![format!("+{name}:{name}")],
            Want::Named(name) => vec![
                format!("+refs/heads/{name}:refs/heads/{name}"),
                format!("+refs/tags/{name}:refs/tags/{name}"),
            ],
        };
        let fetch_error = |e: gix::Error| fetch_error(remote, &e);
        let gix_remote = self.remote_with(specs.iter().map(String::as_str), remote)?;
        let connection = remote.connect(&gix_remote)?;
        let options = ref_map::Options {
            prefix_from_spec_as_filter_on_remote: true,
            ..Default::default()
        };
        let prepare = match connection.prepare_fetch(gix::progress::Discard, options) {
            Ok(prepare) => prepare,
            Err(e) => return Err(fetch_error(e)),
        };
        let (ref_name, commit) = pick(&advertised(prepare.ref_map()), want, remote, reporter)?;
        if self.has_commit(commit) {
            // Nothing to fetch, but remember where the ref points for `lock --offline`.
            self.remember(want, ref_name, commit)?;
            return Ok(commit);
        }
        // The ref listing may have taken a while: stop here if the caller gave up.
        remote.cancel.check()?;
        let _task = reporter.task(
            "Fetching",
            &format!("{} at {}", remote.url.shown, short(commit)),
            None,
        );
        prepare
            .with_shallow(Shallow::DepthAtRemote(1.try_into().expect("1 is not zero")))
            .receive(gix::progress::Discard, remote.cancel.flag())
            .map_err(|e| remote.cancelled_or(fetch_error(e)))?;
        self.refresh_after_fetch(commit, remote)
    }

    /// Records where `want` pointed (`ref_name` on the remote) for `lock --offline`.
    fn remember(
        &self,
        want: &Want,
        ref_name: String,
        commit: ObjectId,
    ) -> Result<(), ResolveError> {
        let local = match want {
            Want::DefaultBranch => "refs/berth/HEAD".to_owned(),
            Want::Named(_) => ref_name,
        };
        self.set_ref(&local, commit, "berth: resolved")
    }

    /// Points the cache's ref `name` at `id`.
    fn set_ref(&self, name: &str, id: ObjectId, message: &str) -> Result<(), ResolveError> {
        self.repo
            .reference(
                name,
                id,
                gix::refs::transaction::PreviousValue::Any,
                message,
            )
            .map_err(|e| self.cache_error(e))?;
        Ok(())
    }

    /// The remote's tags and the commits they point to (annotated tags peeled), from its
    /// ref advertisement alone: nothing is fetched.
    pub(crate) fn list_tags(
        &self,
        remote: &Remote,
    ) -> Result<Vec<(String, ObjectId)>, ResolveError> {
        if self.in_place {
            return Ok(tags_of(&self.repo));
        }
        if let Some(local) = LocalRepo::of(remote) {
            return Ok(local?.tags());
        }
        let fetch_error = |e: gix::Error| fetch_error(remote, &e);
        let gix_remote = self.remote_with(["+refs/tags/*:refs/tags/*"], remote)?;
        let options = ref_map::Options {
            prefix_from_spec_as_filter_on_remote: true,
            ..Default::default()
        };
        let (map, _handshake) = remote
            .connect(&gix_remote)?
            .ref_map(gix::progress::Discard, options)
            .map_err(fetch_error)?;
        Ok(map
            .remote_refs
            .iter()
            .filter_map(|r| match r {
                Ref::Direct {
                    full_ref_name,
                    object,
                }
                | Ref::Peeled {
                    full_ref_name,
                    object,
                    ..
                } => full_ref_name
                    .to_str()
                    .ok()
                    .and_then(|n| n.strip_prefix("refs/tags/"))
                    .map(|n| (n.to_owned(), *object)),
                _ => None,
            })
            .collect())
    }

    /// The tags the cache has seen (`--offline`); a repository read in place, its tags.
    pub(crate) fn local_tags(&self) -> Vec<(String, ObjectId)> {
        tags_of(&self.repo)
    }

    /// Resolves `want` from what the cache last saw of the remote (`--offline`); a
    /// repository read in place (on this machine, so no network) from its refs now.
    pub(crate) fn resolve_offline(&self, want: &Want) -> Option<ObjectId> {
        // A cache keeps where the remote's `HEAD` pointed under a ref of its own.
        let names = match want {
            Want::DefaultBranch if !self.in_place => vec!["refs/berth/HEAD".to_owned()],
            _ => ref_names(want),
        };
        names.iter().find_map(|name| {
            let mut reference = self.repo.try_find_reference(name.as_str()).ok()??;
            let id = reference.peel_to_commit().ok()?.id;
            self.has_commit(id).then_some(id)
        })
    }

    /// Fetches one commit by id (depth 1). Servers that refuse to send an unadvertised
    /// commit get a second try that fetches `hint_ref` (or every branch and tag) in full.
    pub(crate) fn fetch_commit(
        &self,
        remote: &Remote,
        id: ObjectId,
        hint_ref: Option<&str>,
        reporter: &dyn Reporter,
    ) -> Result<(), ResolveError> {
        if self.in_place {
            // Nothing to fetch into a repository read in place: it has the commit or not.
            return self.refresh_after_fetch(id, remote).map(drop);
        }
        let _task = reporter.task(
            "Fetching",
            &format!("{} at {}", remote.url.shown, short(id)),
            None,
        );
        if let Some(local) = LocalRepo::of(remote) {
            self.copy_commit(&local?, id, remote)?;
            return self.remember_commit(id);
        }
        let by_id = self.fetch_specs(
            remote,
            &[format!("{id}:refs/berth/commits/{id}")],
            Shallow::DepthAtRemote(1.try_into().expect("1 is not zero")),
        );
        if by_id.is_ok() && self.has_commit(id) {
            return Ok(());
        }
        tracing::debug!("fetching {id} by id failed ({by_id:?}); fetching refs instead");
        let specs = match hint_ref {
            Some(name) if !berth_lockfile_schema::is_full_commit_id(name) => vec![
                format!("+refs/heads/{name}:refs/heads/{name}"),
                format!("+refs/tags/{name}:refs/tags/{name}"),
            ],
            _ => vec![
                "+refs/heads/*:refs/heads/*".to_owned(),
                "+refs/tags/*:refs/tags/*".to_owned(),
            ],
        };
        let deepen = if self.repo.is_shallow().unwrap_or(false) {
            Shallow::undo()
        } else {
            Shallow::NoChange
        };
        let second = self.fetch_specs(remote, &specs, deepen);
        if self.has_commit(id) {
            return Ok(());
        }
        match second {
            // Every branch and tag was fetched and the commit is not among them.
            Ok(()) => Err(ResolveError::CommitNotFound {
                url: remote.url.shown.clone(),
                rev: id.to_string(),
            }),
            Err(e) => Err(e),
        }
    }

    fn fetch_specs(
        &self,
        remote: &Remote,
        specs: &[String],
        shallow: Shallow,
    ) -> Result<(), ResolveError> {
        let fetch_error = |e: gix::Error| fetch_error(remote, &e);
        let gix_remote = self.remote_with(specs.iter().map(String::as_str), remote)?;
        let prepare = remote
            .connect(&gix_remote)?
            .prepare_fetch(gix::progress::Discard, ref_map::Options::default())
            .map_err(fetch_error)?;
        remote.cancel.check()?;
        prepare
            .with_shallow(shallow)
            .receive(gix::progress::Discard, remote.cancel.flag())
            .map_err(|e| remote.cancelled_or(fetch_error(e)))?;
        Ok(())
    }

    /// Checks a fetch brought the commit. gix's object database looks for new packs when
    /// an object is missing, so the fetched pack is seen without reopening.
    fn refresh_after_fetch(
        &self,
        commit: ObjectId,
        remote: &Remote,
    ) -> Result<ObjectId, ResolveError> {
        if self.has_commit(commit) {
            Ok(commit)
        } else {
            Err(ResolveError::CommitNotFound {
                url: remote.url.shown.clone(),
                rev: commit.to_string(),
            })
        }
    }
}

fn open_or_init(path: &Path) -> Result<gix::Repository, Box<dyn std::error::Error + Send + Sync>> {
    let mut repo = if path.join("HEAD").is_file() {
        gix::open(path).map_err(CacheError)?
    } else {
        if path.exists() {
            berth_store::remove_tree(path)?;
        }
        fs_err::create_dir_all(path)?;
        gix::init_bare(path).map_err(CacheError)?
    };
    repo.object_cache_size_if_unset(4 * 1024 * 1024);
    Ok(repo)
}

fn remove_stale_lock_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() && entry.file_name() != "objects" => remove_stale_lock_files(&path),
            Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "lock") => {
                let _ = std::fs::remove_file(&path);
            }
            _ => {}
        }
    }
}

/// The first 12 hex digits, for progress lines.
pub(crate) fn short(id: ObjectId) -> String {
    id.to_hex_with_len(12).to_string()
}
