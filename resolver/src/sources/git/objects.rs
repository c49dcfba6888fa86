//! A locked commit's objects as a signature check reads them: the commit object, and the
//! annotated tag the plugin's ref names. A tag found is kept in the cache under
//! `refs/berth/tags/NAME` (a ref `lock` never moves), so a later run reads it offline.

use berth_lockfile_schema::LockedPlugin;
use gix::ObjectId;
use gix::protocol::handshake::Ref;
use gix::remote::fetch::Shallow;
use gix::remote::fetch::refmap::Source;
use gix::remote::ref_map;

use super::local::LocalRepo;
use super::{GitDb, Remote, fetch_error};
use crate::context::{Env, Network};
use crate::error::ResolveError;
use crate::sources::{GitObjects, TagObject};

impl GitDb {
    /// The objects of `locked`'s commit `id` ([`GitDb::signature_objects`]), the commit
    /// fetched first when it is not here and the run may use the network.
    pub(crate) fn objects_for(
        &self,
        env: &Env<'_>,
        remote: &Remote,
        (id, locked): (ObjectId, &LockedPlugin),
        network: Network,
    ) -> Result<GitObjects, ResolveError> {
        if !self.has_commit(id) {
            env.settings
                .require_network(|| format!("commit `{id}` of `{}`", remote.url.shown))?;
            let hint = locked.resolved_ref.as_deref().or(locked.git_ref.as_deref());
            self.fetch_commit(remote, id, hint, env.reporter)?;
        }
        self.signature_objects(remote, id, tag_of(locked).as_deref(), network)
    }

    /// Reads, while this database is open, the objects that say who signed commit `rev`
    /// (and its `tag`), for the lock's signature step, when the run reads signers and this
    /// is a repository on this machine (a cache would be locked and opened again anyway);
    /// a failure is left for that step to meet and report.
    pub(crate) fn keep_signature_objects(
        &self,
        env: &Env<'_>,
        (remote, cache): (&Remote, &str),
        rev: ObjectId,
        tag: Option<String>,
    ) {
        if env.settings.signature_reader.is_none() || !self.in_place {
            return;
        }
        let network = env.settings.network;
        if let Ok(objects) = self.signature_objects(remote, rev, tag.as_deref(), network) {
            let tag_object = objects.tag.map(|t| t.object);
            env.memo
                .remember_objects((cache.to_owned(), rev, tag), (objects.commit, tag_object));
        }
    }

    /// The commit `id` (which must be here) and, when `tag` is given, the annotated tag of
    /// that name if it tags `id`: kept from an earlier run, read from a repository on
    /// this machine, or (with `network` online) fetched from the remote.
    pub(crate) fn signature_objects(
        &self,
        remote: &Remote,
        id: ObjectId,
        tag: Option<&str>,
        network: Network,
    ) -> Result<GitObjects, ResolveError> {
        let commit = self
            .repo
            .find_object(id)
            .map_err(|e| self.cache_error(e))?
            .detach()
            .data;
        let tag = match tag {
            Some(name) => self
                .tag_object(remote, id, name, network)?
                .map(|object| TagObject {
                    name: name.to_owned(),
                    object,
                }),
            None => None,
        };
        Ok(GitObjects {
            rev: id.to_string(),
            commit,
            tag,
        })
    }

    /// The object of the annotated tag `name` of commit `id`, if the remote has one.
    fn tag_object(
        &self,
        remote: &Remote,
        id: ObjectId,
        name: &str,
        network: Network,
    ) -> Result<Option<Vec<u8>>, ResolveError> {
        let kept = format!("refs/berth/tags/{name}");
        if self.in_place {
            return Ok(annotated_tag(&self.repo, &format!("refs/tags/{name}"), id));
        }
        if let Some(found) = annotated_tag(&self.repo, &kept, id) {
            return Ok(Some(found));
        }
        // What the cache last saw of the remote ([`GitDb::resolve_offline`] reads it): a
        // branch of that name is what the ref names (a branch wins), so no tag is asked for.
        let branch = format!("refs/heads/{name}");
        if matches!(self.repo.try_find_reference(branch.as_str()), Ok(Some(_))) {
            return Ok(None);
        }
        if let Some(local) = LocalRepo::of(remote) {
            let local = local?;
            let Some(object) = annotated_tag(&local.repo, &format!("refs/tags/{name}"), id) else {
                return Ok(None);
            };
            let tag_id = self.write_raw_object(gix::object::Kind::Tag, &object)?;
            self.set_ref(&kept, tag_id, "berth: tag read for its signature")?;
            return Ok(Some(object));
        }
        if network == Network::Offline {
            return Ok(None);
        }
        self.fetch_annotated_tag(remote, name, &kept)?;
        Ok(annotated_tag(&self.repo, &kept, id))
    }

    /// Fetches the remote's tag `name` into the ref `kept` when it is an annotated tag; a
    /// lightweight tag, or none, fetches nothing.
    fn fetch_annotated_tag(
        &self,
        remote: &Remote,
        name: &str,
        kept: &str,
    ) -> Result<(), ResolveError> {
        let spec = format!("+refs/tags/{name}:{kept}");
        let fetch_error = |e: gix::Error| fetch_error(remote, &e);
        let gix_remote = self.remote_with([spec.as_str()], remote)?;
        let connection = remote.connect(&gix_remote)?;
        let options = ref_map::Options {
            prefix_from_spec_as_filter_on_remote: true,
            ..Default::default()
        };
        let prepare = connection
            .prepare_fetch(gix::progress::Discard, options)
            .map_err(fetch_error)?;
        let annotated = prepare
            .ref_map()
            .mappings
            .iter()
            .any(|m| matches!(&m.remote, Source::Ref(Ref::Peeled { .. })));
        if !annotated {
            return Ok(());
        }
        remote.cancel.check()?;
        prepare
            .with_shallow(Shallow::DepthAtRemote(1.try_into().expect("1 is not zero")))
            .receive(gix::progress::Discard, remote.cancel.flag())
            .map_err(|e| remote.cancelled_or(fetch_error(e)))?;
        Ok(())
    }

    /// Writes an object's bytes as they are, returning its id.
    fn write_raw_object(
        &self,
        kind: gix::object::Kind,
        data: &[u8],
    ) -> Result<ObjectId, ResolveError> {
        use gix::objs::Write as _;
        self.repo
            .objects
            .write_buf(kind, data)
            .map_err(|e| self.cache_error(e))
    }
}

/// The object of the annotated tag `reference` points at in `repo`, when it tags the
/// commit `id` (its first line is `object ID`).
fn annotated_tag(repo: &gix::Repository, reference: &str, id: ObjectId) -> Option<Vec<u8>> {
    let target = repo
        .try_find_reference(reference)
        .ok()??
        .target()
        .try_id()?
        .to_owned();
    let object = repo.find_object(target).ok()?;
    let tags_it = object.kind == gix::object::Kind::Tag
        && object.data.starts_with(format!("object {id}\n").as_bytes());
    tags_it.then(|| object.detach().data)
}

/// The tag the plugin's ref names, if it may name one: the tag a `version` range picked,
/// a `refs/tags/` ref, or a plain name (a branch wins over a tag of that name, so the tag
/// counts only when it tags the locked commit, which [`annotated_tag`] checks).
fn tag_of(locked: &LockedPlugin) -> Option<String> {
    tag_named(locked.resolved_ref.as_deref(), locked.git_ref.as_deref())
}

/// [`tag_of`] a plugin whose lock says `resolved_ref` and `git_ref`.
pub(crate) fn tag_named(resolved_ref: Option<&str>, git_ref: Option<&str>) -> Option<String> {
    if let Some(tag) = resolved_ref {
        return Some(tag.to_owned());
    }
    let named = git_ref?;
    if berth_lockfile_schema::is_full_commit_id(named) {
        return None;
    }
    match named.strip_prefix("refs/") {
        Some(full) => full.strip_prefix("tags/").map(str::to_owned),
        None => Some(named.to_owned()),
    }
}

/// The objects [`GitDb::keep_signature_objects`] kept in this run for `locked`'s commit
/// `id` in the repository `cache`.
pub(crate) fn kept(
    env: &Env<'_>,
    cache: &str,
    id: ObjectId,
    locked: &LockedPlugin,
) -> Option<GitObjects> {
    let tag = tag_of(locked);
    let key = (cache.to_owned(), id, tag.clone());
    let (commit, object) = env.memo.take_objects(&key, env.started)?;
    Some(GitObjects {
        rev: id.to_string(),
        commit,
        tag: tag
            .zip(object)
            .map(|(name, object)| TagObject { name, object }),
    })
}
