//! The policy's `[sources]` as a run applies them: every source is matched before it is
//! contacted, so a denied one is never fetched (the front ends match the lock a run made
//! again, against the pins' own sources).

use std::sync::Arc;

use berth_lockfile_schema::governance::Policy;
use berth_lockfile_schema::{Lock, LockedPlugin};

use crate::error::{DeniedSource, PolicyDenied, ResolveError};

/// Which marketplace a plugin of a lock that a run did not make is matched with, when the
/// run fetches it (`sync` of an entry the store lacks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LockedPicks {
    /// The marketplace the lock records for a plugin picked from one (the project's own
    /// lock: the CLI, whose review matches the same).
    #[default]
    Credited,
    /// None: every plugin by its own source (a lock posted to a server is its client's
    /// word, and the server's review matches every plugin by its own source).
    Ignored,
}

/// Whether a lock's pins count for what they say of their content, when a run takes a
/// lock as it is (`sync`, a server given a lockfile): the `source`, `url`, `rev`,
/// `archive_hash`, `path` and `repo_path` of an entry are the word of whoever wrote the
/// lock, and a policy that decides by them (`[sources]`, signatures) is only as good as
/// that word.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LockedPins {
    /// As the lock says (the project's own lock, with no policy that decides by sources).
    #[default]
    Taken,
    /// Only once this store saw the pin produce the entry's hash (a pin record, made when
    /// an entry is fetched from its source or a pin is checked), or a substituter records
    /// that its pusher did; any other pin is fetched and hashed first, after its source
    /// passes `[sources]`, and a pin that gives other content fails the run. An entry
    /// fetched for a refused start can then never be claimed by another pin.
    Recorded,
    /// As `Recorded`, but only this store's records count, not a substituter's (a server
    /// whose fleet authenticates its records: a cache's are not).
    RecordedHere,
}

impl LockedPins {
    /// Whether a lock's pins are checked at all.
    pub(crate) fn checked(self) -> bool {
        self != Self::Taken
    }
}

/// The policy whose `[sources]` a run's sources must pass before they are contacted.
#[derive(Debug, Clone, Default)]
pub struct SourceRules {
    /// The effective policy ([`Policy::default`]: no `[sources]`, nothing refused).
    policy: Arc<Policy>,
    locked_picks: LockedPicks,
}

impl SourceRules {
    /// The rules of `policy`, with a lock's picks matched as `locked_picks` says.
    pub fn new(policy: Arc<Policy>, locked_picks: LockedPicks) -> Self {
        Self {
            policy,
            locked_picks,
        }
    }

    /// The effective policy.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Refuses a plugin's `source` (as the lock writes it) that the policy does not let
    /// through, picked from the marketplace `marketplace` (its name and source) if it is.
    pub(crate) fn check_plugin(
        &self,
        source: &str,
        marketplace: Option<(&str, &str)>,
    ) -> Result<(), ResolveError> {
        self.policy
            .check_source(source, marketplace.map(|(_, s)| s))
            .map_err(|rule| {
                denied(
                    DeniedSource::Plugin {
                        source: source.to_owned(),
                        marketplace: marketplace.map(|(n, s)| (n.to_owned(), s.to_owned())),
                    },
                    rule,
                )
            })
    }

    /// Refuses a marketplace at `source` that a deny pattern matches (no plugin picked
    /// from it could pass); one outside an allow list is read, as its plugins may pass
    /// by their own sources.
    pub(crate) fn check_marketplace(&self, source: &str) -> Result<(), ResolveError> {
        self.policy
            .check_marketplace_source(source)
            .map_err(|rule| {
                denied(
                    DeniedSource::Marketplace {
                        source: source.to_owned(),
                    },
                    rule,
                )
            })
    }

    /// Refuses a plugin of `lock` the policy does not let through: by its source, and by
    /// the source the lock records for the marketplace it was picked from (as
    /// [`LockedPicks`] says).
    pub(crate) fn check_locked(
        &self,
        lock: &Lock,
        plugin: &LockedPlugin,
    ) -> Result<(), ResolveError> {
        let marketplace = match self.locked_picks {
            LockedPicks::Ignored => None,
            LockedPicks::Credited => plugin
                .requested
                .as_deref()
                .and_then(|r| r.rsplit_once('@'))
                .and_then(|(_, alias)| lock.marketplaces.iter().find(|m| m.name == alias))
                .map(|m| (m.name.as_str(), m.source.as_str())),
        };
        self.check_plugin(&plugin.source, marketplace)
    }
}

fn denied(
    what: DeniedSource,
    rule: berth_lockfile_schema::governance::SourceDenied,
) -> ResolveError {
    ResolveError::PolicyDenied(Box::new(PolicyDenied { what, rule }))
}
