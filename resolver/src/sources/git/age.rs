//! Release age for git sources (`exclude-newer`): when a tag or commit was made (an
//! annotated tag's tagger date, else the commit's committer date), a `version` range's
//! tags made after the cutoff passed over, a branch walked back along its first parents to
//! the newest commit made before the cutoff, and an exact pin (a tag named exactly, a full
//! commit) made after it refused.

use berth_lockfile_schema::CommitId;
use gix::ObjectId;
use gix::remote::fetch::Shallow;

use super::{GitDb, Remote, Want, short};
use crate::context::{ActiveCutoff, Env, Network, show_seconds};
use crate::error::{ResolveError, TooNew};
use crate::sources::HeldBack;

/// How many times a branch's history is deepened (doubling each time, from
/// [`FIRST_DEEPEN`] commits) looking for a commit made before the cutoff.
const MAX_DEEPEN_ROUNDS: u32 = 12;
const FIRST_DEEPEN: u32 = 32;

impl GitDb {
    /// When commit `id` was made (its committer's date, in seconds) and its first parent;
    /// `None` when the database does not have it.
    fn commit_made(&self, id: ObjectId) -> Option<(i64, Option<ObjectId>)> {
        let object = self.repo.try_find_object(id).ok()??;
        let commit = object.try_into_commit().ok()?;
        let seconds = commit.committer().ok()?.time().ok()?.seconds;
        let parent = commit.parent_ids().next().map(gix::Id::detach);
        Some((seconds, parent))
    }

    /// When tag `name` was made, as long as the database's `refs/tags/NAME` leads to
    /// `commit`: an annotated tag's tagger date, else the commit's date.
    fn tag_made(&self, name: &str, commit: ObjectId) -> Option<i64> {
        let mut reference = self
            .repo
            .try_find_reference(format!("refs/tags/{name}").as_str())
            .ok()??;
        let target = reference.target().try_id()?.to_owned();
        if reference.peel_to_commit().ok()?.id != commit {
            return None;
        }
        let object = self.repo.try_find_object(target).ok()??;
        if object.kind == gix::object::Kind::Tag
            && let Ok(Some(tagger)) = object.clone().into_tag().tagger()
            && let Ok(time) = tagger.time()
        {
            return Some(time.seconds);
        }
        self.commit_made(commit).map(|(seconds, _)| seconds)
    }

    /// Whether `name` (as a `ref` writes it) is a branch leading to `rev`, rather than a
    /// tag: a branch wins when both exist, as [`super::refs::pick`] decides.
    fn names_branch(&self, name: &str, rev: ObjectId) -> bool {
        if name.starts_with("refs/tags/") {
            return false;
        }
        let full = if name.starts_with("refs/") {
            name.to_owned()
        } else {
            format!("refs/heads/{name}")
        };
        self.repo
            .try_find_reference(full.as_str())
            .ok()
            .flatten()
            .and_then(|mut r| r.peel_to_commit().ok())
            .is_some_and(|c| c.id == rev)
    }

    /// Brings tag `name` (its tag object and commit) into the cache, depth 1.
    fn fetch_tag(&self, remote: &Remote, name: &str) -> Result<(), ResolveError> {
        let spec = format!("+refs/tags/{name}:refs/tags/{name}");
        let depth = Shallow::DepthAtRemote(1.try_into().expect("1 is not zero"));
        self.fetch_specs(remote, &[spec], depth)
    }

    /// Fetches `by` more commits of the history of what `want` names.
    fn deepen(&self, remote: &Remote, want: &Want, by: u32) -> Result<(), ResolveError> {
        let spec = match want {
            Want::DefaultBranch => "+HEAD:refs/berth/HEAD".to_owned(),
            Want::Named(name) if name.starts_with("refs/") => format!("+{name}:{name}"),
            Want::Named(name) => format!("+refs/heads/{name}:refs/heads/{name}"),
        };
        self.fetch_specs(remote, &[spec], Shallow::Deepen(by))
    }
}

/// A git repository as release age reads it: its database, its remote and the run.
pub(super) struct Dated<'a> {
    pub(super) db: &'a GitDb,
    pub(super) remote: &'a Remote,
    pub(super) env: &'a Env<'a>,
    pub(super) cutoff: &'a ActiveCutoff,
}

impl Dated<'_> {
    fn may_fetch(&self) -> bool {
        !self.db.in_place && self.env.settings.network == Network::Online
    }

    /// When the remote's tag `name` (leading to `commit`) was made, fetching the tag when
    /// the cache lacks it; `None` when that cannot be read.
    fn tag_made(&self, name: &str, commit: ObjectId) -> Result<Option<i64>, ResolveError> {
        if let Some(made) = self.db.tag_made(name, commit) {
            return Ok(Some(made));
        }
        if !self.may_fetch() {
            return Ok(None);
        }
        self.db.fetch_tag(self.remote, name)?;
        Ok(self.db.tag_made(name, commit))
    }

    /// The first of `candidates` (tags and their commits, best first) made before the
    /// cutoff, and the best one passed over. A tag whose date cannot be read is passed
    /// over too: the cutoff fails closed.
    pub(super) fn pick_tag(
        &self,
        range: &str,
        candidates: &[(String, ObjectId)],
    ) -> Result<(String, Option<HeldBack>), ResolveError> {
        let mut passed: Option<HeldBack> = None;
        for (tag, commit) in candidates {
            let made = self.tag_made(tag, *commit)?;
            if let Some(made) = made
                && !self.cutoff.excludes(made)
            {
                return Ok((tag.clone(), passed));
            }
            if passed.is_none() {
                passed = Some(HeldBack {
                    newer: format!("{tag} ({})", made_text("tagged", made)),
                });
            }
        }
        Err(TooNew::Nothing {
            what: format!("`version = \"{range}\"` of `{}`", self.remote.url.shown),
            cutoff: self.cutoff.describe(),
            newest: passed.map(|p| p.newer),
        }
        .into())
    }

    /// The commit to lock for `wanted` (a `ref`, or `None` for the default branch), which
    /// names `rev` now: an exact pin (a full commit, a tag) made at or after the cutoff is
    /// an error; a branch is walked back to its newest first-parent ancestor made before
    /// it. Returns the commit and, for a branch walked back, what was passed over.
    pub(super) fn settle(
        &self,
        wanted: Option<&str>,
        rev: ObjectId,
    ) -> Result<(ObjectId, Option<HeldBack>), ResolveError> {
        let url = &self.remote.url.shown;
        match wanted {
            Some(r) if CommitId::parse(r).is_some() => {
                let made = self.db.commit_made(rev).map(|(s, _)| s);
                self.exact(format!("commit `{r}` of `{url}`"), "committed", made)?;
                Ok((rev, None))
            }
            Some(r) if !self.db.names_branch(r, rev) => {
                let tag = r.strip_prefix("refs/tags/").unwrap_or(r);
                let made = self.tag_made(tag, rev)?;
                self.exact(format!("tag `{tag}` of `{url}`"), "tagged", made)?;
                Ok((rev, None))
            }
            Some(r) => self.walk_back(&Want::Named(r.to_owned()), &format!("`{r}`"), rev),
            None => self.walk_back(&Want::DefaultBranch, "the default branch", rev),
        }
    }

    /// Refuses an exact pin made at or after the cutoff (or whose date cannot be read).
    fn exact(&self, what: String, made: &'static str, at: Option<i64>) -> Result<(), ResolveError> {
        match at {
            Some(at) if !self.cutoff.excludes(at) => Ok(()),
            _ => Err(TooNew::Pin {
                what,
                made,
                at: made_text("", at).trim_start().to_owned(),
                cutoff: self.cutoff.describe(),
            }
            .into()),
        }
    }

    /// Walks a branch from `tip` along first parents to the newest commit made before the
    /// cutoff, deepening a shallow cache's history as needed.
    fn walk_back(
        &self,
        want: &Want,
        label: &str,
        tip: ObjectId,
    ) -> Result<(ObjectId, Option<HeldBack>), ResolveError> {
        let url = &self.remote.url.shown;
        let (mut id, mut deepen_by, mut rounds) = (tip, FIRST_DEEPEN, 0);
        let mut tip_made = None;
        loop {
            match self.db.commit_made(id) {
                Some((made, parent)) => {
                    if id == tip {
                        tip_made = Some(made);
                    }
                    if !self.cutoff.excludes(made) {
                        let passed = (id != tip).then(|| HeldBack {
                            newer: format!(
                                "{label} at {} ({})",
                                short(tip),
                                made_text("committed", tip_made)
                            ),
                        });
                        return Ok((id, passed));
                    }
                    match parent {
                        Some(parent) => id = parent,
                        None => break,
                    }
                }
                None if self.may_fetch() && rounds < MAX_DEEPEN_ROUNDS => {
                    self.env.settings.cancel.check()?;
                    self.db.deepen(self.remote, want, deepen_by)?;
                    deepen_by = deepen_by.saturating_mul(2);
                    rounds += 1;
                }
                None if self.env.settings.network == Network::Offline && !self.db.in_place => {
                    return Err(ResolveError::Offline {
                        what: format!("the history of {label} of `{url}` before the cutoff"),
                    });
                }
                None => break,
            }
        }
        Err(TooNew::Nothing {
            what: format!("{label} of `{url}`"),
            cutoff: self.cutoff.describe(),
            newest: Some(format!(
                "{} ({})",
                short(tip),
                made_text("committed", tip_made)
            )),
        }
        .into())
    }
}

/// `tagged 2026-12-01`, or that the date could not be read.
fn made_text(verb: &str, at: Option<i64>) -> String {
    match at {
        Some(at) => format!("{verb} {}", show_seconds(at)),
        None => format!("{verb} at a time berth could not read"),
    }
}
