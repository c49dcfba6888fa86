//! berth's on-disk formats: the manifest `plugins.toml`, the lockfile `plugins.lock`, the
//! source strings they hold and the sha256 digests they record.
//!
//! This crate is pure data: it parses text into validated types and writes the canonical
//! lockfile text. It never touches the filesystem or the network, so every other crate can
//! depend on it, and it is the only crate that defines an on-disk format.

mod agent;
mod definition;
mod dependency;
mod diagnostic;
pub mod governance;
pub mod harness_keys;
mod hash;
mod lock;
mod manifest;
mod manifest_edit;
pub mod marketplace;
pub mod narinfo;
pub mod plugin_json;
pub mod plugin_manifest;
mod redact;
pub mod release_age;
pub mod runner;
mod source;
pub mod suggest;

pub use agent::{AGENT_ENTRY_POINT_GROUP, EntryPoint, WheelFile, normalize_package_name};
pub use definition::{COMPONENT_KEYS, EntryDefinition, canonical_json, plugin_path};
pub use diagnostic::{Diagnostic, line_column};
pub use hash::{CommitId, HashParseError, Sha256Hash, is_full_commit_id, nix32, parse_nix32};
pub use lock::{
    LOCK_HEADER, LOCK_VERSION, Lock, LockError, LockFileWire, LockedAgent, LockedAgentWire,
    LockedNpmPackage, LockedPayload, LockedPlugin, LockedPluginWire, LockedTools, LockedToolsWire,
    LockedWheel, LockedWheelWire, Staleness, TOOLS_ENTRY_NAME, ToolsTrust, parse_lock, toml_string,
};
pub use manifest::{
    AgentOrigin, AgentRequest, AutoLoad, Manifest, ParsedManifest, PluginRequest,
    is_valid_plugin_name, mixed_scripts, parse_manifest,
};
pub use manifest_edit::{
    EditError, MarketplaceRemoval, NewPlugin, Removal, add_marketplace, add_plugin,
    remove_marketplace, remove_plugin,
};
pub use redact::{Redacted, redact};
pub use source::{
    ArchiveFormat, ArchivePin, GitPin, LocalPin, Location, Pin, Source, SourceError, SourceKind,
    normalize_repo_path,
};

/// The JSON Schema of `plugins.lock`, generated from [`LockFileWire`].
pub fn lock_json_schema() -> String {
    let schema = schemars::schema_for!(LockFileWire);
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is always serialisable");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests;
