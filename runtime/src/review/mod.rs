//! Reviewing a plugin before it is trusted: its capability surface (what it can run and
//! what it tells the agent), the difference between two surfaces, and hidden Unicode in
//! its files. Reads a store entry only; never runs anything.
//!
//! `walk` lists and hashes an entry's files; `sources` finds the plugin files that
//! commands name; `prose` says which files are prose and which parts of them run;
//! `shape` is what a surface holds (and the question each capability asks of it) and
//! `surface` builds one from those and from one reading of the plugin
//! ([`crate::model`]): [`crate::runs`] (what every harness would run) and the set's
//! loaders; `diff` compares surfaces and `beyond` finds what the OpenHands set leaves out,
//! from the model the set kept; `chars` names the hidden characters,
//! `literals` decodes the strings of JSON, YAML and TOML, `hidden` scans files and names
//! with both, and `display` escapes what people are shown; `check` holds a lock's plugins
//! against a policy and its approvals, using `surface`, `hidden` and `signed` (an
//! approval's SSH signature checked against the plugin and the allowed signers);
//! `signed_source` checks a locked git commit's (or its tag's) SSH signature as `git
//! verify-commit` does, with what `signed` reads of signatures and keys; `verdict`
//! remembers which entries were scanned clean. Dependencies point that way only.

mod beyond;
mod chars;
mod check;
mod diff;
mod display;
#[cfg(test)]
mod fixture;
mod hidden;
mod literals;
mod prose;
mod shape;
mod signed;
mod signed_source;
mod sources;
mod surface;
mod tools;
mod verdict;
mod walk;

pub use beyond::{Beyond, Reviewed, beyond_set, reviewed_set};
pub use chars::{Class, Hidden, Severity, classify};
pub use check::{Checked, UnderReview, Violation, check_plugins, finding_line, reviews_surfaces};
pub use diff::{
    Change, HookDiff, MapDiff, NameDiff, ShellChange, SurfaceDiff, ToolsChange, UnmodeledDiff, diff,
};
pub use display::{escape_for_display, escape_json};
pub use hidden::{Finding, Place, SCANNER_VERSION, scan_file, scan_plugin, scan_text};
pub use shape::{APPROVAL_DIGEST_VERSION, LspEntry, PackagePin, Unmodeled};
pub use signed::{
    ApprovalPayload, NotListed, SignatureRefused, SigningKey, approval_payload, check_signature,
    payload_signed_as, signer_for,
};
pub use signed_source::{SignedObjects, SourceRefused, check_signed_source, unsigned_source};
pub use surface::{
    Component, DATA_PLACEHOLDER, HookEntry, McpEntry, ROOT_PLACEHOLDER, Surface, surface_from,
    surface_of,
};
pub use tools::{MANIFEST_FILE, OffersChange, ToolsPin, load_manifests, read_manifest};
pub use verdict::{remember_clean, scanned_clean};
