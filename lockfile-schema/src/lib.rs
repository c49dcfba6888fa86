//! berth's on-disk formats: the manifest `plugins.toml`, the lockfile `plugins.lock`, the
//! source strings they hold and the sha256 digests they record.
//!
//! This crate is pure data: it parses text into validated types and writes the canonical
//! lockfile text. It never touches the filesystem or the network, so every other crate can
//! depend on it, and it is the only crate that defines an on-disk format.
//!
//! # Where things are
//!
//! Every on-disk format: `plugins.toml` (`manifest/`: the plugin requests, the `[agent]`
//! table, the `[[marketplace]]` declarations, the reader in `parse.rs`, plugin names in
//! `names.rs`), `plugins.lock` (`lock/`: the entries, the agent table and its wheels,
//! locked marketplaces, the wire types, the canonical writer, staleness), dependency specs
//! (`dependency.rs`), what a marketplace entry defines of its plugin (`definition.rs`:
//! `strict` and component fields, pinned in the lock), catalogs (`marketplace/`:
//! `marketplace.json` read leniently and each entry turned into a plain request, refusing
//! what a catalog may not name), each source kind as the formats hold it (`source.rs`: the
//! `Source` a manifest writes, the typed `Pin` a lock records, `Pin::Git(GitPin)`,
//! `Pin::Archive(ArchivePin)`, `Pin::Local(LocalPin)`, and the lock fields each is read
//! from and written as), redaction of credentials (`redact.rs`), the release-age cutoff
//! (`release_age.rs`: `exclude-newer` read as an instant or a span, the earliest ask
//! settled against a lock's recorded cutoff; the clock is the caller's), `Sha256Hash` (SRI,
//! nix32) and `CommitId` (`hash.rs`), narinfo, the plugin format's own files
//! (`plugin_manifest.rs`, `plugin_json.rs`), the table of the keys harnesses read at each
//! place of a plugin, modelled or inert, with the clients it was read from
//! (`harness_keys.rs` over the data file `harness_keys.toml`: any other key counts as every
//! capability), editing the manifest in place (`manifest_edit/`: plugin entries in
//! `mod.rs`, `[[marketplace]]` declarations in `marketplace.rs`), the agent's shared
//! vocabulary (`agent/`: entry points, wheel file names), what may run (`governance/`: one
//! `berth-policy.toml` in `file.rs`, the tighten-only chain and its checks in `chain.rs`,
//! sources, patterns and remote hosts in the one form they are matched in `canon.rs`,
//! `plugins.approvals.toml` and the payload a signed approval signs in `approvals.rs`,
//! OpenSSH allowed-signers files in `signers.rs`), package runners' command lines
//! (`runner.rs`), the lock's pinned payloads (`lock/payload.rs`) and what observed MCP
//! servers offered (`lock/tools.rs`).
//!
//! It uses nothing of berth; it must not touch the filesystem or the network.

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
    LockedWheel, LockedWheelWire, NpmProvenance, NpmSignature, NpmSource, RegistryKey,
    SignatureKind, SignedObject, SourceSignature, Staleness, TOOLS_ENTRY_NAME, ToolsTrust,
    parse_lock, sorted_keys, toml_string,
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
