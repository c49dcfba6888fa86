//! Reviewing a plugin before it is trusted: its capability surface (what it can run and
//! what it tells the agent), the difference between two surfaces, and hidden Unicode in
//! its files. Reads a store entry only; never runs anything.
//!
//! `walk` lists and hashes an entry's files; `sources` finds the plugin files that
//! commands name; `shape` is what a surface holds and `surface` builds one from both, `diff`
//! compares surfaces; `chars` names the hidden characters, `literals` decodes the strings
//! of JSON, YAML and TOML, `hidden` scans files and names with both, and `display` escapes
//! what people are shown; `check` holds a lock's plugins against a policy and its
//! approvals, using `surface` and `hidden`, and `verdict` remembers which entries were
//! scanned clean. Dependencies point that way only.

mod chars;
mod check;
mod diff;
mod display;
#[cfg(test)]
mod fixture;
mod hidden;
mod literals;
mod shape;
mod sources;
mod surface;
mod verdict;
mod walk;

pub use chars::{Class, Hidden, Severity, classify};
pub use check::{Checked, UnderReview, Violation, check_plugins, finding_line};
pub use diff::{Change, HookDiff, MapDiff, NameDiff, SurfaceDiff, ToolsChange, diff};
pub use display::{escape_for_display, escape_json};
pub use hidden::{Finding, Place, SCANNER_VERSION, scan_file, scan_plugin, scan_text};
pub use surface::{
    Component, DATA_PLACEHOLDER, HookEntry, McpEntry, ROOT_PLACEHOLDER, Surface, surface_of,
};
pub use verdict::{remember_clean, scanned_clean};
