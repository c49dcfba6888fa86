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
mod dependency;
mod entry_source;

pub use dependency::{DependencySpec, declared_in_manifest, parse_dependencies};

pub use catalog::{
    Catalog, CatalogEntry, CatalogError, EntrySource, MAX_CATALOG_BYTES, parse_catalog,
};

use serde::{Deserialize, Serialize};

use crate::hash::Sha256Hash;
use crate::lock::{CommitId, differ};
use crate::source::{Source, SourceKind, is_marketplace_name, normalize_repo_path, redact};

/// Where a marketplace keeps its catalog, relative to its folder, in the order they are
/// looked for (the OpenHands SDK's order).
pub const CATALOG_PATHS: [&str; 2] = [
    ".plugin/marketplace.json",
    ".claude-plugin/marketplace.json",
];

/// One `[[marketplace]]` of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketplaceRequest {
    /// The name plugins are asked for by (`PLUGIN@NAME`).
    pub name: String,
    /// `source` as written (may hold credentials: print [`MarketplaceRequest::display_source`]).
    pub source: String,
    /// `ref`: a branch, tag or full commit id.
    pub git_ref: Option<String>,
    /// `repo_path`: the marketplace's folder inside the repository.
    pub repo_path: Option<String>,
    /// The line of the entry's `name` key, for messages.
    pub line: usize,
    parsed: Source,
}

impl MarketplaceRequest {
    /// Builds and validates a declaration. On error, returns the field at fault and why.
    pub fn new(
        name: &str,
        source: &str,
        git_ref: Option<&str>,
        repo_path: Option<&str>,
    ) -> Result<Self, (&'static str, String)> {
        if !is_marketplace_name(name) {
            return Err((
                "name",
                format!(
                    "`name = \"{name}\"` is not a marketplace name: use letters, digits, `.`, `_` and `-` (plugins are asked for as `PLUGIN@{name}`)"
                ),
            ));
        }
        let parsed = Source::parse(source).map_err(|e| ("source", e.message))?;
        let shown = redact(source).text;
        match parsed.kind() {
            SourceKind::Git => {}
            SourceKind::Local => {
                if git_ref.is_some() || repo_path.is_some() {
                    return Err((
                        if git_ref.is_some() {
                            "ref"
                        } else {
                            "repo_path"
                        },
                        format!(
                            "marketplace `{name}`: `ref` and `repo_path` apply to git marketplaces, and `{shown}` is a local folder"
                        ),
                    ));
                }
            }
            kind => {
                return Err((
                    "source",
                    format!(
                        "marketplace `{name}`: `{shown}` is a {kind} source; a marketplace is a git repository (`github:OWNER/REPO`, a git URL) or a local folder"
                    ),
                ));
            }
        }
        if let Some(r) = git_ref
            && (r.is_empty() || r.trim() != r)
        {
            return Err((
                "ref",
                format!("`ref = \"{r}\"` is not a branch, tag or commit name"),
            ));
        }
        if let Some(path) = repo_path {
            normalize_repo_path(path)
                .map_err(|why| ("repo_path", format!("`repo_path = \"{path}\"` {why}")))?;
        }
        Ok(Self {
            name: name.to_owned(),
            source: source.to_owned(),
            git_ref: git_ref.map(str::to_owned),
            repo_path: repo_path.map(str::to_owned),
            line: 0,
            parsed,
        })
    }

    /// This declaration, at `line` of its manifest.
    #[must_use]
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = line;
        self
    }

    /// The parsed source: a git repository or a local folder.
    pub fn parsed_source(&self) -> &Source {
        &self.parsed
    }

    /// The source with credentials removed.
    pub fn display_source(&self) -> String {
        redact(&self.source).text
    }

    /// The marketplace's folder inside its repository, normalised (`None`: the root).
    pub fn subdir(&self) -> Option<String> {
        let from_source = match &self.parsed {
            Source::GitHub { subpath, .. } => subpath.clone(),
            _ => None,
        };
        self.repo_path
            .as_deref()
            .and_then(|p| normalize_repo_path(p).ok())
            .or(from_source)
            .filter(|p| !p.is_empty())
    }
}

/// A marketplace as the lock pins it: its declaration, the commit read (git) and the
/// sha256 of the catalog read there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedMarketplace {
    /// The declared name.
    pub name: String,
    /// The declared source, credentials removed.
    pub source: String,
    /// The declared `ref`.
    pub git_ref: Option<String>,
    /// The declared `repo_path`.
    pub repo_path: Option<String>,
    /// The git URL fetched, credentials removed, and the commit read; `None` for a local
    /// folder.
    pub git: Option<(String, CommitId)>,
    /// Which catalog was read, relative to the marketplace's folder (one of
    /// [`CATALOG_PATHS`]).
    pub catalog: String,
    /// sha256 of the catalog's bytes.
    pub catalog_hash: Sha256Hash,
}

impl LockedMarketplace {
    /// How this locked marketplace differs from its declaration (empty: it satisfies it).
    pub fn differences(&self, request: &MarketplaceRequest) -> Vec<String> {
        let mut what = Vec::new();
        differ(
            &mut what,
            "source",
            Some(&self.source),
            Some(&request.display_source()),
        );
        differ(
            &mut what,
            "ref",
            self.git_ref.as_deref(),
            request.git_ref.as_deref(),
        );
        differ(
            &mut what,
            "repo_path",
            self.repo_path.as_deref(),
            request.repo_path.as_deref(),
        );
        what
    }
}

/// One `[[marketplace]]` of the lockfile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockedMarketplaceWire {
    /// The name the manifest declares it under.
    pub name: String,
    /// The manifest's `source`, credentials removed.
    pub source: String,
    /// The manifest's `ref`, if it gave one.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub git_ref: Option<String>,
    /// The manifest's `repo_path`, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub repo_path: Option<String>,
    /// The git URL fetched, credentials removed (git marketplaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub url: Option<String>,
    /// The commit the catalog was read at (git marketplaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^[0-9a-f]{40}$"))]
    pub rev: Option<String>,
    /// The catalog read, relative to the marketplace's folder.
    pub catalog: String,
    /// sha256 of the catalog's bytes, SRI form.
    #[schemars(regex(pattern = r"^sha256-[A-Za-z0-9+/]{43}=$"))]
    pub catalog_hash: String,
}

impl From<&LockedMarketplace> for LockedMarketplaceWire {
    fn from(m: &LockedMarketplace) -> Self {
        Self {
            name: m.name.clone(),
            source: m.source.clone(),
            git_ref: m.git_ref.clone(),
            repo_path: m.repo_path.clone(),
            url: m.git.as_ref().map(|(url, _)| url.clone()),
            rev: m.git.as_ref().map(|(_, rev)| rev.to_string()),
            catalog: m.catalog.clone(),
            catalog_hash: m.catalog_hash.to_sri(),
        }
    }
}

impl TryFrom<LockedMarketplaceWire> for LockedMarketplace {
    type Error = String;

    fn try_from(w: LockedMarketplaceWire) -> Result<Self, String> {
        let request = MarketplaceRequest::new(
            &w.name,
            &w.source,
            w.git_ref.as_deref(),
            w.repo_path.as_deref(),
        )
        .map_err(|(_, why)| why)?;
        if !CATALOG_PATHS.contains(&w.catalog.as_str()) {
            return Err(format!(
                "`catalog = \"{}\"` is not one of {}",
                w.catalog,
                CATALOG_PATHS.join(", ")
            ));
        }
        let catalog_hash = Sha256Hash::from_sri(&w.catalog_hash).map_err(|e| e.to_string())?;
        let git = match (request.parsed_source().kind(), w.url, w.rev) {
            (SourceKind::Git, Some(url), Some(rev)) => Some((
                url,
                CommitId::parse(&rev)
                    .ok_or_else(|| format!("`rev = \"{rev}\"` is not a full commit id"))?,
            )),
            (SourceKind::Git, _, _) => {
                return Err("a git marketplace needs `url` and `rev`".into());
            }
            (_, None, None) => None,
            _ => return Err("`url` and `rev` belong to git marketplaces only".into()),
        };
        Ok(Self {
            name: w.name,
            source: w.source,
            git_ref: w.git_ref,
            repo_path: w.repo_path,
            git,
            catalog: w.catalog,
            catalog_hash,
        })
    }
}
