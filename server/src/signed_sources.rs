//! `[sources] require_signed` on this server (`berth serve --policy`): every plugin of a
//! conversation's lock, whether the server resolved it or a client posted it, must come
//! from a git commit (or the annotated tag its ref names) signed by a key the policy's
//! allowed-signers files list. The resolver reads the objects from the server's git cache,
//! fetching a commit it lacks when the server is online and the source policy admits it;
//! the runtime checks the signatures and words the refusal, as it does for the CLI.
//!
//! The check runs when a lock's plugin set is first built, beside the rest of the run
//! policy, so a set cached under the policy was checked when it was built. A commit that
//! passes is remembered for the process lifetime (the policy is read once at start, and a
//! commit's objects never change), so a new lock of known plugins reads no git object.

use std::collections::HashSet;
use std::sync::Mutex;

use axum::http::StatusCode;
use berth_lockfile_schema::governance::Policy;
use berth_lockfile_schema::{Lock, LockedPlugin, Pin};
use berth_resolver::{EntryError, GitObjects, ObjectsFrom, ResolveError, Settings};
use berth_review::{SignedObjects, unsigned_source};
use berth_store::{Store, unpoisoned};

use crate::error::AppError;
use crate::report::LogReporter;

/// How many passing (source, commit, ref) verdicts are remembered; past it the memory
/// starts afresh, and commits are read again as they come.
const VERDICTS_MAX: usize = 65_536;

/// What makes a verdict: the repository, the commit, and the refs that may name a tag.
type VerdictKey = (String, String, Option<String>, Option<String>);

/// The plugins found signed as the policy asks, for the process lifetime.
#[derive(Debug, Default)]
pub(crate) struct SignedVerdicts(Mutex<HashSet<VerdictKey>>);

impl SignedVerdicts {
    fn passed(&self, key: &VerdictKey) -> bool {
        unpoisoned(self.0.lock()).contains(key)
    }

    fn remember(&self, key: Option<VerdictKey>) {
        let Some(key) = key else { return };
        let mut passed = unpoisoned(self.0.lock());
        if passed.len() >= VERDICTS_MAX {
            passed.clear();
        }
        passed.insert(key);
    }
}

/// The verdict's key of a git plugin; `None` for a source that is not git.
fn key_of(locked: &LockedPlugin) -> Option<VerdictKey> {
    let Pin::Git(pin) = &locked.pin else {
        return None;
    };
    Some((
        pin.url.clone(),
        pin.rev.to_string(),
        locked.resolved_ref.clone(),
        locked.git_ref.clone(),
    ))
}

/// Refuses `lock` with 403 `policy_denied`, naming each plugin, its commit and why, when
/// `policy` requires signed sources and a plugin is not signed as it asks. The objects are
/// read from `store`'s git cache under `settings` (the server's source policy, network and
/// deadline); a commit whose objects cannot be read is refused the same way when the
/// server is offline, and a fetch that fails or outlasts the deadline answers as any fetch
/// does.
pub(crate) fn check_signed_sources(
    verdicts: &SignedVerdicts,
    policy: &Policy,
    (store, settings): (&Store, &Settings),
    lock: &Lock,
) -> Result<(), AppError> {
    if policy.source_signers().is_empty() {
        return Ok(());
    }
    // Only `plugins` is read: the lock of the plugins not known to pass.
    let unknown = Lock {
        plugins: lock
            .plugins
            .iter()
            .filter(|locked| key_of(locked).is_none_or(|key| !verdicts.passed(&key)))
            .cloned()
            .collect(),
        ..Lock::default()
    };
    if unknown.plugins.is_empty() {
        return Ok(());
    }
    let outcomes = berth_resolver::git_objects(
        store,
        settings,
        &LogReporter,
        &unknown,
        None,
        ObjectsFrom::Cache,
    );
    let mut problems = Vec::new();
    let mut errors = Vec::new();
    for (locked, outcome) in unknown.plugins.iter().zip(outcomes) {
        let name = &locked.name;
        match outcome.objects {
            Ok(objects) => {
                let objects = objects.as_ref().map(signed);
                match unsigned_source(policy, name, &locked.source, objects.as_ref()) {
                    Some(problem) => problems.push(problem),
                    None => verdicts.remember(key_of(locked)),
                }
            }
            Err(e @ ResolveError::Offline { .. }) => problems.push(format!(
                "plugin `{name}`: could not read its commit to check its signature: {e}; the server runs with `--offline`, so it checks only commits its git cache holds"
            )),
            Err(e) => errors.push(EntryError {
                label: format!("plugin `{name}`"),
                error: Box::new(e),
            }),
        }
    }
    if !problems.is_empty() {
        // What could not be read is said too, after what is refused.
        problems.extend(errors.iter().map(ToString::to_string));
        return Err(AppError::new(
            StatusCode::FORBIDDEN,
            "policy_denied",
            problems.join("; "),
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(AppError::from_entries(&errors))
    }
}

/// The objects as the runtime's check takes them.
fn signed(objects: &GitObjects) -> SignedObjects<'_> {
    SignedObjects {
        rev: &objects.rev,
        commit: &objects.commit,
        tag: objects
            .tag
            .as_ref()
            .map(|t| (t.name.as_str(), t.object.as_slice())),
    }
}
