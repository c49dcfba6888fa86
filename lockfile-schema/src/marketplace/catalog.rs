//! A marketplace's catalog, `marketplace.json` (Claude Code's format, which the OpenHands
//! SDK reads too): the plugins it lists and where each comes from.
//!
//! The catalog is read leniently, as its readers do: unknown fields are ignored, and an
//! entry that cannot be used (an unknown source kind, a path leaving the repository, a
//! name listed twice) is an error only when that entry is asked for, naming the
//! marketplace and the entry; the rest of the catalog stays usable.
//!
//! A catalog is untrusted input: whoever controls a marketplace's repository writes it.
//! So it is bounded ([`MAX_CATALOG_BYTES`]), it never reads the environment (`${VAR}` is
//! the user's own `plugins.toml`'s feature: an entry holding `${` is refused), and it
//! names no path on this machine: a string source is a folder inside the marketplace or
//! a remote URL, never `/…`, `~…`, `file://…` or a path leaving the marketplace. A
//! marketplace that is itself a local folder may name folders inside it only (the
//! resolver checks where its symlinks lead).

use crate::hash::Sha256Hash;
use crate::manifest::PluginRequest;
use crate::source::{is_marketplace_name, normalize_repo_path};

use super::MarketplaceRequest;

/// The largest catalog berth reads, in bytes (8 MiB; the largest real catalogs are
/// a few hundred KiB). A bigger one is refused before it is parsed.
pub const MAX_CATALOG_BYTES: u64 = 8 << 20;

/// A catalog that is not JSON, or not a catalog at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{path}` of marketplace `{marketplace}` {problem}")]
pub struct CatalogError {
    /// The marketplace's declared name.
    pub marketplace: String,
    /// The catalog's path in the marketplace.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

/// The plugins a marketplace lists, in catalog order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    /// The catalog's own `name` (may differ from the name the manifest declares).
    pub name: Option<String>,
    /// Every entry, in order.
    pub plugins: Vec<CatalogEntry>,
}

/// One plugin of a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    /// Its name: `PLUGIN` in `PLUGIN@MARKETPLACE`.
    pub name: String,
    /// Where it comes from, or why that cannot be used.
    pub source: Result<EntrySource, String>,
    /// `version`, as listed.
    pub version: Option<String>,
    /// `description`, as listed.
    pub description: Option<String>,
    /// `strict` (default true): false means the catalog entry defines the plugin's
    /// components itself.
    pub strict: bool,
    /// `dependencies` the entry declares (besides the plugin's own manifest's).
    pub dependencies: Vec<super::DependencySpec>,
    /// The component keys (`skills`, `commands`, `agents`, `hooks`, `mcpServers`,
    /// `lspServers`, `outputStyles`) the entry defines inline. The OpenHands SDK loads the
    /// plugin's folder and does not apply them (its `MarketplacePluginEntry` keeps them
    /// for later), and neither does berth: `lock` names them in a warning.
    pub inline_components: Vec<String>,
}

/// Component keys a catalog entry may define itself (Claude Code's `strict: false`).
const INLINE_COMPONENTS: [&str; 7] = [
    "skills",
    "commands",
    "agents",
    "hooks",
    "mcpServers",
    "lspServers",
    "outputStyles",
];

/// Where a catalog entry's plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntrySource {
    /// A folder of the marketplace itself (`"./plugins/x"`), `metadata.pluginRoot`
    /// already prepended, normalised; `None` for the marketplace's own folder.
    Relative(Option<String>),
    /// A source string berth reads as it is (an absolute path or a URL).
    Plain(String),
    /// `{"source": "github", "repo", "ref", "sha", "path"}`.
    GitHub {
        /// `OWNER/REPO`.
        repo: String,
        /// `sha` if given, else `ref`.
        git_ref: Option<String>,
        /// The plugin's folder in the repository.
        path: Option<String>,
    },
    /// `{"source": "url", "url", "ref", "sha"}` and `{"source": "git-subdir", "url",
    /// "path", "ref", "sha"}`: a git URL.
    Git {
        /// The repository's URL.
        url: String,
        /// `sha` if given, else `ref`.
        git_ref: Option<String>,
        /// The plugin's folder in the repository (`git-subdir`).
        path: Option<String>,
    },
    /// `{"source": "archive", "url", "sha256"}`.
    Archive {
        /// The archive's URL.
        url: String,
        /// The sha256 it must have, when given.
        sha256: Option<Sha256Hash>,
    },
    /// `{"source": "npm", "package", "version", "registry"}`.
    Npm {
        /// The package name (`name` or `@scope/name`).
        package: String,
        /// An exact version, a dist-tag or a semver range (`None`: the `latest` tag).
        version: Option<String>,
        /// The registry's base URL (`None`: `https://registry.npmjs.org`).
        registry: Option<String>,
    },
}

/// Parses a catalog's bytes. `marketplace` and `path` name it in errors.
pub fn parse_catalog(marketplace: &str, path: &str, bytes: &[u8]) -> Result<Catalog, CatalogError> {
    let fail = |problem: String| CatalogError {
        marketplace: marketplace.to_owned(),
        path: path.to_owned(),
        problem,
    };
    if bytes.len() as u64 > MAX_CATALOG_BYTES {
        return Err(fail(format!(
            "is {} bytes, over berth's limit of {MAX_CATALOG_BYTES} bytes for a catalog",
            bytes.len()
        )));
    }
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| fail(format!("is not valid JSON: {e}")))?;
    let Some(object) = value.as_object() else {
        return Err(fail("is not a JSON object with a `plugins` list".into()));
    };
    let plugin_root = object
        .get("metadata")
        .and_then(|m| m.get("pluginRoot"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let entries = match object.get("plugins") {
        None => Vec::new(),
        Some(serde_json::Value::Array(entries)) => entries.clone(),
        Some(other) => {
            return Err(fail(format!(
                "has `plugins` as {}, not a list",
                json_type(other)
            )));
        }
    };
    let mut plugins = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let Some(name) = entry.get("name").and_then(serde_json::Value::as_str) else {
            return Err(fail(format!(
                "has a plugin entry (number {}) without a `name`",
                i + 1
            )));
        };
        let text = |key: &str| {
            entry
                .get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        plugins.push(CatalogEntry {
            name: name.to_owned(),
            source: entry_source(entry.get("source"), plugin_root),
            version: text("version"),
            description: text("description"),
            strict: entry
                .get("strict")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(true),
            dependencies: super::parse_dependencies(entry.get("dependencies")).0,
            inline_components: INLINE_COMPONENTS
                .iter()
                .filter(|k| entry.get(**k).is_some_and(|v| !v.is_null()))
                .map(|k| (*k).to_owned())
                .collect(),
        });
    }
    Ok(Catalog {
        name: object
            .get("name")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        plugins,
    })
}

fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// An entry's `source`, read with Claude Code's semantics.
fn entry_source(
    source: Option<&serde_json::Value>,
    plugin_root: &str,
) -> Result<EntrySource, String> {
    match source {
        None => Err("has no `source`".into()),
        Some(serde_json::Value::String(text)) => {
            no_variables("source", text)?;
            no_variables("metadata.pluginRoot", plugin_root)?;
            if text.contains("://") {
                remote_location("source", text)?;
                return Ok(EntrySource::Plain(text.clone()));
            }
            if text.starts_with('/') || text.starts_with('~') || text.starts_with('\\') {
                return Err(format!(
                    "has `source = \"{text}\"`, a path on this machine; a catalog may name only folders inside its marketplace"
                ));
            }
            let joined = match plugin_root.trim_end_matches('/') {
                "" => text.clone(),
                root => format!("{root}/{text}"),
            };
            if joined.split('/').all(|part| part.is_empty() || part == ".") {
                return Ok(EntrySource::Relative(None));
            }
            normalize_repo_path(&joined)
                .map(|path| EntrySource::Relative(Some(path)))
                .map_err(|why| format!("has `source = \"{text}\"`, which {why}"))
        }
        Some(serde_json::Value::Object(object)) => {
            for (key, value) in object {
                if let serde_json::Value::String(text) = value {
                    no_variables(key, text)?;
                }
            }
            let field = |key: &str| {
                object
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
            };
            let required = |key: &str, kind: &str| {
                field(key).ok_or_else(|| format!("has a `{kind}` source without `{key}`"))
            };
            // `sha` pins the commit; it wins over `ref`.
            let git_ref = field("sha").or_else(|| field("ref"));
            let path = |kind: &str| -> Result<Option<String>, String> {
                match field("path") {
                    None => Ok(None),
                    Some(p) => normalize_repo_path(&p)
                        .map(Some)
                        .map_err(|why| format!("has a `{kind}` source whose `path` {why}")),
                }
            };
            match object.get("source").and_then(serde_json::Value::as_str) {
                Some("github") => Ok(EntrySource::GitHub {
                    repo: required("repo", "github")?,
                    git_ref,
                    path: path("github")?,
                }),
                Some("url") => Ok(EntrySource::Git {
                    url: remote_location("url", &required("url", "url")?)?,
                    git_ref,
                    path: path("url")?,
                }),
                Some("git-subdir") => {
                    required("path", "git-subdir")?;
                    Ok(EntrySource::Git {
                        url: remote_location("url", &required("url", "git-subdir")?)?,
                        git_ref,
                        path: path("git-subdir")?,
                    })
                }
                Some("archive") => Ok(EntrySource::Archive {
                    url: remote_location("url", &required("url", "archive")?)?,
                    sha256: match field("sha256") {
                        None => None,
                        Some(hex) => Some(sha256_of(&hex).ok_or_else(|| {
                            format!("has an `archive` source whose `sha256` `{hex}` is not 64 hex digits")
                        })?),
                    },
                }),
                Some("npm") => {
                    let package = required("package", "npm")?;
                    if !is_npm_package_name(&package) {
                        return Err(format!(
                            "has an `npm` source whose `package` `{package}` is not an npm package name"
                        ));
                    }
                    let registry = field("registry");
                    if let Some(registry) = &registry {
                        let lower = registry.to_ascii_lowercase();
                        if !lower.starts_with("https://") && !lower.starts_with("http://") {
                            return Err(format!(
                                "has an `npm` source whose `registry` `{registry}` is not an http(s) URL"
                            ));
                        }
                    }
                    Ok(EntrySource::Npm {
                        package,
                        version: field("version"),
                        registry,
                    })
                }
                Some(other) => Err(format!(
                    "has a source of unknown kind `{other}` (berth reads `github`, `url`, `git-subdir`, `archive`, `npm` and relative paths)"
                )),
                None => Err("has a `source` object without a `source` kind".into()),
            }
        }
        Some(other) => Err(format!("has `source` as {}", json_type(other))),
    }
}

/// Refuses a catalog value holding `${`: only the user's own manifest may name
/// environment variables, or a catalog could send `${AWS_SECRET_ACCESS_KEY}` to its host.
fn no_variables(key: &str, text: &str) -> Result<(), String> {
    if text.contains("${") {
        return Err(format!(
            "has `{key}` holding `${{`: a catalog cannot read environment variables (only your own plugins.toml can); credentials for a catalog's hosts come from ~/.netrc or git credential helpers"
        ));
    }
    Ok(())
}

/// A URL a catalog names: anything but a path or `file:` URL on this machine.
fn remote_location(key: &str, text: &str) -> Result<String, String> {
    let lower = text.trim_start().to_ascii_lowercase();
    if lower.starts_with("file:") || lower.starts_with("git+file:") {
        return Err(format!(
            "has `{key}` `{text}`, a `file://` URL on this machine; a catalog may name only folders inside its marketplace or remote URLs"
        ));
    }
    if lower.starts_with('/')
        || lower.starts_with('~')
        || lower.starts_with('.')
        || lower.starts_with('\\')
    {
        return Err(format!(
            "has `{key}` `{text}`, a path on this machine; a catalog may name only folders inside its marketplace or remote URLs"
        ));
    }
    Ok(text.to_owned())
}

/// An npm package name: `name` or `@scope/name`, lower-case URL-safe characters.
fn is_npm_package_name(name: &str) -> bool {
    let plain = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._~".contains(c))
    };
    match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, rest)| plain(scope) && plain(rest)),
        None => name.len() <= 214 && plain(name),
    }
}

/// A sha256 written as 64 hex digits (or already in SRI form).
fn sha256_of(text: &str) -> Option<Sha256Hash> {
    if let Ok(hash) = Sha256Hash::from_sri(text) {
        return Some(hash);
    }
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let hex = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(hex, 16).ok()?;
    }
    Some(Sha256Hash::from_bytes(out))
}

impl Catalog {
    /// The entry named `plugin`, or why it cannot be used: absent (listing what the
    /// catalog has), listed twice, or with a source berth cannot read.
    pub fn entry(&self, marketplace: &str, plugin: &str) -> Result<&CatalogEntry, String> {
        let mut found = self.plugins.iter().filter(|e| e.name == plugin);
        let Some(entry) = found.next() else {
            let names: Vec<&str> = self.plugins.iter().map(|e| e.name.as_str()).collect();
            return Err(format!(
                "marketplace `{marketplace}` lists no plugin `{plugin}`; it lists {}",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
        };
        if found.next().is_some() {
            return Err(format!(
                "marketplace `{marketplace}` lists plugin `{plugin}` more than once; its catalog must name each plugin once"
            ));
        }
        if let Err(why) = &entry.source {
            return Err(format!(
                "marketplace `{marketplace}`, plugin `{plugin}`: its entry {why}"
            ));
        }
        if !is_marketplace_name(plugin) {
            return Err(format!(
                "marketplace `{marketplace}`: `{plugin}` is not a name berth can ask for"
            ));
        }
        Ok(entry)
    }
}

impl CatalogEntry {
    /// The plain request this entry stands for, in `marketplace` read at `rev` (git) or
    /// from its folder (local): what `lock` locks for `PLUGIN@MARKETPLACE`.
    pub fn request(
        &self,
        marketplace: &MarketplaceRequest,
        rev: Option<&str>,
    ) -> Result<PluginRequest, String> {
        let named = |why: String| {
            format!(
                "marketplace `{}`, plugin `{}`: {why}",
                marketplace.name, self.name
            )
        };
        let source = self
            .source
            .as_ref()
            .map_err(|why| named(format!("its entry {why}")))?;
        let (text, git_ref, repo_path, archive_hash) = match source {
            EntrySource::Relative(path) => match (marketplace.parsed_source().kind(), rev) {
                (crate::SourceKind::Local, _) => {
                    let base = marketplace.source.trim_end_matches('/');
                    let text = match path {
                        Some(p) => format!("{base}/{p}"),
                        None => base.to_owned(),
                    };
                    (text, None, None, None)
                }
                (_, rev) => {
                    let subdir = match (marketplace.subdir(), path) {
                        (Some(base), Some(p)) => Some(format!("{base}/{p}")),
                        (base, p) => base.or(p.clone()),
                    };
                    // The repository itself, without a `github:` sub-path (now `repo_path`).
                    let text = match marketplace.parsed_source() {
                        crate::Source::GitHub { owner, repo, .. } => {
                            format!("github:{owner}/{repo}")
                        }
                        _ => marketplace.source.clone(),
                    };
                    (text, rev.map(str::to_owned), subdir, None)
                }
            },
            EntrySource::Plain(text) => (text.clone(), None, None, None),
            EntrySource::GitHub {
                repo,
                git_ref,
                path,
            } => (
                format!("github:{repo}"),
                git_ref.clone(),
                path.clone(),
                None,
            ),
            EntrySource::Git { url, git_ref, path } => {
                (url.clone(), git_ref.clone(), path.clone(), None)
            }
            EntrySource::Archive { url, sha256 } => (url.clone(), None, None, *sha256),
            EntrySource::Npm { package, .. } => {
                return Err(named(format!(
                    "it comes from the npm package `{package}`, whose tarball is found in its registry when locked"
                )));
            }
        };
        let mut request = PluginRequest::new(&text, git_ref.as_deref(), None, repo_path.as_deref())
            .map_err(&named)?;
        if let Some(hash) = archive_hash {
            if request.parsed_source().kind() != crate::SourceKind::Archive {
                return Err(named(format!("`{text}` is not an archive URL")));
            }
            request.archive_hash = Some(hash);
        }
        if request.parsed_source().kind() == crate::SourceKind::Local
            && !matches!(source, EntrySource::Relative(_))
        {
            return Err(named(format!(
                "its source `{text}` is a path on this machine; a catalog may name only folders inside its marketplace"
            )));
        }
        if request.parsed_source().kind() == crate::SourceKind::Marketplace {
            return Err(named(format!(
                "its source `{text}` names another marketplace, which a catalog cannot"
            )));
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn market(source: &str) -> MarketplaceRequest {
        MarketplaceRequest::new("m", source, None, None).expect("valid")
    }

    fn catalog(json: &str) -> Catalog {
        parse_catalog("m", ".claude-plugin/marketplace.json", json.as_bytes()).expect("parses")
    }

    const REV: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn every_source_form_becomes_a_plain_request() {
        let c = catalog(
            r#"{"name": "m", "metadata": {"pluginRoot": "./plugins"}, "plugins": [
                {"name": "rel", "source": "./rel"},
                {"name": "gh", "source": {"source": "github", "repo": "acme/gh", "ref": "v1", "sha": "abc"}},
                {"name": "url", "source": {"source": "url", "url": "https://h/x.git", "ref": "main"}},
                {"name": "sub", "source": {"source": "git-subdir", "url": "https://h/y.git", "path": "a/b"}},
                {"name": "zip", "source": {"source": "archive", "url": "https://h/z.tar.gz"}}
            ]}"#,
        );
        let git = market("github:acme/market");
        let got: Vec<(String, Option<String>, Option<String>)> = c
            .plugins
            .iter()
            .map(|e| {
                let r = e.request(&git, Some(REV)).expect("request");
                (r.source, r.git_ref, r.repo_path)
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "github:acme/market".into(),
                    Some(REV.into()),
                    Some("plugins/rel".into())
                ),
                ("github:acme/gh".into(), Some("abc".into()), None),
                ("https://h/x.git".into(), Some("main".into()), None),
                ("https://h/y.git".into(), None, Some("a/b".into())),
                ("https://h/z.tar.gz".into(), None, None),
            ]
        );
        let local = c.plugins[0]
            .request(&market("./market"), None)
            .expect("local");
        assert_eq!(local.source, "./market/plugins/rel");
    }

    #[test]
    fn unusable_entries_fail_only_when_asked_for_naming_marketplace_and_entry() {
        let c = catalog(
            r#"{"plugins": [
                {"name": "out", "source": "../elsewhere"},
                {"name": "odd", "source": {"source": "svn", "url": "x"}},
                {"name": "twice", "source": "./a"},
                {"name": "twice", "source": "./b"},
                {"name": "ok", "source": "./ok"}
            ]}"#,
        );
        for (name, needle) in [
            ("out", "`..`"),
            ("odd", "unknown kind `svn`"),
            ("twice", "more than once"),
            ("missing", "lists no plugin `missing`"),
        ] {
            let err = c.entry("m", name).expect_err(name);
            assert!(err.contains("marketplace `m`"), "{err}");
            assert!(err.contains(needle), "{name}: {err}");
        }
        assert!(c.entry("m", "ok").is_ok());
    }

    #[test]
    fn a_catalog_that_is_not_json_names_marketplace_and_file() {
        let err = parse_catalog("m", ".plugin/marketplace.json", b"{ not json").expect_err("bad");
        let text = err.to_string();
        assert!(
            text.contains("`.plugin/marketplace.json` of marketplace `m`"),
            "{text}"
        );
        assert!(text.contains("not valid JSON"), "{text}");
    }

    #[test]
    fn a_catalog_names_no_variable_and_no_path_on_this_machine() {
        let c = catalog(
            r#"{"plugins": [
                {"name": "var", "source": {"source": "url", "url": "https://x:${SECRET}@h/r.git"}},
                {"name": "reg", "source": {"source": "npm", "package": "p", "registry": "https://${HOST}/"}},
                {"name": "plainvar", "source": "https://h/${X}.tar.gz"},
                {"name": "home", "source": "~/"},
                {"name": "abs", "source": "/etc"},
                {"name": "file", "source": "file:///etc"},
                {"name": "gitfile", "source": {"source": "url", "url": "FILE:///etc"}},
                {"name": "dotted", "source": {"source": "archive", "url": "./x.tar.gz"}},
                {"name": "npmfile", "source": {"source": "npm", "package": "p", "registry": "file:///r"}}
            ]}"#,
        );
        for (name, needle) in [
            ("var", "cannot read environment variables"),
            ("reg", "cannot read environment variables"),
            ("plainvar", "cannot read environment variables"),
            ("home", "a path on this machine"),
            ("abs", "a path on this machine"),
            ("file", "`file://` URL on this machine"),
            ("gitfile", "`file://` URL on this machine"),
            ("dotted", "a path on this machine"),
            ("npmfile", "not an http(s) URL"),
        ] {
            let err = c.entry("m", name).expect_err(name);
            assert!(err.contains("marketplace `m`, plugin `"), "{err}");
            assert!(err.contains(needle), "{name}: {err}");
            assert!(!err.contains("SECRET}@") || name == "var", "{err}");
        }
    }

    #[test]
    fn an_oversized_catalog_is_refused_before_it_is_parsed() {
        let big = vec![b' '; MAX_CATALOG_BYTES as usize + 1];
        let err = parse_catalog("m", "marketplace.json", &big).expect_err("too big");
        assert!(
            err.to_string()
                .contains("over berth's limit of 8388608 bytes for a catalog"),
            "{err}"
        );
    }
}
