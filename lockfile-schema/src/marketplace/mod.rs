//! Marketplaces: the `[[marketplace]]` declarations of `plugins.toml`, their locked form
//! in `plugins.lock`, and the catalog a marketplace publishes (`marketplace.json`, in
//! `catalog.rs`).
//!
//! A marketplace is a git repository or a local folder whose `.plugin/marketplace.json`
//! or `.claude-plugin/marketplace.json` lists plugins by name and says where each comes
//! from. A manifest asks for one with `source = "PLUGIN@MARKETPLACE"`; `lock` reads the
//! catalog at the marketplace's locked commit, turns the entry into a plain source
//! ([`CatalogEntry::request`]) and locks that like any other. The lock keeps both levels:
//! the marketplace's commit and the sha256 of its catalog, and each plugin's own pin.

mod catalog;
mod entry_source;

pub use crate::dependency::{DependencySpec, declared_in_manifest, parse_dependencies};
pub use crate::lock::{LockedMarketplace, LockedMarketplaceWire};
pub use crate::manifest::{CATALOG_PATHS, MarketplaceRequest};

pub use catalog::{
    Catalog, CatalogEntry, CatalogError, EntrySource, MAX_CATALOG_BYTES, parse_catalog,
};
