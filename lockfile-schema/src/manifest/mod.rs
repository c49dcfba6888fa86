//! The manifest `plugins.toml` (SPEC section 1): what the user asks for.

use std::ops::Range;

use toml_edit::{Item, Key, TableLike, Value};

mod agent;
mod marketplace;

pub use agent::{AgentOrigin, AgentRequest};
pub use marketplace::{CATALOG_PATHS, MarketplaceRequest};

use crate::diagnostic::Diagnostic;
use crate::hash::Sha256Hash;
use crate::source::{Source, SourceKind, normalize_repo_path, redact};

/// A parsed, validated manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    /// The `[[plugin]]` entries, in file order (which is merge order).
    pub plugins: Vec<PluginRequest>,
    /// The `[agent]` table: a custom agent package (SPEC section 8).
    pub agent: Option<AgentRequest>,
    /// The `[[marketplace]]` declarations, in file order; `PLUGIN@NAME` sources name them.
    pub marketplaces: Vec<MarketplaceRequest>,
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
}

/// A plugin name must be usable as a file name and in `<plugin>:<command>` skill names.
pub fn is_valid_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', ':', '\0'])
        && !name.chars().any(char::is_control)
}

/// The scripts of a name's letters when it mixes them (a Cyrillic `о` in `gооd`), as
/// browsers flag mixed-script host names: such a name can pass for another. Digits and
/// punctuation belong to no script; Han, Hiragana, Katakana and Hangul count as one (they
/// are written together). `None` for a name of one script.
pub fn mixed_scripts(name: &str) -> Option<Vec<&'static str>> {
    let mut scripts: Vec<&'static str> = Vec::new();
    for c in name.chars().filter(|c| c.is_alphabetic()) {
        let script = match u32::from(c) {
            0x0041..=0x024F
            | 0x1E00..=0x1EFF
            | 0x2C60..=0x2C7F
            | 0xA720..=0xA7FF
            | 0xFF21..=0xFF5A => "Latin",
            0x0370..=0x03FF | 0x1F00..=0x1FFF => "Greek",
            0x0400..=0x052F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => "Cyrillic",
            0x0530..=0x058F => "Armenian",
            0x0590..=0x05FF => "Hebrew",
            0x0600..=0x06FF | 0x0750..=0x077F => "Arabic",
            0x0900..=0x097F => "Devanagari",
            0x0E00..=0x0E7F => "Thai",
            0x10A0..=0x10FF => "Georgian",
            0x13A0..=0x13FF => "Cherokee",
            0x3040..=0x30FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xAC00..=0xD7AF
            | 0x1100..=0x11FF => "CJK",
            _ => "other",
        };
        if !scripts.contains(&script) {
            scripts.push(script);
        }
    }
    (scripts.len() > 1).then_some(scripts)
}

const PLUGIN_KEYS: [&str; 7] = [
    "source",
    "ref",
    "version",
    "repo_path",
    "hash",
    "archive_hash",
    "name",
];

const AGENT_KEYS: [&str; 4] = ["source", "ref", "entry_point", "python"];

const MARKETPLACE_KEYS: [&str; 4] = ["name", "source", "ref", "repo_path"];

/// Parses `plugins.toml`. `file` is the path to name in messages.
pub fn parse_manifest(file: &str, text: &str) -> Result<ParsedManifest, Diagnostic> {
    let doc = toml_edit::Document::parse(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        Diagnostic::at(
            file,
            text,
            offset,
            format!("invalid TOML: {}", e.message().trim_end()),
        )
    })?;
    let mut reader = Reader {
        file,
        text,
        warnings: Vec::new(),
    };
    let mut plugins = Vec::new();
    let mut agent = None;
    let mut marketplaces: Vec<MarketplaceRequest> = Vec::new();
    // Marketplaces first, wherever they are in the file: plugins name them.
    if let Some(item) = doc.get("marketplace") {
        for (table, span) in reader.tables_of("marketplace", item)? {
            let marketplace = reader.marketplace(table, span.clone())?;
            if marketplaces.iter().any(|m| m.name == marketplace.name) {
                return Err(reader.error(
                    value_span(table, "name").or(span),
                    format!(
                        "marketplace `{}` is declared twice; give each `[[marketplace]]` its own `name`",
                        marketplace.name
                    ),
                ));
            }
            marketplaces.push(marketplace);
        }
    }
    for (key, item) in doc.iter() {
        match key {
            "marketplace" => {}
            "plugin" => {
                for (table, span) in reader.tables_of(key, item)? {
                    let plugin = reader.plugin(table, span)?;
                    if let Source::Marketplace { marketplace, .. } = plugin.parsed_source()
                        && !marketplaces.iter().any(|m| &m.name == marketplace)
                    {
                        let declared: Vec<String> =
                            marketplaces.iter().map(|m| format!("`{}`", m.name)).collect();
                        return Err(reader.error(
                            value_span(table, "source"),
                            format!(
                                "`{}` names marketplace `{marketplace}`, which no `[[marketplace]]` declares ({}); add it with `berth marketplace add {marketplace} SOURCE`",
                                plugin.display_source(),
                                if declared.is_empty() {
                                    "there are none".to_owned()
                                } else {
                                    format!("declared: {}", declared.join(", "))
                                }
                            ),
                        ));
                    }
                    plugins.push(plugin);
                }
            }
            "agent" => {
                let Some(table) = item.as_table_like() else {
                    return Err(reader.error(
                        item.span(),
                        format!(
                            "`agent` must be a table (`[agent]`), found a {}",
                            item.type_name()
                        ),
                    ));
                };
                agent = Some(reader.agent(table, item.span())?);
            }
            other => reader.warn(
                doc.as_table().key(other).and_then(Key::span),
                format!("unknown key `{other}` is ignored (expected `[[plugin]]` and `[[marketplace]]` tables and an optional `[agent]`)"),
            ),
        }
    }
    Ok(ParsedManifest {
        manifest: Manifest {
            plugins,
            agent,
            marketplaces,
        },
        warnings: reader.warnings,
    })
}

/// A table of the manifest and where it starts.
type SpannedTable<'a> = (&'a dyn TableLike, Option<Range<usize>>);

struct Reader<'a> {
    file: &'a str,
    text: &'a str,
    warnings: Vec<Diagnostic>,
}

impl<'a> Reader<'a> {
    fn error(&self, span: Option<Range<usize>>, message: String) -> Diagnostic {
        Diagnostic::at(self.file, self.text, span.map_or(0, |s| s.start), message)
    }

    fn warn(&mut self, span: Option<Range<usize>>, message: String) {
        let diagnostic = self.error(span, message);
        self.warnings.push(diagnostic);
    }

    /// `[[plugin]]` tables, or `plugin = [{...}, ...]` written inline.
    fn tables_of(&self, key: &str, item: &'a Item) -> Result<Vec<SpannedTable<'a>>, Diagnostic> {
        match item {
            Item::ArrayOfTables(array) => Ok(array
                .iter()
                .map(|t| (t as &dyn TableLike, t.span()))
                .collect()),
            Item::Value(Value::Array(array)) => array
                .iter()
                .map(|v| match v {
                    Value::InlineTable(t) => Ok((t as &dyn TableLike, t.span())),
                    other => Err(self.error(
                        other.span(),
                        format!(
                            "`{key}` entries must be tables with a `source`, found a {}",
                            other.type_name()
                        ),
                    )),
                })
                .collect(),
            other => Err(self.error(
                other.span(),
                format!(
                    "`{key}` must be an array of tables (`[[{key}]]`), found a {}",
                    other.type_name()
                ),
            )),
        }
    }

    fn plugin(
        &mut self,
        table: &dyn TableLike,
        span: Option<Range<usize>>,
    ) -> Result<PluginRequest, Diagnostic> {
        let (source, source_span, line) =
            self.source(table, span.clone(), &PLUGIN_KEYS, "`[[plugin]]`", "entry ")?;
        let parsed = Source::parse(&source).map_err(|e| self.error(source_span, e.message))?;
        let hash = self.sri(table, "hash")?;
        let archive_hash = self.sri(table, "archive_hash")?;
        let mut request = PluginRequest {
            source,
            git_ref: self.string(table, "ref")?,
            version: self.string(table, "version")?,
            repo_path: self.string(table, "repo_path")?,
            hash,
            archive_hash,
            name: self.string(table, "name")?,
            line,
            parsed,
            subdir: None,
        };
        request
            .validate()
            .map_err(|(field, message)| self.error(value_span(table, field).or(span), message))?;
        Ok(request)
    }

    fn marketplace(
        &mut self,
        table: &dyn TableLike,
        span: Option<Range<usize>>,
    ) -> Result<MarketplaceRequest, Diagnostic> {
        let (source, _, _) = self.source(
            table,
            span.clone(),
            &MARKETPLACE_KEYS,
            "`[[marketplace]]`",
            "entry ",
        )?;
        let Some(name) = self.string(table, "name")? else {
            return Err(self.error(span, "`[[marketplace]]` entry has no `name`".into()));
        };
        let line = crate::diagnostic::line_column(
            self.text,
            value_span(table, "name").map_or(0, |s| s.start),
        )
        .0;
        MarketplaceRequest::new(
            &name,
            &source,
            self.string(table, "ref")?.as_deref(),
            self.string(table, "repo_path")?.as_deref(),
        )
        .map(|m| m.at_line(line))
        .map_err(|(field, message)| self.error(value_span(table, field).or(span), message))
    }

    fn agent(
        &mut self,
        table: &dyn TableLike,
        span: Option<Range<usize>>,
    ) -> Result<AgentRequest, Diagnostic> {
        let (source, _, line) = self.source(table, span.clone(), &AGENT_KEYS, "`[agent]`", "")?;
        let git_ref = self.string(table, "ref")?;
        let entry_point = self.string(table, "entry_point")?;
        let python = self.string(table, "python")?;
        AgentRequest::new(
            &source,
            git_ref.as_deref(),
            entry_point.as_deref(),
            python.as_deref(),
        )
        .map(|r| r.at_line(line))
        .map_err(|(field, message)| self.error(value_span(table, field).or(span), message))
    }

    /// What `[[plugin]]` and `[agent]` read alike: warnings for unknown keys (with a "did
    /// you mean") and for a credential written in `source`, then `source` itself, its span
    /// and its line.
    fn source(
        &mut self,
        table: &dyn TableLike,
        span: Option<Range<usize>>,
        known: &[&str],
        section: &str,
        entry: &str,
    ) -> Result<(String, Option<Range<usize>>, usize), Diagnostic> {
        for (key, _) in table.iter() {
            if !known.contains(&key) {
                let hint = known
                    .iter()
                    .find(|known| known.replace('_', "-") == key || similar(known, key))
                    .map(|known| format!("; did you mean `{known}`?"))
                    .unwrap_or_default();
                self.warn(
                    table.key(key).and_then(Key::span),
                    format!("unknown key `{key}` in {section} is ignored{hint}"),
                );
            }
        }
        let Some((source_key, source_item)) = table.get_key_value("source") else {
            return Err(self.error(span, format!("{section} {entry}has no `source`")));
        };
        let source = self.string(table, "source")?.unwrap_or_default();
        let redacted = redact(&source);
        if redacted.removed_secret {
            self.warn(
                source_item.span(),
                format!(
                    "source `{}` has a credential written in it; it is left out of everything berth writes and prints. Put it in an environment variable and write `${{VAR}}` instead",
                    redacted.text
                ),
            );
        }
        let line =
            crate::diagnostic::line_column(self.text, source_key.span().map_or(0, |s| s.start)).0;
        Ok((source, source_item.span(), line))
    }

    fn sri(&self, table: &dyn TableLike, key: &str) -> Result<Option<Sha256Hash>, Diagnostic> {
        match self.string(table, key)? {
            Some(text) => Sha256Hash::from_sri(&text)
                .map(Some)
                .map_err(|e| self.error(value_span(table, key), e.to_string())),
            None => Ok(None),
        }
    }

    fn string(&self, table: &dyn TableLike, key: &str) -> Result<Option<String>, Diagnostic> {
        match table.get(key) {
            None => Ok(None),
            Some(item) => match item.as_str() {
                Some(s) => Ok(Some(s.to_owned())),
                None => Err(self.error(
                    item.span(),
                    format!("`{key}` must be a string, found {}", item.type_name()),
                )),
            },
        }
    }
}

fn value_span(table: &dyn TableLike, key: &str) -> Option<Range<usize>> {
    table.get(key).and_then(Item::span)
}

/// Whether two keys differ by at most one edit, for "did you mean" hints.
fn similar(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            row.push((prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev[b.len()] <= 1
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
    fn unknown_keys_warn_with_their_line() {
        let parsed = parse("[[plugin]]\nsource = \"./a\"\nrepo-path = \"x\"\n").expect("valid");
        assert_eq!(parsed.warnings.len(), 1);
        let w = &parsed.warnings[0];
        assert_eq!((w.line, w.column), (3, 1));
        assert!(w.message.contains("`repo-path`"), "{w}");
        assert!(w.message.contains("did you mean `repo_path`"), "{w}");
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
