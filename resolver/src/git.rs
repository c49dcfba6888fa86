//! Git sources through gix: bare caches per URL, ref resolution from the remote's
//! advertisement, fetching exactly the needed commit, and reading trees straight from git
//! objects (to hash them, or to export them into a store staging folder).

use std::io::{BufWriter, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::Sha256Hash;
use berth_store::{FileLock, NarWriter, Sha256Sink, Staging, Store};
use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::protocol::handshake::Ref;
use gix::remote::Direction;
use gix::remote::fetch::{Shallow, Tags};
use gix::remote::ref_map;

use crate::Reporter;
use crate::error::ResolveError;
use crate::tree_path::{self, Node};

/// What to resolve on the remote.
#[derive(Debug, Clone)]
pub(crate) enum Want {
    /// The remote's default branch (its `HEAD`).
    DefaultBranch,
    /// A branch or tag name (a branch wins when both exist), or a full `refs/...` name.
    Named(String),
}

/// A bare git database under `git-v1/db/`, locked for this process while open.
pub(crate) struct GitDb {
    repo: gix::Repository,
    path: PathBuf,
    /// A database created by this process lives in a staging folder until something was
    /// fetched into it ([`GitDb::finish`]), so a failed first fetch leaves no cache behind.
    pending: Option<Staging>,
    /// The cache's cross-process lock (none for a throw-away database).
    _lock: Option<FileLock>,
}

/// One remote as the resolver uses it: the URL to connect to (credentials expanded) and the
/// URL to show (credentials removed).
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    /// The URL: fetched, shown and scrubbed through one value.
    pub url: crate::url::SourceUrl,
    /// The server's source policy, if any: redirects must stay within it.
    pub policy: Option<std::sync::Arc<crate::url::FetchPolicy>>,
    /// For `~/.netrc`.
    pub home: Option<PathBuf>,
    /// Stops a fetch that is receiving a pack (gix's interrupt flag).
    pub cancel: crate::Cancel,
}

impl Remote {
    /// Under a source policy, asks the remote for its refs once over the policy's HTTP
    /// client, which checks every redirect: a redirect the policy refuses is refused
    /// before git connects, and so is any other, since the URL git fetches must be the
    /// one the policy checked (give the server the URL the redirect leads to).
    fn check_redirects(&self) -> Result<(), ResolveError> {
        let (Some(policy), Some(url)) = (&self.policy, self.url.parsed()) else {
            return Ok(());
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Ok(());
        }
        let refused = |why: String| ResolveError::Refused {
            url: self.url.shown.clone(),
            why: self.url.scrub(&why),
        };
        let client = policy.client().map_err(&refused)?;
        let probe = url::Url::parse(&format!(
            "{}/info/refs?service=git-upload-pack",
            url.as_str().trim_end_matches('/')
        ))
        .map_err(|e| refused(e.to_string()))?;
        let response = match client.get(probe.as_str()).send() {
            Ok(response) => response,
            Err(e) => {
                return match crate::url::redirect_refusal(&e) {
                    Some(why) => Err(refused(why)),
                    // Not a policy matter: git reports the failure in its own words.
                    None => Ok(()),
                };
            }
        };
        if *response.url() != probe {
            return Err(refused(format!(
                "the server redirects to `{}`; this server fetches git only from the URL it was given, so give that URL instead",
                crate::url::scrub(response.url().as_str(), &self.url.secrets)
                    .trim_end_matches("/info/refs?service=git-upload-pack")
            )));
        }
        Ok(())
    }

    /// `error`, unless the fetch failed because it was cancelled.
    fn cancelled_or(&self, error: ResolveError) -> ResolveError {
        if self.cancel.is_cancelled() {
            ResolveError::Cancelled
        } else {
            error
        }
    }

    /// Connects for fetching, with berth's credentials: the URL's own, then `~/.netrc`,
    /// then the git credential helpers of the user's configuration. Credentials go over
    /// plain `http://` only to this machine.
    fn connect<'r>(
        &self,
        remote: &'r gix::Remote<'r>,
    ) -> Result<
        gix::remote::Connection<
            'r,
            'static,
            'r,
            Box<dyn gix::protocol::transport::client::blocking_io::Transport + Send>,
        >,
        ResolveError,
    > {
        self.check_redirects()?;
        let connection = remote
            .connect(Direction::Fetch)
            .map_err(|e| fetch_error(self, &e))?;
        let mut fallback = connection.configured_credentials_for_current_url();
        let home = self.home.clone();
        let own = self.url.credentials();
        Ok(connection.with_credentials(move |action| {
            if let gix::credentials::helper::Action::Get(ctx) = &action {
                // The transport may pass only a URL; split it to learn protocol and host.
                let mut ctx = ctx.clone();
                if ctx.host.is_none() {
                    let _ = ctx.destructure_url_in_place(false);
                }
                let protocol = ctx.protocol.as_deref().unwrap_or_default();
                let host_port = ctx.host.as_deref().unwrap_or_default();
                let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
                if !crate::auth::may_send_password(protocol, host) {
                    // Never send a password in clear text across a network.
                    return Ok(None);
                }
                if let Some((username, password)) = own
                    .clone()
                    .or_else(|| crate::auth::netrc(host, home.as_deref()))
                {
                    return Ok(Some(gix::credentials::protocol::Outcome {
                        identity: gix::sec::identity::Account {
                            username,
                            password,
                            oauth_refresh_token: None,
                        },
                        next: ctx.into(),
                    }));
                }
            }
            fallback(action)
        }))
    }
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
            let repo = open_or_init(staging.path()).map_err(|message| ResolveError::Cache {
                path: staging.path().to_owned(),
                message,
            })?;
            return Ok(Self {
                repo,
                path,
                pending: Some(staging),
                _lock: Some(lock),
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
                open_or_init(&path).map_err(|message| ResolveError::Cache {
                    path: path.clone(),
                    message,
                })?
            }
        };
        Ok(Self {
            repo,
            path,
            pending: None,
            _lock: Some(lock),
        })
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
        let repo = open_or_init(dir).map_err(|message| ResolveError::Cache {
            path: dir.to_owned(),
            message,
        })?;
        Ok(Self {
            repo,
            path: dir.to_owned(),
            pending: None,
            _lock: None,
        })
    }

    /// Whether the commit is already here (then it is never fetched again).
    pub(crate) fn has_commit(&self, id: ObjectId) -> bool {
        matches!(
            self.repo.try_find_header(id),
            Ok(Some(header)) if header.kind() == gix::object::Kind::Commit
        )
    }

    /// Resolves `want` from the remote's ref advertisement and fetches its commit (depth 1)
    /// unless it is already cached. One connection does both.
    pub(crate) fn resolve(
        &self,
        remote: &Remote,
        want: &Want,
        reporter: &dyn Reporter,
    ) -> Result<ObjectId, ResolveError> {
        let specs = match want {
            Want::DefaultBranch => vec!["+HEAD:refs/berth/HEAD".to_owned()],
            Want::Named(name) if name.starts_with("refs/") => vec![format!("+{name}:{name}")],
            Want::Named(name) => vec![
                format!("+refs/heads/{name}:refs/heads/{name}"),
                format!("+refs/tags/{name}:refs/tags/{name}"),
            ],
        };
        let fetch_error = |e: gix::Error| fetch_error(remote, &e);
        let gix_remote = self
            .repo
            .remote_at(remote.url.fetch.as_str())
            .map_err(fetch_error)?
            .with_fetch_tags(Tags::None)
            .with_refspecs(specs.iter().map(String::as_str), Direction::Fetch)
            .map_err(fetch_error)?;
        let connection = remote.connect(&gix_remote)?;
        let options = ref_map::Options {
            prefix_from_spec_as_filter_on_remote: true,
            ..Default::default()
        };
        let prepare = match connection.prepare_fetch(gix::progress::Discard, options) {
            Ok(prepare) => prepare,
            Err(e) => return Err(fetch_error(e)),
        };
        let (ref_name, commit) = pick(prepare.ref_map(), want, remote, reporter)?;
        if self.has_commit(commit) {
            // Nothing to fetch, but remember where the ref points for `lock --offline`.
            let local = match want {
                Want::DefaultBranch => "refs/berth/HEAD".to_owned(),
                Want::Named(_) => ref_name,
            };
            self.repo
                .reference(
                    local.as_str(),
                    commit,
                    gix::refs::transaction::PreviousValue::Any,
                    "berth: resolved",
                )
                .map_err(|e| ResolveError::Cache {
                    path: self.path.clone(),
                    message: error_chain(&e),
                })?;
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

    /// The remote's tags and the commits they point to (annotated tags peeled), from its
    /// ref advertisement alone: nothing is fetched.
    pub(crate) fn list_tags(
        &self,
        remote: &Remote,
    ) -> Result<Vec<(String, ObjectId)>, ResolveError> {
        let fetch_error = |e: gix::Error| fetch_error(remote, &e);
        let gix_remote = self
            .repo
            .remote_at(remote.url.fetch.as_str())
            .map_err(fetch_error)?
            .with_fetch_tags(Tags::None)
            .with_refspecs(["+refs/tags/*:refs/tags/*"], Direction::Fetch)
            .map_err(fetch_error)?;
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

    /// The tags the cache has seen (`--offline`).
    pub(crate) fn local_tags(&self) -> Vec<(String, ObjectId)> {
        let Ok(platform) = self.repo.references() else {
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

    /// Resolves `want` from what the cache last saw of the remote (`--offline`).
    pub(crate) fn resolve_offline(&self, want: &Want) -> Option<ObjectId> {
        let candidates: Vec<String> = match want {
            Want::DefaultBranch => vec!["refs/berth/HEAD".into()],
            Want::Named(name) if name.starts_with("refs/") => vec![name.clone()],
            Want::Named(name) => vec![format!("refs/heads/{name}"), format!("refs/tags/{name}")],
        };
        candidates.iter().find_map(|name| {
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
        let _task = reporter.task(
            "Fetching",
            &format!("{} at {}", remote.url.shown, short(id)),
            None,
        );
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
        let gix_remote = self
            .repo
            .remote_at(remote.url.fetch.as_str())
            .map_err(fetch_error)?
            .with_fetch_tags(Tags::None)
            .with_refspecs(specs.iter().map(String::as_str), Direction::Fetch)
            .map_err(fetch_error)?;
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

    /// The tree of `commit`, or of its `subdir` folder, and that folder's path with every
    /// symlink resolved (`""`: the whole repository). A `subdir` that is, or passes through,
    /// a symlink to a folder of the repository is followed, as the OpenHands SDK follows it.
    pub(crate) fn plugin_tree(
        &self,
        commit: ObjectId,
        subdir: Option<&str>,
    ) -> Result<(ObjectId, String), ResolveError> {
        let cache_error = |e: gix::Error| ResolveError::Cache {
            path: self.path.clone(),
            message: error_chain(&e),
        };
        let commit_obj = self.repo.find_commit(commit).map_err(cache_error)?;
        let tree = commit_obj.tree().map_err(cache_error)?;
        let Some(subdir) = subdir else {
            return Ok((tree.id, String::new()));
        };
        let view = GitTree {
            db: self,
            root: tree.id,
        };
        match tree_path::resolve_dir(&view, subdir)? {
            Ok(found) => Ok((found.dir, found.real_path)),
            Err(no) => Err(ResolveError::RepoPath {
                repo_path: subdir.to_owned(),
                rev: commit.to_string(),
                why: no.describe(subdir, "repository"),
            }),
        }
    }

    /// A tree of this database as a [`tree_path::Tree`], to follow symlinks in.
    pub(crate) fn tree_view(&self, root: ObjectId) -> GitTree<'_> {
        GitTree { db: self, root }
    }

    /// A regular file at `rel` inside `tree`, or `None`.
    pub(crate) fn read_file(
        &self,
        tree: ObjectId,
        rel: &str,
    ) -> Result<Option<Vec<u8>>, ResolveError> {
        let cache_error = |e: gix::Error| ResolveError::Cache {
            path: self.path.clone(),
            message: error_chain(&e),
        };
        let tree = self.repo.find_tree(tree).map_err(cache_error)?;
        let Some(entry) = tree.lookup_entry_by_path(rel).map_err(cache_error)? else {
            return Ok(None);
        };
        if !matches!(
            entry.mode().kind(),
            EntryKind::Blob | EntryKind::BlobExecutable
        ) {
            return Ok(None);
        }
        let blob = self
            .repo
            .find_blob(entry.object_id())
            .map_err(cache_error)?;
        Ok(Some(blob.data.clone()))
    }

    /// The NAR hash of a tree, computed from git objects without writing files, with the
    /// submodules left out of it (the export leaves them out too) and the files the
    /// runtime will skip.
    pub(crate) fn nar_hash(&self, tree: ObjectId, rev: ObjectId) -> Result<TreeHash, ResolveError> {
        let mut sink = Sha256Sink::default();
        let mut found = crate::skipped::Found::default();
        let submodules = {
            let mut nar = NarWriter::new(BufWriter::with_capacity(64 * 1024, &mut sink))?;
            // The path of the entry being written, for the skipped files.
            let mut path: Vec<Vec<u8>> = Vec::new();
            let shown = |path: &[Vec<u8>]| String::from_utf8_lossy(&path.join(&b'/')).into_owned();
            let submodules = self.walk(tree, rev, &[], &mut |event| match event {
                Event::Dir(_) => nar.begin_directory(),
                Event::EndDir => nar.end_directory(),
                Event::Entry(name) => {
                    path.push(name.to_vec());
                    nar.entry(name)
                }
                Event::EndEntry => {
                    path.pop();
                    nar.end_entry()
                }
                Event::File {
                    executable, data, ..
                } => {
                    found.file(&shown(&path), data.len() as u64);
                    nar.file(executable, data.len() as u64, &mut &data[..])
                }
                Event::Symlink { target, .. } => {
                    found.link(shown(&path), target);
                    nar.symlink(target)
                }
            })?;
            nar.finish()?.flush()?;
            submodules
        };
        Ok(TreeHash {
            hash: sink.finish(),
            submodules,
            skipped: found.judge(&self.tree_view(tree))?,
        })
    }

    /// Writes a tree into `dest` (an empty staging folder): folders, files with their
    /// execute bit, symlinks. Returns the paths of submodules that were skipped.
    pub(crate) fn export(
        &self,
        tree: ObjectId,
        rev: ObjectId,
        dest: &Path,
    ) -> Result<Vec<String>, ResolveError> {
        use std::os::unix::fs::PermissionsExt;
        let mut current = dest.to_owned();
        self.walk(tree, rev, &[], &mut |event| {
            match event {
                Event::Dir(None) | Event::EndEntry => {}
                Event::Dir(Some(_)) => fs_err::create_dir(&current)?,
                Event::Entry(name) => current.push(std::ffi::OsStr::from_bytes(name)),
                Event::EndDir => {}
                Event::File { executable, data } => {
                    fs_err::write(&current, data)?;
                    if executable {
                        fs_err::set_permissions(&current, std::fs::Permissions::from_mode(0o755))?;
                    }
                    berth_store::fault::pause_at(berth_store::fault::GIT_EXPORT_MID);
                }
                Event::Symlink { target } => {
                    fs_err::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), &current)?;
                }
            }
            if matches!(event, Event::EndEntry) {
                current.pop();
            }
            Ok(())
        })
    }

    /// Walks a tree depth-first with entries in NAR order (ascending bytes). Returns the
    /// skipped submodules.
    fn walk(
        &self,
        tree: ObjectId,
        rev: ObjectId,
        prefix: &[u8],
        visit: &mut dyn FnMut(Event<'_>) -> std::io::Result<()>,
    ) -> Result<Vec<String>, ResolveError> {
        let cache_error = |e: gix::Error| ResolveError::Cache {
            path: self.path.clone(),
            message: error_chain(&e),
        };
        let mut skipped = Vec::new();
        let tree_obj = self.repo.find_tree(tree).map_err(cache_error)?;
        let decoded = tree_obj.decode().map_err(|e| ResolveError::Cache {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let mut entries: Vec<(BString, EntryKind, ObjectId)> = decoded
            .entries
            .iter()
            .map(|e| (e.filename.to_owned(), e.mode.kind(), e.oid.to_owned()))
            .collect();
        drop(decoded);
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        visit(Event::Dir(if prefix.is_empty() { None } else { Some(()) }))?;
        for (name, kind, oid) in entries {
            let full = join(prefix, &name);
            if name.is_empty()
                || name.as_bytes() == b"."
                || name.as_bytes() == b".."
                || name.contains(&b'/')
                || name.contains(&0)
            {
                return Err(ResolveError::UnsafeTree {
                    rev: rev.to_string(),
                    path: String::from_utf8_lossy(&full).into_owned(),
                });
            }
            visit(Event::Entry(&name))?;
            if kind == EntryKind::Commit {
                // A submodule becomes an empty folder, as `git archive` and a checkout
                // without submodules leave it (and as Nix's git fetcher hashes it).
                skipped.push(String::from_utf8_lossy(&full).into_owned());
                visit(Event::Dir(Some(())))?;
                visit(Event::EndDir)?;
                visit(Event::EndEntry)?;
                continue;
            }
            match kind {
                EntryKind::Tree => {
                    skipped.extend(self.walk(oid, rev, &full, visit)?);
                }
                EntryKind::Blob | EntryKind::BlobExecutable => {
                    let blob = self.repo.find_blob(oid).map_err(cache_error)?;
                    visit(Event::File {
                        executable: kind == EntryKind::BlobExecutable,
                        data: &blob.data,
                    })?;
                }
                EntryKind::Link => {
                    let blob = self.repo.find_blob(oid).map_err(cache_error)?;
                    visit(Event::Symlink { target: &blob.data })?;
                }
                EntryKind::Commit => unreachable!("submodules were handled above"),
            }
            visit(Event::EndEntry)?;
        }
        visit(Event::EndDir)?;
        Ok(skipped)
    }
}

/// A git tree's NAR hash and what hashing it found.
pub(crate) struct TreeHash {
    pub hash: Sha256Hash,
    /// Submodules, hashed as empty folders (berth does not fetch them).
    pub submodules: Vec<String>,
    /// Files the runtime will skip.
    pub skipped: Vec<crate::skipped::Skipped>,
}

/// A git tree seen through [`tree_path::Tree`]: folders are tree ids, symlinks are blobs
/// (mode 120000) whose content is the target.
pub(crate) struct GitTree<'a> {
    db: &'a GitDb,
    root: ObjectId,
}

impl tree_path::Tree for GitTree<'_> {
    type Dir = ObjectId;

    fn root(&self) -> ObjectId {
        self.root
    }

    fn child(&self, dir: &ObjectId, name: &[u8]) -> Result<Node<ObjectId>, ResolveError> {
        let cache_error = |e: gix::Error| ResolveError::Cache {
            path: self.db.path.clone(),
            message: error_chain(&e),
        };
        let tree = self.db.repo.find_tree(*dir).map_err(cache_error)?;
        let Some(entry) = tree.find_entry(name) else {
            return Ok(Node::Missing);
        };
        Ok(match entry.mode().kind() {
            EntryKind::Tree => Node::Dir(entry.object_id()),
            EntryKind::Blob | EntryKind::BlobExecutable => Node::File,
            EntryKind::Commit => Node::Submodule,
            EntryKind::Link => {
                let blob = self
                    .db
                    .repo
                    .find_blob(entry.object_id())
                    .map_err(cache_error)?;
                Node::Link(blob.data.clone())
            }
        })
    }
}

enum Event<'a> {
    /// A folder starts; `None` for the root, which already exists when exporting.
    Dir(Option<()>),
    EndDir,
    Entry(&'a [u8]),
    EndEntry,
    File {
        executable: bool,
        data: &'a [u8],
    },
    Symlink {
        target: &'a [u8],
    },
}

fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    let mut full = prefix.to_vec();
    if !full.is_empty() {
        full.push(b'/');
    }
    full.extend_from_slice(name);
    full
}

/// The commit `want` names among the refs the remote advertised, and the ref that named it.
fn pick(
    map: &gix::remote::fetch::RefMap,
    want: &Want,
    remote: &Remote,
    reporter: &dyn Reporter,
) -> Result<(String, ObjectId), ResolveError> {
    let mut found: Vec<(String, Option<ObjectId>)> = Vec::new();
    for mapping in &map.mappings {
        if let gix::remote::fetch::refmap::Source::Ref(r) = &mapping.remote {
            let (name, commit) = match r {
                Ref::Direct {
                    full_ref_name,
                    object,
                }
                | Ref::Peeled {
                    full_ref_name,
                    object,
                    ..
                }
                | Ref::Symbolic {
                    full_ref_name,
                    object,
                    ..
                } => (full_ref_name, Some(*object)),
                Ref::Unborn { full_ref_name, .. } => (full_ref_name, None),
            };
            found.push((name.to_string(), commit));
        }
    }
    let lookup = |name: &str| found.iter().find(|(n, _)| n == name).map(|(_, c)| *c);
    match want {
        Want::DefaultBranch => match lookup("HEAD") {
            Some(Some(commit)) => Ok(("HEAD".to_owned(), commit)),
            _ => Err(ResolveError::EmptyRepository {
                url: remote.url.shown.clone(),
            }),
        },
        Want::Named(name) => {
            let (branch_ref, tag_ref) = if name.starts_with("refs/") {
                (name.clone(), String::new())
            } else {
                (format!("refs/heads/{name}"), format!("refs/tags/{name}"))
            };
            let (branch, tag) = (lookup(&branch_ref), lookup(&tag_ref));
            if let (Some(Some(b)), Some(Some(t))) = (branch, tag)
                && b != t
            {
                reporter.warn(&format!(
                    "`{}` has both a branch and a tag named `{name}`; using the branch (write `refs/tags/{name}` to use the tag)",
                    remote.url.shown
                ));
            }
            match (branch.flatten(), tag.flatten()) {
                (Some(commit), _) => Ok((branch_ref, commit)),
                (None, Some(commit)) => Ok((tag_ref, commit)),
                (None, None) => Err(ResolveError::RefNotFound {
                    url: remote.url.shown.clone(),
                    git_ref: name.clone(),
                }),
            }
        }
    }
}

fn open_or_init(path: &Path) -> Result<gix::Repository, String> {
    let mut repo = if path.join("HEAD").is_file() {
        gix::open(path).map_err(|e| error_chain(&e))?
    } else {
        if path.exists() {
            berth_store::remove_tree(path).map_err(|e| e.to_string())?;
        }
        fs_err::create_dir_all(path).map_err(|e| e.to_string())?;
        gix::init_bare(path).map_err(|e| error_chain(&e))?
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

fn fetch_error(remote: &Remote, e: &gix::Error) -> ResolveError {
    let url = remote.url.shown.clone();
    let message = remote.url.scrub(&error_chain(e));
    if e.iter_errors().any(crate::error::is_timeout) {
        ResolveError::Timeout { url, message }
    } else {
        ResolveError::Fetch { url, message }
    }
}

/// The messages of an error and its causes, joined, without repeats.
pub(crate) fn error_chain(e: &gix::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.iter_errors() {
        let text = cause.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}

/// The first 12 hex digits, for progress lines.
pub(crate) fn short(id: ObjectId) -> String {
    id.to_hex_with_len(12).to_string()
}
