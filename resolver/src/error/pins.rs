//! What checking a lock's pin against its source found, when this store never saw the pin
//! produce its entry.

use berth_lockfile_schema::Sha256Hash;

/// A pin that does not give what its lock says. The lock was written by someone other
/// than this store (a client, another machine): its `source`, `url`, `rev`, `path` and
/// `repo_path` are only its writer's word, and here that word does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinMismatch {
    /// Fetched and hashed, the pin gives other content.
    #[error(
        "hash mismatch: the lock says `{pin}` gives `{expected}`, but it gives `{actual}`, so the lock does not say where this plugin came from; lock it again from its source (`berth plugins lock`)"
    )]
    Content {
        /// The pin, as messages show it (its source and commit, or its source).
        pin: String,
        /// The lock's hash.
        expected: Sha256Hash,
        /// What the pin gives.
        actual: Sha256Hash,
    },
    /// The lock's `url` is not what its `source` fetches.
    #[error(
        "the lock's `url = \"{url}\"` is not what its `source` fetches (`{fetched}`); lock the plugin again from its source (`berth plugins lock`)"
    )]
    Url {
        /// The lock's `url`.
        url: String,
        /// What `source` fetches.
        fetched: String,
    },
}

impl From<PinMismatch> for super::ResolveError {
    fn from(e: PinMismatch) -> Self {
        Self::Pin(Box::new(e))
    }
}
