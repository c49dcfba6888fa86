//! What pinning a request gives: the locked entry, the files the runtime will skip and
//! what the plugin's manifest declares.

use berth_lockfile_schema::marketplace::{DependencySpec, declared_in_manifest};
use berth_lockfile_schema::{LockedPlugin, PluginRequest, Sha256Hash};

use crate::error::ResolveError;
use crate::skipped::Skipped;

/// A plugin `lock` resolved, and the files in it the runtime will skip.
pub(crate) struct Resolved {
    pub(crate) plugin: LockedPlugin,
    pub(crate) skipped: Vec<Skipped>,
    /// What the plugin's manifest declares: its version and its dependencies (read for
    /// plugins resolved now; a kept pin carries them in the lock).
    pub(crate) declared: Declared,
    /// The newest version the release-age cutoff passed over, if it passed over any.
    pub(crate) held_back: Option<HeldBack>,
}

/// What the release-age cutoff passed over: `v1.3.0 (tagged 2026-12-01)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeldBack {
    pub(crate) newer: String,
}

impl Resolved {
    /// A pin kept as it was: nothing read, nothing to warn about.
    pub(crate) fn kept(plugin: LockedPlugin) -> Self {
        Self {
            plugin,
            skipped: Vec::new(),
            declared: Declared::default(),
            held_back: None,
        }
    }
}

/// A plugin manifest's `version` and `dependencies`, and what in them could not be read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Declared {
    pub(crate) version: Option<String>,
    pub(crate) dependencies: Vec<DependencySpec>,
    pub(crate) problems: Vec<String>,
}

impl Declared {
    /// Reads them through `read` (a regular file's bytes, `None` when absent).
    pub(crate) fn read(read: impl Fn(&str) -> Option<Vec<u8>>) -> Self {
        let (version, dependencies, problems) = declared_in_manifest(read);
        Self {
            version,
            dependencies,
            problems,
        }
    }
}

/// Checks a resolved plugin against the `hash` and `name` its request pins.
pub(crate) fn check_pins(
    request: &PluginRequest,
    name: &str,
    hash: &Sha256Hash,
) -> Result<(), ResolveError> {
    if let Some(expected) = &request.hash
        && expected != hash
    {
        return Err(ResolveError::HashMismatch {
            name: name.to_owned(),
            expected: *expected,
            actual: *hash,
        });
    }
    if let Some(expected) = &request.name
        && expected != name
    {
        return Err(ResolveError::NameMismatch {
            expected: expected.clone(),
            actual: name.to_owned(),
        });
    }
    Ok(())
}
