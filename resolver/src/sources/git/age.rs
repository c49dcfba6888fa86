//! Release age for git sources (`exclude-newer`): when a tag or commit was made (an
//! annotated tag's tagger date, else the commit's committer date), a `version` range's
//! tags made after the cutoff passed over, a branch walked back along its first parents to
//! the newest commit made before the cutoff, and an exact pin (a tag named exactly, a full
//! commit) made after it refused.
//!
//! These dates are whatever whoever made the commit or tag wrote. What can be checked is
//! that they do not go backwards across the cutoff: a branch's commit made before it must
//! not sit on a first parent made after it (within [`BELOW_CHECKED`] commits), and a tag
//! made before it must not name a commit made after it; either is refused.

use std::sync::atomic::Ordering;

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

/// How many first parents below the commit a branch resolves to must be dated before the
/// cutoff too. One deepening brings them; a longer run of backdated commits is not seen.
pub(crate) const BELOW_CHECKED: usize = 32;

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
    db: &'a GitDb,
    remote: &'a Remote,
    env: &'a Env<'a>,
    cutoff: &'a ActiveCutoff,
}

impl<'a> Dated<'a> {
    /// The repository as release age reads it, when the run has a cutoff; the run notes
    /// that it relied on git dates, which the lock says once are their author's word.
    pub(super) fn new(db: &'a GitDb, remote: &'a Remote, env: &'a Env<'a>) -> Option<Self> {
        let cutoff = env.cutoff.as_ref()?;
        env.git_dated.store(true, Ordering::Relaxed);
        Some(Self {
            db,
            remote,
            env,
            cutoff,
        })
    }
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
                let what = format!("`version = \"{range}\"` of `{}`", self.remote.url.shown);
                self.tag_after_commit(what, tag, made, *commit)?;
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
                if let Some(made) = made {
                    self.tag_after_commit(format!("tag `{tag}` of `{url}`"), tag, made, rev)?;
                }
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

    /// Refuses tag `tag`, made at `made` (before the cutoff), when the commit it names was
    /// made after the cutoff: a tag is made on a commit that exists, so its date is false.
    fn tag_after_commit(
        &self,
        what: String,
        tag: &str,
        made: i64,
        commit: ObjectId,
    ) -> Result<(), ResolveError> {
        match self.db.commit_made(commit) {
            Some((committed, _)) if self.cutoff.excludes(committed) => Err(TooNew::Backdated {
                what,
                older: format!("tag `{tag}` ({})", made_text("tagged", Some(made))),
                newer: format!(
                    "the commit it tags, `{}` ({})",
                    short(commit),
                    made_text("committed", Some(committed))
                ),
                cutoff: self.cutoff.describe(),
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// Walks a branch from `tip` along first parents to the newest commit made before the
    /// cutoff, deepening a shallow cache's history as needed, and checks the history below
    /// it ([`Dated::dated_below`]).
    fn walk_back(
        &self,
        want: &Want,
        label: &str,
        tip: ObjectId,
    ) -> Result<(ObjectId, Option<HeldBack>), ResolveError> {
        let url = &self.remote.url.shown;
        let mut history = History::new(self, want, label);
        let (mut id, mut tip_made) = (tip, None);
        while let Some((made, parent)) = history.commit(id)? {
            if id == tip {
                tip_made = Some(made);
            }
            if !self.cutoff.excludes(made) {
                self.dated_below(&mut history, id, made, parent)?;
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

    /// Refuses `found`, made at `made` (before the cutoff), when one of its first
    /// [`BELOW_CHECKED`] first parents (from `parent` down) was made after the cutoff: the
    /// dates go backwards across it, the mark of a commit dated in the past on top of newer
    /// ones. History the cache lacks and cannot fetch ends the check.
    fn dated_below(
        &self,
        history: &mut History<'_, '_>,
        found: ObjectId,
        made: i64,
        parent: Option<ObjectId>,
    ) -> Result<(), ResolveError> {
        let mut next = parent;
        for depth in 1..=BELOW_CHECKED {
            let Some(id) = next else { return Ok(()) };
            let Some((below, parent)) = history.commit(id)? else {
                return Ok(());
            };
            if self.cutoff.excludes(below) {
                let newer = format!("`{}` ({})", short(id), made_text("committed", Some(below)));
                return Err(TooNew::Backdated {
                    what: format!("{} of `{}`", history.label, self.remote.url.shown),
                    older: format!(
                        "commit `{}` ({})",
                        short(found),
                        made_text("committed", Some(made))
                    ),
                    newer: match depth {
                        1 => format!("its first parent {newer}"),
                        n => format!("{newer}, {n} first parents below it,"),
                    },
                    cutoff: self.cutoff.describe(),
                }
                .into());
            }
            next = parent;
        }
        Ok(())
    }
}

/// A branch's history as the walk reads it: a commit the cache lacks is fetched by
/// deepening the branch (by [`FIRST_DEEPEN`] commits, doubling each time, at most
/// [`MAX_DEEPEN_ROUNDS`] times).
struct History<'d, 'a> {
    dated: &'d Dated<'a>,
    want: &'d Want,
    label: &'d str,
    deepen_by: u32,
    rounds: u32,
}

impl<'d, 'a> History<'d, 'a> {
    fn new(dated: &'d Dated<'a>, want: &'d Want, label: &'d str) -> Self {
        Self {
            dated,
            want,
            label,
            deepen_by: FIRST_DEEPEN,
            rounds: 0,
        }
    }

    /// When commit `id` was made and its first parent; `None` when the history ends before
    /// it (the cache lacks it and cannot fetch it). Offline, a missing commit is an error.
    fn commit(&mut self, id: ObjectId) -> Result<Option<(i64, Option<ObjectId>)>, ResolveError> {
        let dated = self.dated;
        loop {
            if let Some(found) = dated.db.commit_made(id) {
                return Ok(Some(found));
            }
            if dated.may_fetch() && self.rounds < MAX_DEEPEN_ROUNDS {
                dated.env.settings.cancel.check()?;
                dated.db.deepen(dated.remote, self.want, self.deepen_by)?;
                self.deepen_by = self.deepen_by.saturating_mul(2);
                self.rounds += 1;
            } else if dated.env.settings.network == Network::Offline && !dated.db.in_place {
                return Err(ResolveError::Offline {
                    what: format!(
                        "the history of {} of `{}` before the cutoff",
                        self.label, dated.remote.url.shown
                    ),
                });
            } else {
                return Ok(None);
            }
        }
    }
}

/// `tagged 2026-12-01`, or that the date could not be read.
fn made_text(verb: &str, at: Option<i64>) -> String {
    match at {
        Some(at) => format!("{verb} {}", show_seconds(at)),
        None => format!("{verb} at a time berth could not read"),
    }
}
