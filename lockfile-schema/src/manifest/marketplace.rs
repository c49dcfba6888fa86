//! The manifest's `[[marketplace]]` declarations.

use crate::redact::redact;
use crate::source::{Source, SourceKind, is_marketplace_name, normalize_repo_path};

/// Where a marketplace keeps its catalog, relative to its folder, in the order they are
/// looked for (the OpenHands SDK's order).
pub const CATALOG_PATHS: [&str; 2] = [
    ".plugin/marketplace.json",
    ".claude-plugin/marketplace.json",
];

/// What a marketplace loads into every conversation by itself: the OpenHands SDK's
/// `MarketplaceRegistration.auto_load` (`true` for every plugin and standalone skill of its
/// catalog, a list for those names, `false` or `[]` for none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AutoLoad {
    /// Nothing (`false`, `[]`, or no `auto_load`).
    #[default]
    Nothing,
    /// Every plugin and standalone skill the catalog lists (`true`).
    Everything,
    /// The plugins and standalone skills of these names.
    Only(Vec<String>),
}

impl AutoLoad {
    /// From the SDK's `bool | list[str]`.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, String> {
        match value {
            serde_json::Value::Bool(true) => Ok(Self::Everything),
            serde_json::Value::Bool(false) => Ok(Self::Nothing),
            serde_json::Value::Array(items) => {
                let names = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("`auto_load` lists names, each a string")?;
                Ok(Self::only(names))
            }
            _ => Err("`auto_load` is `true`, `false` or a list of plugin and skill names".into()),
        }
    }

    /// The list form, `[]` being nothing.
    pub fn only(names: Vec<String>) -> Self {
        if names.is_empty() {
            Self::Nothing
        } else {
            Self::Only(names)
        }
    }

    /// As the SDK writes it.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Nothing => serde_json::Value::Bool(false),
            Self::Everything => serde_json::Value::Bool(true),
            Self::Only(names) => serde_json::json!(names),
        }
    }

    /// Whether it loads the plugin or standalone skill `name` (the SDK's
    /// `auto_loads_plugin` and `auto_loads_skill`, which answer alike).
    pub fn loads(&self, name: &str) -> bool {
        match self {
            Self::Nothing => false,
            Self::Everything => true,
            Self::Only(names) => names.iter().any(|n| n == name),
        }
    }

    /// Whether it loads anything.
    pub fn is_on(&self) -> bool {
        !matches!(self, Self::Nothing)
    }
}

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
    /// `auto_load`: what it loads into every conversation by itself.
    pub auto_load: AutoLoad,
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
            auto_load: AutoLoad::Nothing,
            line: 0,
            parsed,
        })
    }

    /// This declaration, loading `auto_load` into every conversation.
    #[must_use]
    pub fn auto_loading(mut self, auto_load: AutoLoad) -> Self {
        self.auto_load = auto_load;
        self
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
