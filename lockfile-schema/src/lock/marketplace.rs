//! A marketplace as the lock pins it: its declaration, the commit read and the sha256 of
//! its catalog.

use serde::{Deserialize, Serialize};

use super::differ;
use crate::hash::CommitId;
use crate::hash::Sha256Hash;
use crate::manifest::{AutoLoad, CATALOG_PATHS, MarketplaceRequest};
use crate::source::SourceKind;

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
    /// The declared `auto_load`: the plugins and standalone skills it brings are locked as
    /// `[[plugin]]` entries marked `auto_load = NAME`, ahead of the manifest's own.
    pub auto_load: AutoLoad,
}

impl LockedMarketplace {
    /// How this locked marketplace differs from its declaration (empty: it satisfies it).
    pub fn differences(&self, request: &MarketplaceRequest) -> Vec<String> {
        let mut what = self.place_differences(request);
        if self.auto_load != request.auto_load {
            what.push(format!(
                "auto_load: `{}` locked, `{}` asked",
                self.auto_load.to_json(),
                request.auto_load.to_json()
            ));
        }
        what
    }

    /// How the place it was read from differs from the declaration's (`source`, `ref`,
    /// `repo_path`): empty when its pin still answers the declaration.
    pub fn place_differences(&self, request: &MarketplaceRequest) -> Vec<String> {
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
    /// The manifest's `auto_load`, when it loads anything: `true`, or the names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_load: Option<AutoLoadWire>,
}

/// `auto_load` as the lockfile writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum AutoLoadWire {
    /// `true` (or `false`, read as nothing).
    Flag(bool),
    /// The names of the plugins and standalone skills it loads.
    Names(Vec<String>),
}

impl From<&AutoLoad> for Option<AutoLoadWire> {
    fn from(auto_load: &AutoLoad) -> Self {
        match auto_load {
            AutoLoad::Nothing => None,
            AutoLoad::Everything => Some(AutoLoadWire::Flag(true)),
            AutoLoad::Only(names) => Some(AutoLoadWire::Names(names.clone())),
        }
    }
}

impl From<Option<AutoLoadWire>> for AutoLoad {
    fn from(wire: Option<AutoLoadWire>) -> Self {
        match wire {
            None | Some(AutoLoadWire::Flag(false)) => AutoLoad::Nothing,
            Some(AutoLoadWire::Flag(true)) => AutoLoad::Everything,
            Some(AutoLoadWire::Names(names)) => AutoLoad::only(names),
        }
    }
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
            auto_load: (&m.auto_load).into(),
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
            auto_load: w.auto_load.into(),
        })
    }
}
