//! The manifest `plugins.toml` (docs/spec.md section 1): what the user asks for.

mod agent;
mod marketplace;
mod names;
mod parse;

pub use agent::{AgentOrigin, AgentRequest};
pub use marketplace::{AutoLoad, CATALOG_PATHS, MarketplaceRequest};
pub use names::{is_valid_plugin_name, mixed_scripts};
pub use parse::parse_manifest;

use crate::diagnostic::Diagnostic;
use crate::hash::Sha256Hash;
use crate::redact::redact;
use crate::source::{Source, SourceKind, normalize_repo_path};

/// A parsed, validated manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    /// The `[[plugin]]` entries, in file order (which is merge order).
    pub plugins: Vec<PluginRequest>,
    /// The `[agent]` table: a custom agent package (docs/spec.md section 8).
    pub agent: Option<AgentRequest>,
    /// The `[[marketplace]]` declarations, in file order; `PLUGIN@NAME` sources name them.
    pub marketplaces: Vec<MarketplaceRequest>,
    /// `exclude-newer`: releases younger than this are not locked (docs/manifest.md).
    pub exclude_newer: Option<crate::release_age::ExcludeNewer>,
}

/// A manifest and the warnings found while reading it.
#[derive(Debug, Clone)]
pub struct ParsedManifest {
    /// The manifest.
    pub manifest: Manifest,
    /// Unknown keys and credentials written inline, each at its place in the file.
    pub warnings: Vec<Diagnostic>,
}

/// One `[[plugin]]` entry: the request fields that decide whether the lock is up to date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRequest {
    /// `source` as written (may hold credentials: print [`PluginRequest::display_source`]).
    pub source: String,
    /// `ref`: a branch, tag or full commit id.
    pub git_ref: Option<String>,
    /// `version`: a semver range over the repository's tags.
    pub version: Option<String>,
    /// `repo_path` as written.
    pub repo_path: Option<String>,
    /// `hash`: the content hash the plugin must have.
    pub hash: Option<Sha256Hash>,
    /// `archive_hash`: the sha256 the downloaded archive must have (archive sources).
    pub archive_hash: Option<Sha256Hash>,
    /// `name`: the name the plugin must have.
    pub name: Option<String>,
    /// The line of the entry's `source` key, for messages.
    pub line: usize,
    parsed: Source,
    subdir: Option<String>,
}

impl PluginRequest {
    /// Builds and validates a request outside a manifest file (the server's JSON body).
    /// `line` is 0 there.
    pub fn new(
        source: &str,
        git_ref: Option<&str>,
        version: Option<&str>,
        repo_path: Option<&str>,
    ) -> Result<Self, String> {
        let parsed = Source::parse(source).map_err(|e| e.message)?;
        let mut request = Self {
            source: source.to_owned(),
            git_ref: git_ref.map(str::to_owned),
            version: version.map(str::to_owned),
            repo_path: repo_path.map(str::to_owned),
            hash: None,
            archive_hash: None,
            name: None,
            line: 0,
            parsed,
            subdir: None,
        };
        request.validate().map_err(|(_, message)| message)?;
        Ok(request)
    }

    /// The parsed source.
    pub fn parsed_source(&self) -> &Source {
        &self.parsed
    }

    /// The source with credentials removed: safe to print and to write to the lock.
    pub fn display_source(&self) -> String {
        redact(&self.source).text
    }

    /// The plugin's folder inside the repository or archive, normalised: `repo_path`, or the
    /// path part of a `github:OWNER/REPO/PATH` source.
    pub fn subdir(&self) -> Option<&str> {
        self.subdir.as_deref()
    }

    /// Checks the combinations of fields. On error, returns which field is at fault.
    fn validate(&mut self) -> Result<(), (&'static str, String)> {
        self.check_ref_and_version()?;
        self.settle_subdir()?;
        if let Some(name) = &self.name
            && !is_valid_plugin_name(name)
        {
            return Err((
                "name",
                format!("`name = \"{name}\"` is not a valid plugin name"),
            ));
        }
        Ok(())
    }

    /// `ref` and `version`: for git sources only, one at most, each well-formed.
    fn check_ref_and_version(&self) -> Result<(), (&'static str, String)> {
        let kind = self.parsed.kind();
        if self.git_ref.is_some() && self.version.is_some() {
            return Err((
                "version",
                "`ref` and `version` cannot both be given: pin a branch, tag or commit with `ref`, or a semver range with `version`".into(),
            ));
        }
        if kind != SourceKind::Git {
            for (field, value) in [("ref", &self.git_ref), ("version", &self.version)] {
                if value.is_some() {
                    return Err((
                        field,
                        format!(
                            "`{field}` only applies to git sources, and `{}` is a {kind} source",
                            self.display_source()
                        ),
                    ));
                }
            }
        }
        if let Some(git_ref) = &self.git_ref
            && (git_ref.is_empty() || git_ref.trim() != git_ref)
        {
            return Err((
                "ref",
                format!("`ref = \"{git_ref}\"` is not a branch, tag or commit name"),
            ));
        }
        if let Some(version) = &self.version
            && let Err(e) = semver::VersionReq::parse(version)
        {
            return Err((
                "version",
                format!(
                    "`version = \"{version}\"` is not a semver range ({e}); write for example `^1.2`"
                ),
            ));
        }
        Ok(())
    }

    /// `archive_hash` for archives only, and the plugin's folder: `repo_path` (not for a
    /// marketplace pick or a local folder, nor beside a `github:` path) or the path of a
    /// `github:OWNER/REPO/PATH` source.
    fn settle_subdir(&mut self) -> Result<(), (&'static str, String)> {
        let kind = self.parsed.kind();
        let github_subpath = match &self.parsed {
            Source::GitHub { subpath, .. } => subpath.clone(),
            _ => None,
        };
        if self.archive_hash.is_some() && kind != SourceKind::Archive {
            return Err((
                "archive_hash",
                format!(
                    "`archive_hash` only applies to archive sources, and `{}` is a {kind} source; pin its content with `hash`",
                    self.display_source()
                ),
            ));
        }
        if let Some(repo_path) = &self.repo_path {
            if kind == SourceKind::Marketplace {
                return Err((
                    "repo_path",
                    format!(
                        "`repo_path` does not apply to `{}`: the marketplace says where the plugin is",
                        self.display_source()
                    ),
                ));
            }
            if kind == SourceKind::Local {
                return Err((
                    "repo_path",
                    "`repo_path` does not apply to local sources: put the folder in `source`"
                        .into(),
                ));
            }
            if github_subpath.is_some() {
                return Err((
                    "repo_path",
                    "`repo_path` is given twice: once in the `github:` source and once as `repo_path`; keep one".into(),
                ));
            }
            let normalized = normalize_repo_path(repo_path)
                .map_err(|why| ("repo_path", format!("`repo_path = \"{repo_path}\"` {why}")))?;
            self.subdir = Some(normalized);
        } else {
            self.subdir = github_subpath;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ParsedManifest, Diagnostic> {
        parse_manifest("plugins.toml", text)
    }

    #[test]
    fn reads_entries_in_order() {
        let parsed = parse(
            r#"
# comment
[[plugin]]
source = "github:acme/review-tools"
ref = "v1.2.0"
repo_path = "plugins/review"

[[plugin]]
source = "./plugins/house-rules"
"#,
        )
        .expect("valid manifest");
        assert!(parsed.warnings.is_empty());
        let plugins = &parsed.manifest.plugins;
        assert_eq!(plugins.len(), 2);
        assert_eq!(plugins[0].git_ref.as_deref(), Some("v1.2.0"));
        assert_eq!(plugins[0].subdir(), Some("plugins/review"));
        assert_eq!(plugins[0].line, 4);
        assert_eq!(plugins[1].source, "./plugins/house-rules");
    }

    #[test]
    fn accepts_inline_tables() {
        let parsed = parse(r#"plugin = [{ source = "./a" }, { source = "./b" }]"#).expect("valid");
        assert_eq!(parsed.manifest.plugins.len(), 2);
    }

    #[test]
    fn unknown_keys_are_errors_at_their_line() {
        let err = parse("[[plugin]]\nsource = \"./a\"\nrepo-path = \"x\"\n").expect_err("unknown");
        assert_eq!((err.line, err.column), (3, 1));
        assert!(err.message.contains("`repo-path`"), "{err}");
        assert!(err.message.contains("did you mean `repo_path`"), "{err}");
        let err = parse("[[plugin]]\nsource = \"github:o/r\"\ntag = \"v1\"\n").expect_err("tag");
        assert!(err.message.contains("did you mean `ref`"), "{err}");
        let err = parse("[[plugins]]\nsource = \"./a\"\n").expect_err("plugins");
        assert_eq!(err.line, 1, "{err}");
        assert!(err.message.contains("did you mean `[[plugin]]`"), "{err}");
    }

    #[test]
    fn malformed_toml_names_line_and_column() {
        let err = parse("[[plugin]]\nsource = \"./a\nref = 1\n").expect_err("unterminated string");
        assert_eq!(err.file, "plugins.toml");
        assert_eq!(err.line, 2);
        assert!(err.to_string().starts_with("plugins.toml:2:"), "{err}");
    }

    #[test]
    fn bad_values_are_errors_at_the_value() {
        let cases = [
            (
                "[[plugin]]\nsource = \"./a\"\nref = \"main\"\n",
                3,
                "only applies to git",
            ),
            (
                "[[plugin]]\nsource = \"github:o/r\"\nref = \"main\"\nversion = \"^1\"\n",
                4,
                "cannot both",
            ),
            (
                "[[plugin]]\nsource = \"github:o/r\"\nrepo_path = \"../x\"\n",
                3,
                "`..`",
            ),
            (
                "[[plugin]]\nsource = \"acme/tools\"\n",
                2,
                "github:acme/tools",
            ),
            ("[[plugin]]\nsource = 3\n", 2, "must be a string"),
            ("[[plugin]]\nref = \"x\"\n", 1, "no `source`"),
            (
                "[[plugin]]\nsource = \"github:o/r\"\nversion = \"not a range\"\n",
                3,
                "semver",
            ),
            (
                "[[plugin]]\nsource = \"github:o/r\"\nhash = \"md5-x\"\n",
                3,
                "SRI",
            ),
            (
                "[[plugin]]\nsource = \"github:o/r/sub\"\nrepo_path = \"x\"\n",
                3,
                "twice",
            ),
        ];
        for (text, line, needle) in cases {
            let err = parse(text).expect_err(text);
            assert_eq!(err.line, line, "{text}: {err}");
            assert!(err.message.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn exclude_newer_is_a_top_level_key() {
        let parsed =
            parse("exclude-newer = \"7 days\"\n[[plugin]]\nsource = \"./a\"\n").expect("valid");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        assert!(matches!(
            parsed.manifest.exclude_newer,
            Some(crate::release_age::ExcludeNewer::Span {
                seconds: 604_800,
                ..
            })
        ));
        let err = parse("\nexclude-newer = \"soon\"\n[[plugin]]\nsource = \"./a\"\n")
            .expect_err("not a date or span");
        assert!(err.message.contains("`soon` is not"), "{err}");
        assert_eq!(err.line, 2, "{err}");
        let err = parse("exclude_newer = \"7 days\"\n").expect_err("unknown");
        assert!(
            err.message.contains("did you mean `exclude-newer`"),
            "{err}"
        );
    }

    #[test]
    fn literal_credentials_warn() {
        let parsed = parse("[[plugin]]\nsource = \"https://u:secret@h/r.git\"\n").expect("valid");
        assert_eq!(parsed.warnings.len(), 1);
        assert!(!parsed.warnings[0].message.contains("secret"));
        assert_eq!(
            parsed.manifest.plugins[0].display_source(),
            "https://h/r.git"
        );
    }

    #[test]
    fn mixed_script_names_are_told_apart() {
        assert_eq!(mixed_scripts("good"), None);
        assert_eq!(
            mixed_scripts("g\u{43e}\u{43e}d"),
            Some(vec!["Latin", "Cyrillic"])
        );
        assert_eq!(
            mixed_scripts("\u{43f}\u{43b}\u{430}\u{433}\u{438}\u{43d}-2"),
            None
        );
        assert_eq!(
            mixed_scripts("\u{65e5}\u{672c}\u{3054}-tools"),
            Some(vec!["CJK", "Latin"])
        );
        assert_eq!(mixed_scripts("\u{65e5}\u{672c}\u{3054}\u{30c4}"), None);
        assert_eq!(mixed_scripts("my-plugin_2.0"), None);
    }
}
