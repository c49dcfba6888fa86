//! A fault hook for tests: with `BERTH_FAULT_PAUSE=<step>` in its environment, a berth
//! process that reaches the named step prints [`MARKER`] and the step's name on a line of
//! its own to stderr and then blocks for good, holding whatever it holds. A test waits for
//! that line, kills the process and checks what it left behind, so every kill lands at a
//! known point instead of after a guessed sleep.
//!
//! Test-only: nothing sets the variable in normal use, and when it is unset the hook is
//! one cached environment lookup.

use std::sync::OnceLock;

/// The environment variable that names the step to pause at.
pub const ENV: &str = "BERTH_FAULT_PAUSE";

/// What starts the line printed on pausing; the step's name follows it.
pub const MARKER: &str = "berth: paused at fault step ";

/// Something staged that needs no hash check (a new git cache after its first fetch, a
/// wheel, an agent environment, a view) complete in `tmp/`, not yet renamed into place.
pub const PERSIST_BEFORE_RENAME: &str = "persist-before-rename";
/// A git tree half exported into a staging folder (its first file written).
pub const GIT_EXPORT_MID: &str = "git-export-mid";
/// A staging folder written, hashed and made read-only, not yet renamed into `store-v1/`.
pub const COMMIT_BEFORE_RENAME: &str = "commit-before-rename";
/// An entry renamed into `store-v1/`: its own folder not yet read-only, its staging lock
/// file not yet removed.
pub const COMMIT_AFTER_RENAME: &str = "commit-after-rename";
/// A gc victim renamed into `tmp/`, not yet deleted.
pub const GC_VICTIM_IN_TMP: &str = "gc-victim-in-tmp";
/// A file berth replaces whole (the lockfile, the manifest, a `run` plugin set) written
/// and synced beside the old one, not yet renamed over it.
pub const FILE_BEFORE_RENAME: &str = "file-before-rename";

/// A pushed entry's NAR uploaded to a binary cache, its narinfo not yet written.
pub const PUSH_BEFORE_NARINFO: &str = "push-before-narinfo";

/// A `berth serve` conversation on object storage: its lock written, its metadata not yet.
pub const CONVERSATION_BEFORE_META: &str = "conversation-before-meta";

/// Every step berth can pause at, so a test can check that it covers them all.
/// [`pause_at`] is only ever called with one of these.
pub const STEPS: &[&str] = &[
    PERSIST_BEFORE_RENAME,
    GIT_EXPORT_MID,
    COMMIT_BEFORE_RENAME,
    COMMIT_AFTER_RENAME,
    GC_VICTIM_IN_TMP,
    FILE_BEFORE_RENAME,
    PUSH_BEFORE_NARINFO,
    CONVERSATION_BEFORE_META,
];

/// Blocks this thread for good if `BERTH_FAULT_PAUSE` names `step`, after printing the
/// marker line; returns at once otherwise.
pub fn pause_at(step: &str) {
    static WANTED: OnceLock<Option<String>> = OnceLock::new();
    debug_assert!(STEPS.contains(&step), "`{step}` is not in fault::STEPS");
    let wanted = WANTED.get_or_init(|| std::env::var(ENV).ok().filter(|s| !s.is_empty()));
    if wanted.as_deref() != Some(step) {
        return;
    }
    // `eprintln!` holds stderr for the whole line, so threads pausing together do not
    // interleave their lines.
    eprintln!("{MARKER}{step}");
    loop {
        std::thread::park();
    }
}
