//! The manifest's `[[marketplace]]` declarations.

use crate::redact::redact;
use crate::source::{Source, SourceKind, is_marketplace_name, normalize_repo_path};

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
