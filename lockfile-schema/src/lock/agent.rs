//! The lock's `[agent]` table with its `[[agent.wheel]]` closure, validated.

use super::{LockedPlugin, differ};
use crate::agent::{EntryPoint, WheelFile};
use crate::manifest::AgentRequest;

/// One wheel of the locked closure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedWheel {
    /// The distribution's name, normalised.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The wheel's file name.
    pub file: WheelFile,
    /// Where it is downloaded from, credentials removed; `None` for the wheel berth built
    /// from the agent's own git or archive source.
    pub url: Option<String>,
    /// sha256 of the file, lower-case hex (pip's `--hash=sha256:` form).
    pub sha256: String,
}

/// The lock's `[agent]` table, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedAgent {
    /// The requested source, credentials removed.
    pub source: String,
    /// The requested `ref`.
    pub git_ref: Option<String>,
    /// The requested `python` requirement.
    pub python: Option<String>,
    /// The package's name, normalised.
    pub package: String,
    /// The package's version.
    pub version: String,
    /// The chosen entry point of the `openhands.agents` group.
    pub entry_point: EntryPoint,
    /// The interpreter version the closure was resolved for (`3.11`).
    pub python_version: String,
    /// For git and archive sources: the source tree's pin, as a plugin entry named after
    /// the package (its store entry is what the wheel is built from).
    pub tree: Option<LockedPlugin>,
    /// Every wheel of the closure, sorted by name then file.
    pub wheels: Vec<LockedWheel>,
}

impl LockedAgent {
    /// Whether this lock entry is what `request` asks for: equal `source`, `ref` and
    /// `python`, and the requested entry-point name, if any, is the locked one.
    pub fn satisfies(&self, request: &AgentRequest) -> bool {
        self.differences(request).is_empty()
    }

    /// The ways this entry differs from `request`, for messages.
    pub fn differences(&self, r: &AgentRequest) -> Vec<String> {
        let mut what = Vec::new();
        let source = r.display_source();
        differ(&mut what, "source", Some(&self.source), Some(&source));
        differ(
            &mut what,
            "ref",
            self.git_ref.as_deref(),
            r.git_ref.as_deref(),
        );
        differ(
            &mut what,
            "python",
            self.python.as_deref(),
            r.python.as_deref(),
        );
        if let Some(name) = &r.entry_point
            && *name != self.entry_point.name
        {
            what.push(format!(
                "`entry_point` is `{name}` in the manifest but `{}` in the lock",
                self.entry_point.name
            ));
        }
        what
    }
}
