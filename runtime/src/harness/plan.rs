//! What a target writes: a plan of paths under its folder, each a file, a link or a copy.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// One path of a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    /// A file with these bytes.
    File(Vec<u8>),
    /// A symbolic link to this (absolute) path: a verified, read-only store entry.
    Link(PathBuf),
    /// A read-only copy of this file of a verified store entry (for harnesses that do not
    /// follow links), executable when it is.
    Copy(PathBuf),
    /// A JSON file the user's own keys are merged into (`settings.json`): current when it
    /// holds this value however it is formatted, so the user's edits of their own keys
    /// are never drift and a file already holding it is left as the user wrote it.
    Json(serde_json::Value),
}

/// What a target writes under its folder.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Every path it writes, relative to the folder.
    pub files: BTreeMap<PathBuf, Planned>,
    /// Folders (relative) that berth owns whole: anything else in them is drift, and is
    /// removed when the plan is applied.
    pub owned: Vec<PathBuf>,
    /// The file that marks an owned folder as berth's, for targets whose folders are named
    /// as the plugins are (an existing owned folder without it is the user's, and is not
    /// touched); `None` where the owned folders carry berth's name.
    pub mark: Option<&'static str>,
    /// What of the set the harness cannot express, one line each.
    pub warnings: Vec<String>,
}
