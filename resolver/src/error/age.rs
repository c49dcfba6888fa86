//! What the release-age cutoff (`exclude-newer`) refuses.

/// A request the cutoff leaves nothing to lock for.
#[derive(Debug, thiserror::Error)]
pub enum TooNew {
    /// An exact pin (a tag named exactly, a full commit, an exact package version) made at
    /// or after the cutoff.
    #[error(
        "{what} was {made} {at}, after the cutoff {cutoff}; pin an older one, or move the cutoff"
    )]
    Pin {
        /// What was pinned: `` tag `v1.3.0` of `URL` ``.
        what: String,
        /// `tagged`, `committed`, `published`.
        made: &'static str,
        /// When, as messages show it.
        at: String,
        /// The cutoff and what set it.
        cutoff: String,
    },
    /// Nothing the request allows was made before the cutoff.
    #[error(
        "{what} has nothing made before the cutoff {cutoff}{}; move the cutoff, or ask for something older",
        newest.as_ref().map(|n| format!(" (the newest is {n})")).unwrap_or_default()
    )]
    Nothing {
        /// What was asked: `` `version = "^1"` of `URL` ``.
        what: String,
        /// The cutoff and what set it.
        cutoff: String,
        /// The newest candidate and when it was made.
        newest: Option<String>,
    },
    /// What would be locked is dated before the cutoff, but something it was made on top
    /// of (a first parent, the commit a tag names) is dated after it: the dates go
    /// backwards, so the earlier one is not believed.
    #[error(
        "{what}: {older} comes before the cutoff {cutoff}, yet {newer} comes after it; git dates are whatever a commit's or tag's author wrote, and dates that go backwards are the mark of a backdated one, so it is not locked: review the history from there (`git log --first-parent`), then pin the commit you reviewed with `ref = \"FULL_COMMIT\"`"
    )]
    Backdated {
        /// What was asked: `` `main` of `URL` ``.
        what: String,
        /// What would be locked and its date: `` commit `d25e5fc32739` (committed 2020-01-01) ``.
        older: String,
        /// What it was made on, and its date: `` its first parent `0a1b2c3d4e5f` (committed
        /// 2026-12-01) ``.
        newer: String,
        /// The cutoff and what set it.
        cutoff: String,
    },
}
