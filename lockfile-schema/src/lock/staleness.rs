//! Whether a lock is up to date with a manifest, and how it differs.

use super::{Lock, LockedPlugin};
use crate::manifest::{Manifest, PluginRequest};
use crate::redact::redact;
use crate::release_age::{Ask, Cutoff};
use crate::source::Pin;
use crate::source::SourceKind;

impl Lock {
    /// How this lock differs from what `manifest` asks for. Empty means up to date.
    pub fn staleness(&self, manifest: &Manifest) -> Vec<Staleness> {
        let mut out = Vec::new();
        // Entries a plugin's dependencies pulled in answer to no manifest entry: whether
        // they are current is settled when the plugins needing them are locked.
        let requested: Vec<&LockedPlugin> =
            self.plugins.iter().filter(|p| p.is_requested()).collect();
        for (i, request) in manifest.plugins.iter().enumerate() {
            match requested.get(i).copied() {
                Some(locked) if locked.satisfies(request) => {}
                Some(locked) => out.push(Staleness::Changed {
                    index: i + 1,
                    name: locked.name.clone(),
                    what: locked.differences(request),
                }),
                None => out.push(Staleness::Added {
                    index: i + 1,
                    source: request.display_source(),
                }),
            }
        }
        for (i, locked) in requested.iter().enumerate().skip(manifest.plugins.len()) {
            out.push(Staleness::Removed {
                index: i + 1,
                name: locked.name.clone(),
            });
        }
        for request in &manifest.marketplaces {
            match self.marketplaces.iter().find(|m| m.name == request.name) {
                None => out.push(Staleness::MarketplaceAdded {
                    name: request.name.clone(),
                }),
                Some(locked) => {
                    let what = locked.differences(request);
                    if !what.is_empty() {
                        out.push(Staleness::MarketplaceChanged {
                            name: request.name.clone(),
                            what,
                        });
                    }
                }
            }
        }
        for locked in &self.marketplaces {
            if !manifest.marketplaces.iter().any(|m| m.name == locked.name) {
                out.push(Staleness::MarketplaceRemoved {
                    name: locked.name.clone(),
                });
            }
        }
        match (&manifest.agent, &self.agent) {
            (None, None) => {}
            (Some(request), None) => out.push(Staleness::AgentAdded {
                source: request.display_source(),
            }),
            (None, Some(locked)) => out.push(Staleness::AgentRemoved {
                package: locked.package.clone(),
            }),
            (Some(request), Some(locked)) => {
                let what = locked.differences(request);
                if !what.is_empty() {
                    out.push(Staleness::AgentChanged {
                        package: locked.package.clone(),
                        what,
                    });
                }
            }
        }
        out
    }
}

impl Lock {
    /// How this lock's release-age cutoff differs from `wanted`: the cutoff the manifest
    /// and the policy ask for now, settled against this lock's record
    /// ([`crate::release_age::settle`]), with the ask that set it. `None`: the same.
    pub fn cutoff_staleness(&self, wanted: Option<(&Cutoff, &Ask)>) -> Option<Staleness> {
        if self.exclude_newer.as_ref() == wanted.map(|(c, _)| c) {
            return None;
        }
        Some(Staleness::Cutoff {
            locked: self.exclude_newer.as_ref().map(Cutoff::shown),
            wanted: wanted.map(|(cutoff, ask)| {
                format!(
                    "{} (`exclude-newer = \"{}\"` in `{}`)",
                    cutoff.shown(),
                    ask.value,
                    ask.from
                )
            }),
        })
    }
}

/// One way a lock is out of date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Staleness {
    /// A manifest entry has no lock entry.
    Added {
        /// 1-based manifest entry.
        index: usize,
        /// Its source, credentials removed.
        source: String,
    },
    /// A lock entry no longer matches its manifest entry.
    Changed {
        /// 1-based entry.
        index: usize,
        /// The locked plugin's name.
        name: String,
        /// The fields that differ.
        what: Vec<String>,
    },
    /// A lock entry has no manifest entry.
    Removed {
        /// 1-based lock entry.
        index: usize,
        /// The locked plugin's name.
        name: String,
    },
    /// The manifest has an `[agent]` the lock lacks.
    AgentAdded {
        /// Its source, credentials removed.
        source: String,
    },
    /// The locked agent no longer matches the manifest's `[agent]`.
    AgentChanged {
        /// The locked package.
        package: String,
        /// The fields that differ.
        what: Vec<String>,
    },
    /// The lock has an agent the manifest no longer asks for.
    AgentRemoved {
        /// The locked package.
        package: String,
    },
    /// A `[[marketplace]]` the lock has not read.
    MarketplaceAdded {
        /// Its name.
        name: String,
    },
    /// A `[[marketplace]]` declared differently from when it was read.
    MarketplaceChanged {
        /// Its name.
        name: String,
        /// The fields that differ.
        what: Vec<String>,
    },
    /// The lock has a marketplace the manifest no longer declares.
    MarketplaceRemoved {
        /// Its name.
        name: String,
    },
    /// The release-age cutoff asked for is not the one the lock was made with.
    Cutoff {
        /// The lock's, as shown.
        locked: Option<String>,
        /// What is asked now, and where.
        wanted: Option<String>,
    },
}

impl std::fmt::Display for Staleness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Staleness::Added { index, source } => {
                write!(f, "entry {index} (`{source}`) is not in the lock")
            }
            Staleness::Changed { index, name, what } => {
                write!(f, "entry {index} (`{name}`): {}", what.join(", "))
            }
            Staleness::Removed { index, name } => {
                write!(
                    f,
                    "entry {index} (`{name}`) is locked but no longer in the manifest"
                )
            }
            Staleness::AgentAdded { source } => {
                write!(f, "`[agent]` (`{source}`) is not in the lock")
            }
            Staleness::AgentChanged { package, what } => {
                write!(f, "`[agent]` (`{package}`): {}", what.join(", "))
            }
            Staleness::MarketplaceAdded { name } => {
                write!(f, "marketplace `{name}` is not in the lock")
            }
            Staleness::MarketplaceChanged { name, what } => {
                write!(f, "marketplace `{name}`: {}", what.join(", "))
            }
            Staleness::MarketplaceRemoved { name } => {
                write!(
                    f,
                    "marketplace `{name}` is locked but the manifest no longer declares it"
                )
            }
            Staleness::Cutoff { locked, wanted } => match (locked, wanted) {
                (Some(locked), Some(wanted)) => write!(
                    f,
                    "the cutoff is {wanted}, but the lock was made with {locked}"
                ),
                (None, Some(wanted)) => write!(
                    f,
                    "the cutoff is {wanted}, but the lock was made without one"
                ),
                (Some(locked), None) => write!(
                    f,
                    "the lock was made with the cutoff {locked}, but nothing asks for one now"
                ),
                (None, None) => f.write_str("the cutoff changed"),
            },
            Staleness::AgentRemoved { package } => {
                write!(
                    f,
                    "agent `{package}` is locked but the manifest has no `[agent]`"
                )
            }
        }
    }
}

impl LockedPlugin {
    /// Whether this entry is what `request` asks for: equal request fields, and the
    /// manifest's `hash` and `name`, where given, equal to the locked ones.
    pub fn satisfies(&self, request: &PluginRequest) -> bool {
        self.differences(request).is_empty()
    }

    fn differences(&self, r: &PluginRequest) -> Vec<String> {
        let mut what = Vec::new();
        let source = redact(&r.source).text;
        if r.parsed_source().kind() == SourceKind::Marketplace {
            // Where the plugin comes from is the marketplace's to say; the request is
            // `PLUGIN@MARKETPLACE` alone (whether the marketplace changed is its own check).
            differ(
                &mut what,
                "source",
                self.requested.as_deref(),
                Some(&source),
            );
            self.pinned_differences(r, &mut what);
            return what;
        }
        differ(
            &mut what,
            "source",
            Some(self.requested.as_deref().unwrap_or(&self.source)),
            Some(&source),
        );
        differ(
            &mut what,
            "ref",
            self.git_ref.as_deref(),
            r.git_ref.as_deref(),
        );
        differ(
            &mut what,
            "version",
            self.version.as_deref(),
            r.version.as_deref(),
        );
        differ(
            &mut what,
            "repo_path",
            self.repo_path.as_deref(),
            r.repo_path.as_deref(),
        );
        self.pinned_differences(r, &mut what);
        what
    }

    /// The manifest's `hash`, `archive_hash` and `name`, where given, against the lock.
    fn pinned_differences(&self, r: &PluginRequest, what: &mut Vec<String>) {
        if let Some(hash) = &r.hash
            && *hash != self.hash
        {
            what.push(format!(
                "`hash` is `{hash}` in the manifest but `{}` in the lock",
                self.hash
            ));
        }
        if let Some(pinned) = &r.archive_hash {
            let locked = match &self.pin {
                Pin::Archive(pin) => Some(&pin.archive_hash),
                _ => None,
            };
            if locked != Some(pinned) {
                what.push(format!(
                    "`archive_hash` is `{pinned}` in the manifest but {} in the lock",
                    locked.map_or_else(|| "absent".to_owned(), |h| format!("`{h}`"))
                ));
            }
        }
        if let Some(name) = &r.name
            && *name != self.name
        {
            what.push(format!(
                "`name` is `{name}` in the manifest but `{}` in the lock",
                self.name
            ));
        }
    }
}

fn show(value: Option<&str>) -> String {
    value.map_or_else(|| "absent".to_owned(), |v| format!("`{v}`"))
}

/// Records that the request field `name` differs between manifest and lock.
pub(crate) fn differ(
    what: &mut Vec<String>,
    name: &str,
    locked: Option<&str>,
    wanted: Option<&str>,
) {
    if locked != wanted {
        what.push(format!(
            "`{name}` is {} in the manifest but {} in the lock",
            show(wanted),
            show(locked)
        ));
    }
}
