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
}
