//! berth's review, observation and sandbox. Reviewing a plugin before it is trusted: its capability surface (what it can run and
//! what it tells the agent), the difference between two surfaces, and hidden Unicode in
//! its files. Reads a store entry only; never runs anything.
//!
//! `walk` lists and hashes an entry's files; `sources` finds the plugin files that
//! commands name; `prose` says which files are prose and which parts of them run;
//! `shape` is what a surface holds (and the question each capability asks of it) and
//! `surface` builds one from those and from one reading of the plugin
//! ([`berth_plugin::model`]): [`berth_plugin::runs`] (what every harness would run) and the set's
//! loaders; `diff` compares surfaces and `beyond` finds what the OpenHands set leaves out,
//! from the model the set kept; `chars` names the hidden characters,
//! `literals` decodes the strings of JSON, YAML and TOML, `hidden` scans files and names
//! with both, and `display` escapes what people are shown; `check` holds a lock's plugins
//! against a policy and its approvals, using `surface`, `hidden` and `signed` (an
//! approval's SSH signature checked against the plugin and the allowed signers);
//! `signed_source` checks a locked git commit's (or its tag's) SSH signature as `git
//! verify-commit` does, with what `signed` reads of signatures and keys; `verdict`
//! remembers which entries were scanned clean. Dependencies point that way only.
//!
//! # Where things are
//!
//! What a capability surface holds, its approval digest and each capability's question
//! (`Surface::has`, `Surface::describe`) in `shape.rs`, built from the reader's `runs`, the
//! set's loaders (skills, commands, agents) over the same model and every file that is not
//! prose (`prose.rs` says which are; every prose file too in a plugin that runs code) in
//! `surface/` (links covered as the files they name in `links.rs`); two surfaces compared
//! in `diff/`; hidden characters named in `chars.rs`, found in files, escapes
//! (`literals.rs`) and names in `hidden/`, escaped for people in `display.rs`; a lock's
//! plugins against a policy and its approvals in `check.rs`, looping over
//! `Capability::ALL`; an approval's SSH signature checked against the plugin and the
//! allowed signers in `signed/` (natively, with `ssh-key`); a locked git commit's or
//! annotated tag's SSH signature checked against `[sources] require_signed` as `git
//! verify-commit`/`verify-tag` check it in `signed_source.rs`; entries scanned clean
//! remembered in `verdict.rs`; what observed MCP servers offer as part of a surface and its
//! diff in `tools.rs`.
//!
//! `observe/`: asking a pinned stdio MCP server what it offers (which servers of a set can
//! be observed and how in `mod.rs`: scratch folder, placeholder environment, the sandboxing
//! asked for, the canonical manifest, bounded; the JSON-RPC conversation, its lists
//! paginated, its output bounded, in `session.rs`). `sandbox/`: the sandbox every plugin
//! program berth starts itself runs in, through the one function that starts one (`spawn`
//! and the `Backend` found once in `mod.rs`, what a program sees of the host in `view.rs`,
//! bubblewrap's command line and probe in `bwrap.rs`, berth's own step inside
//! (`__sandbox-exec`: limits, `no_new_privs`, then exec) in `inside.rs`, Landlock in
//! `landlock.rs`).
//!
//! It uses the schema, the store, the plugin reader and the runtime's set; it must not link
//! a network crate, fetch, or start a plugin's program but through `sandbox::spawn`.

mod beyond;
mod chars;
mod check;
mod diff;
mod display;
#[cfg(test)]
mod fixture;
mod hidden;
mod literals;
pub mod observe;
mod prose;
pub mod sandbox;
mod shape;
mod signed;
mod signed_source;
mod signer_change;
mod source_signer;
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
pub use signer_change::{SignerChanged, describe_signer, signer_changes, signer_violations};
pub use source_signer::{read_source_signature, source_signature};
pub use surface::{
    Component, DATA_PLACEHOLDER, HookEntry, McpEntry, ROOT_PLACEHOLDER, Surface, surface_from,
    surface_of,
};
pub use tools::{MANIFEST_FILE, OffersChange, ToolsPin, load_manifests, read_manifest};
pub use verdict::{remember_clean, scanned_clean};
