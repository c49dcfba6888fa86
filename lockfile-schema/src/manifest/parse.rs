//! Reading `plugins.toml`: every table and key checked, with the line and column of what
//! is wrong and a warning for what is unknown or risky.

use std::ops::Range;

use toml_edit::{Item, Key, TableLike, Value};

use super::{AgentRequest, AutoLoad, MarketplaceRequest};
use super::{Manifest, ParsedManifest, PluginRequest};
use crate::diagnostic::Diagnostic;
use crate::hash::Sha256Hash;
use crate::redact::redact;
use crate::release_age::ExcludeNewer;
use crate::source::Source;

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

/// The top-level key of the release-age cutoff, spelled as uv spells it.
const EXCLUDE_NEWER: &str = "exclude-newer";

const MARKETPLACE_KEYS: [&str; 5] = ["name", "source", "ref", "repo_path", "auto_load"];

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
    // Marketplaces first, wherever they are in the file: plugins name them.
    let marketplaces = match doc.get("marketplace") {
        Some(item) => reader.marketplaces(item)?,
        None => Vec::new(),
    };
    let mut plugins = Vec::new();
    let mut agent = None;
    let mut exclude_newer = None;
    for (key, item) in doc.iter() {
        match key {
            "marketplace" => {}
            EXCLUDE_NEWER => exclude_newer = Some(reader.exclude_newer(item)?),
            "plugin" => {
                for (table, span) in reader.tables_of(key, item)? {
                    let plugin = reader.plugin(table, span)?;
                    reader.check_marketplace_declared(table, &plugin, &marketplaces)?;
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
            other => {
                return Err(reader.error(
                    doc.as_table().key(other).and_then(Key::span),
                    unknown_top_level(other, item),
                ));
            }
        }
    }
    Ok(ParsedManifest {
        manifest: Manifest {
            plugins,
            agent,
            marketplaces,
            exclude_newer,
        },
        warnings: reader.warnings,
    })
}

impl<'a> Reader<'a> {
    /// The `[[marketplace]]` tables, each name once.
    fn marketplaces(&mut self, item: &'a Item) -> Result<Vec<MarketplaceRequest>, Diagnostic> {
        let mut marketplaces: Vec<MarketplaceRequest> = Vec::new();
        for (table, span) in self.tables_of("marketplace", item)? {
            let marketplace = self.marketplace(table, span.clone())?;
            if marketplaces.iter().any(|m| m.name == marketplace.name) {
                return Err(self.error(
                    value_span(table, "name").or(span),
                    format!(
                        "marketplace `{}` is declared twice; give each `[[marketplace]]` its own `name`",
                        marketplace.name
                    ),
                ));
            }
            marketplaces.push(marketplace);
        }
        Ok(marketplaces)
    }

    /// Refuses a `PLUGIN@MARKETPLACE` request whose marketplace no `[[marketplace]]`
    /// declares.
    fn check_marketplace_declared(
        &self,
        table: &dyn TableLike,
        plugin: &PluginRequest,
        marketplaces: &[MarketplaceRequest],
    ) -> Result<(), Diagnostic> {
        let Some(marketplace) = plugin.parsed_source().marketplace() else {
            return Ok(());
        };
        if marketplaces.iter().any(|m| m.name == marketplace) {
            return Ok(());
        }
        let declared: Vec<String> = marketplaces
            .iter()
            .map(|m| format!("`{}`", m.name))
            .collect();
        let near =
            crate::suggest::nearest(marketplace, marketplaces.iter().map(|m| m.name.as_str()));
        if let Some(meant) = near.first() {
            let shown = plugin.display_source();
            let name = shown.rsplit_once('@').map_or(shown.as_str(), |(p, _)| p);
            return Err(self.error(
                value_span(table, "source"),
                format!(
                    "`{shown}` names marketplace `{marketplace}`, which no `[[marketplace]]` declares; did you mean `{name}@{meant}`?"
                ),
            ));
        }
        Err(self.error(
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
        ))
    }
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
        let auto_load = self.auto_load(table)?;
        MarketplaceRequest::new(
            &name,
            &source,
            self.string(table, "ref")?.as_deref(),
            self.string(table, "repo_path")?.as_deref(),
        )
        .map(|m| m.at_line(line).auto_loading(auto_load))
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
        if let Some((key, _)) = table.iter().find(|(key, _)| !known.contains(key)) {
            return Err(self.error(
                table.key(key).and_then(Key::span),
                unknown_key(key, known, section),
            ));
        }
        let Some((source_key, source_item)) = table.get_key_value("source") else {
            let typo = table
                .iter()
                .map(|(key, _)| key)
                .find(|key| crate::suggest::close(key, "source"));
            let hint = typo.map_or(String::new(), |key| {
                format!(" (`{key}` is not a key: did you mean `source`?)")
            });
            return Err(self.error(span, format!("{section} {entry}has no `source`{hint}")));
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

    /// `auto_load = true | false | ["NAME", …]`, as the SDK's `MarketplaceRegistration`.
    fn auto_load(&self, table: &dyn TableLike) -> Result<AutoLoad, Diagnostic> {
        let Some(item) = table.get("auto_load") else {
            return Ok(AutoLoad::Nothing);
        };
        if let Some(on) = item.as_bool() {
            return Ok(if on {
                AutoLoad::Everything
            } else {
                AutoLoad::Nothing
            });
        }
        let names = item.as_array().and_then(|list| {
            list.iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        });
        match names {
            Some(names) => Ok(AutoLoad::only(names)),
            None => Err(self.error(
                item.span(),
                format!(
                    "`auto_load` is `true` (every plugin and standalone skill the catalog lists), `false`, or a list of their names; found {}",
                    item.type_name()
                ),
            )),
        }
    }

    /// `exclude-newer = "7 days"` (or a date, or an RFC 3339 instant).
    fn exclude_newer(&self, item: &Item) -> Result<ExcludeNewer, Diagnostic> {
        let Some(text) = item.as_str() else {
            return Err(self.error(
                item.span(),
                format!(
                    "`exclude-newer` must be a string such as \"7 days\" or \"2026-11-01\", found {}",
                    item.type_name()
                ),
            ));
        };
        ExcludeNewer::parse(text)
            .map_err(|why| self.error(item.span(), format!("`exclude-newer`: {why}")))
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

/// Keys other tools use for what berth spells otherwise: Cargo's and uv's git keys, npm's
/// and Claude Code's.
const SYNONYMS: [(&str, &str); 9] = [
    ("tag", "ref"),
    ("branch", "ref"),
    ("rev", "ref"),
    ("commit", "ref"),
    ("subdirectory", "repo_path"),
    ("subdir", "repo_path"),
    ("path", "repo_path"),
    ("url", "source"),
    ("git", "source"),
];

/// The key of `known` that `key` was probably meant to be: a spelling with `-` for `_`, a
/// key other tools use for it, or one a typo away.
fn meant<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let synonym = SYNONYMS
        .iter()
        .find(|(other, _)| *other == key)
        .and_then(|(_, ours)| known.iter().find(|k| *k == ours));
    known
        .iter()
        .find(|k| k.replace('_', "-") == key || k.replace('-', "_") == key)
        .or(synonym)
        .or_else(|| {
            crate::suggest::nearest(key, known.iter().copied())
                .first()
                .and_then(|n| known.iter().find(|k| *k == n))
        })
        .copied()
}

/// An unknown key in an entry: what it is, what was probably meant, every key there is.
fn unknown_key(key: &str, known: &[&str], section: &str) -> String {
    let keys: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    let hint = meant(key, known).map_or(String::new(), |k| format!("; did you mean `{k}`?"));
    format!(
        "unknown key `{key}` in {section}{hint} (the keys are {})",
        keys.join(", ")
    )
}

/// An unknown top-level key or table: `[[plugins]]` is a typo of `[[plugin]]`, not an
/// empty manifest.
fn unknown_top_level(key: &str, item: &Item) -> String {
    const TOP: [&str; 4] = ["plugin", "marketplace", "agent", EXCLUDE_NEWER];
    let written = match item {
        Item::ArrayOfTables(_) => format!("[[{key}]]"),
        Item::Table(_) => format!("[{key}]"),
        _ => key.to_owned(),
    };
    let singular = key.strip_suffix('s').filter(|k| TOP.contains(k));
    let hint = singular
        .or_else(|| meant(key, &TOP))
        .map_or(String::new(), |k| {
            let shown = match (k, item) {
                ("plugin" | "marketplace", _) => format!("[[{k}]]"),
                ("agent", _) => "[agent]".to_owned(),
                _ => k.to_owned(),
            };
            format!("; did you mean `{shown}`?")
        });
    format!(
        "unknown {} `{written}`{hint} (a manifest holds `[[plugin]]` and `[[marketplace]]` tables, an optional `[agent]` and `exclude-newer`)",
        if matches!(item, Item::Value(_)) {
            "key"
        } else {
            "table"
        }
    )
}
