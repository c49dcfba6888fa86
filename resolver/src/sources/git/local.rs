//! `file://` remotes read in-process. A fetch from a `file://` URL runs a `git upload-pack`
//! process per connection, which costs more than everything else berth does for a small
//! repository; here the repository's refs and objects are read with gix straight from its
//! folder instead. `lock` and `sync` read the repository in place (it is on this machine:
//! there is nothing to cache, as Nix reads a `git+file` input); a throw-away database
//! (`verify`'s fresh fetch) gets what a depth-1 fetch would bring: the commit (marked
//! shallow), its tree and its blobs, byte for byte.

use std::path::PathBuf;

use gix::ObjectId;

use super::refs::{Want, pick, ref_names};
use super::{CacheError, GitDb, Remote};
use crate::context::Reporter;
use crate::error::ResolveError;

/// A repository on this machine that a `file://` remote names, opened for reading.
pub(crate) struct LocalRepo {
    pub(super) repo: gix::Repository,
}

impl LocalRepo {
    /// The repository `remote` names when it is a `file://` URL; `None` for any other
    /// remote. Opened without the user's or the system's git configuration, as a fetch
    /// reads only the repository's refs and objects.
    pub(crate) fn of(remote: &Remote) -> Option<Result<Self, ResolveError>> {
        let url = remote.url.parsed().filter(|u| u.scheme() == "file")?;
        let path: PathBuf = url.to_file_path().ok()?;
        Some(
            gix::open_opts(&path, gix::open::Options::isolated())
                .map(|mut repo| {
                    repo.object_cache_size_if_unset(4 * 1024 * 1024);
                    Self { repo }
                })
                .map_err(|e| super::fetch_error(remote, &e)),
        )
    }

    /// The repository, to be read in place.
    pub(crate) fn into_repo(self) -> gix::Repository {
        self.repo
    }

    pub(crate) fn tags(&self) -> Vec<(String, ObjectId)> {
        tags_of(&self.repo)
    }
}

/// Each of `names` that exists in `repo`, with the commit it leads to (`None`: it leads to
/// no commit, as an unborn `HEAD`), as a ref advertisement would list them.
pub(crate) fn refs_of(repo: &gix::Repository, names: &[String]) -> Vec<(String, Option<ObjectId>)> {
    names
        .iter()
        .filter_map(|name| {
            let mut reference = repo.try_find_reference(name.as_str()).ok()??;
            let commit = reference.peel_to_commit().ok().map(|c| c.id);
            Some((name.clone(), commit))
        })
        .collect()
}

/// `repo`'s tags and the commits they lead to (annotated tags peeled).
pub(crate) fn tags_of(repo: &gix::Repository) -> Vec<(String, ObjectId)> {
    let Ok(platform) = repo.references() else {
        return Vec::new();
    };
    let Ok(tags) = platform.tags() else {
        return Vec::new();
    };
    tags.filter_map(Result::ok)
        .filter_map(|mut r| {
            let name = r.name().shorten().to_string();
            let id = r.peel_to_commit().ok()?.id;
            Some((name, id))
        })
        .collect()
}

/// Whether `repo` has commit `id`.
pub(crate) fn has_commit_in(repo: &gix::Repository, id: ObjectId) -> bool {
    matches!(
        repo.try_find_header(id),
        Ok(Some(header)) if header.kind() == gix::object::Kind::Commit
    )
}

impl GitDb {
    /// [`GitDb::resolve`] for a repository on this machine: its refs read in-process, its
    /// commit copied into the cache unless it is there.
    pub(super) fn resolve_local(
        &self,
        local: &LocalRepo,
        remote: &Remote,
        want: &Want,
        reporter: &dyn Reporter,
    ) -> Result<ObjectId, ResolveError> {
        let (ref_name, commit) = pick(
            &refs_of(&local.repo, &ref_names(want)),
            want,
            remote,
            reporter,
        )?;
        if !self.has_commit(commit) {
            remote.cancel.check()?;
            self.copy_commit(local, commit, remote)?;
        }
        self.remember(want, ref_name, commit)?;
        Ok(commit)
    }

    /// Keeps a commit fetched by id from being collected as unreferenced, as the fetch's
    /// refspec `ID:refs/berth/commits/ID` does.
    pub(super) fn remember_commit(&self, id: ObjectId) -> Result<(), ResolveError> {
        self.set_ref(&format!("refs/berth/commits/{id}"), id, "berth: fetched")
    }

    /// Copies commit `id` of `local` into the cache as a depth-1 fetch would: the commit,
    /// its tree and every blob and tree under it (submodules' commits are not objects of
    /// this repository and are left out, as a fetch leaves them), then marks it shallow.
    pub(crate) fn copy_commit(
        &self,
        local: &LocalRepo,
        id: ObjectId,
        remote: &Remote,
    ) -> Result<(), ResolveError> {
        if !has_commit_in(&local.repo, id) {
            return Err(ResolveError::CommitNotFound {
                url: remote.url.shown.clone(),
                rev: id.to_string(),
            });
        }
        let read = |e: gix::Error| super::fetch_error(remote, &e);
        let commit = local.repo.find_object(id).map_err(read)?;
        let tree = commit.to_commit_ref_iter().tree_id().map_err(read)?;
        // Asked of the cache without re-reading its packs on every miss (most objects miss
        // here; nothing else writes to the cache while its lock is held).
        let cached = |id: &gix::oid| self.repo.objects.exists_without_refresh(id);
        let mut pending = vec![tree];
        while let Some(tree) = pending.pop() {
            if cached(&tree) {
                continue;
            }
            let object = local.repo.find_object(tree).map_err(read)?;
            for entry in gix::objs::TreeRefIter::from_bytes(&object.data, local.repo.object_hash())
            {
                let entry = entry.map_err(read)?;
                let oid = entry.oid.to_owned();
                if entry.mode.is_tree() {
                    pending.push(oid);
                } else if entry.mode.is_blob_or_symlink() && !cached(&oid) {
                    let blob = local.repo.find_object(oid).map_err(read)?;
                    self.write_raw(blob.kind, &blob.data, oid)?;
                }
            }
            // A tree is written once everything it names is here, so a tree in the cache
            // always stands for its whole contents.
            self.write_raw(object.kind, &object.data, tree)?;
        }
        self.write_raw(commit.kind, &commit.data, id)?;
        self.mark_shallow(id)
    }

    /// Writes an object's bytes as they are (never re-encoded, so its id cannot change).
    fn write_raw(
        &self,
        kind: gix::object::Kind,
        data: &[u8],
        id: ObjectId,
    ) -> Result<(), ResolveError> {
        use gix::objs::Write as _;
        let written = self
            .repo
            .objects
            .write_buf(kind, data)
            .map_err(|e| self.cache_error(e))?;
        debug_assert_eq!(written, id, "an object's bytes hash to its id");
        Ok(())
    }

    /// Adds `id` to the cache's `shallow` file: its parents are not here.
    fn mark_shallow(&self, id: ObjectId) -> Result<(), ResolveError> {
        let path = self.repo.path().join("shallow");
        let mut lines: Vec<String> = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        let line = id.to_string();
        if lines.contains(&line) {
            return Ok(());
        }
        lines.push(line);
        lines.sort();
        let text = lines.join("\n") + "\n";
        let partial = path.with_extension("berth-partial");
        fs_err::write(&partial, text)?;
        fs_err::rename(&partial, &path)?;
        Ok(())
    }

    pub(super) fn cache_error(&self, e: gix::Error) -> ResolveError {
        ResolveError::Cache {
            path: self.path.clone(),
            source: Box::new(CacheError(e)),
        }
    }
}
