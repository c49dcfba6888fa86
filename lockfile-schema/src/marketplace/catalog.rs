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
use crate::source::is_marketplace_name;

use super::MarketplaceRequest;
pub use super::entry_source::EntrySource;
use super::entry_source::{entry_source, json_type};

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
    /// Its standalone skills (`skills`: the OpenHands SDK's extension of the format), each
    /// a skill's folder, in order; only `name` and `source` count.
    pub skills: Vec<CatalogEntry>,
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
    /// `keywords`, as listed (what is not a string is left out).
    pub keywords: Vec<String>,
    /// `strict` (default true): false means the catalog entry defines the plugin's
    /// components itself.
    pub strict: bool,
    /// `dependencies` the entry declares (besides the plugin's own manifest's).
    pub dependencies: Vec<super::DependencySpec>,
    /// What the entry defines of the plugin (`strict: false`, or component fields), as
    /// Claude Code applies it; or why it cannot be used (a path leaving the plugin).
    pub definition: Result<Option<crate::EntryDefinition>, String>,
    /// Component keys the entry gives that berth does not apply (`outputStyles`): `lock`
    /// names them in a warning.
    pub inline_components: Vec<String>,
}

/// Component keys an entry may give that no harness berth serves reads.
const UNAPPLIED_COMPONENTS: [&str; 1] = ["outputStyles"];

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
    let list = |key: &str| match object.get(key) {
        None => Ok(Vec::new()),
        Some(serde_json::Value::Array(entries)) => Ok(entries.clone()),
        Some(other) => Err(fail(format!(
            "has `{key}` as {}, not a list",
            json_type(other)
        ))),
    };
    let plugins = entries(&list("plugins")?, plugin_root, "plugin").map_err(&fail)?;
    // A skill's source is relative to the marketplace itself (`pluginRoot` is for plugins).
    let skills = entries(&list("skills")?, "", "skill").map_err(&fail)?;
    Ok(Catalog {
        name: object
            .get("name")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        plugins,
        skills,
    })
}

/// The entries of a catalog's `plugins` or `skills` list (`what` names one in errors).
fn entries(
    entries: &[serde_json::Value],
    plugin_root: &str,
    what: &str,
) -> Result<Vec<CatalogEntry>, String> {
    let mut plugins = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let Some(name) = entry.get("name").and_then(serde_json::Value::as_str) else {
            return Err(format!(
                "has a {what} entry (number {}) without a `name`",
                i + 1
            ));
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
            keywords: entry
                .get("keywords")
                .and_then(serde_json::Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(serde_json::Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            strict: entry
                .get("strict")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(true),
            dependencies: super::parse_dependencies(entry.get("dependencies")).0,
            definition: crate::EntryDefinition::from_entry(entry),
            inline_components: UNAPPLIED_COMPONENTS
                .iter()
                .filter(|k| entry.get(**k).is_some_and(|v| !v.is_null()))
                .map(|k| (*k).to_owned())
                .collect(),
        });
    }
    Ok(plugins)
}

impl Catalog {
    /// The entry named `plugin`, or why it cannot be used: absent (listing what the
    /// catalog has), listed twice, or with a source berth cannot read.
    pub fn entry(&self, marketplace: &str, plugin: &str) -> Result<&CatalogEntry, String> {
        let mut found = self.plugins.iter().filter(|e| e.name == plugin);
        let Some(entry) = found.next() else {
            let names: Vec<&str> = self.plugins.iter().map(|e| e.name.as_str()).collect();
            let near = crate::suggest::nearest(plugin, names.iter().copied());
            // A few names are listed; a big catalog is pointed at, not printed.
            let listed = match names.len() {
                0 => "; it lists none".to_owned(),
                _ if !near.is_empty() => crate::suggest::did_you_mean(&near),
                1..=10 => format!(
                    "; it lists {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                n => format!(
                    "; it lists {n} plugins (`berth marketplace list {marketplace}` shows them)"
                ),
            };
            return Err(format!(
                "marketplace `{marketplace}` lists no plugin `{plugin}`{listed}"
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
        if let Err(why) = &entry.definition {
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
            EntrySource::Relative(path) => relative(marketplace, path.as_deref(), rev),
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

/// A request's source text, `ref`, `repo_path` and `archive_hash`.
type Fields = (String, Option<String>, Option<String>, Option<Sha256Hash>);

/// The fields of a relative entry (`./plugins/x`, or the marketplace itself): a folder
/// inside a local marketplace, else the folder in the marketplace's repository at `rev`.
fn relative(marketplace: &MarketplaceRequest, path: Option<&str>, rev: Option<&str>) -> Fields {
    if marketplace.parsed_source().kind() == crate::SourceKind::Local {
        let base = marketplace.source.trim_end_matches('/');
        let text = match path {
            Some(p) => format!("{base}/{p}"),
            None => base.to_owned(),
        };
        return (text, None, None, None);
    }
    let subdir = match (marketplace.subdir(), path) {
        (Some(base), Some(p)) => Some(format!("{base}/{p}")),
        (base, p) => base.or(p.map(str::to_owned)),
    };
    // The repository itself, without a `github:` sub-path (now `repo_path`).
    let text = match marketplace.parsed_source() {
        crate::Source::GitHub { owner, repo, .. } => format!("github:{owner}/{repo}"),
        _ => marketplace.source.clone(),
    };
    (text, rev.map(str::to_owned), subdir, None)
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
                {"name": "rel", "source": "./rel", "keywords": ["lint", 3, "style"]},
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
        // Keywords are read leniently: what is not a string is left out.
        assert_eq!(c.plugins[0].keywords, ["lint", "style"]);
        assert!(c.plugins[1].keywords.is_empty());
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
