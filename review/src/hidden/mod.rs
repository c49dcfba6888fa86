//! Hidden Unicode in a plugin's files and names: characters that make text read differently
//! from what a model or a reviewer sees (the classes of `chars.rs`), found in the text as it
//! is written, in the strings JSON, YAML and TOML decode from escapes, and in every file and
//! folder name.

use std::path::Path;

use serde::Serialize;

pub(crate) use super::chars::Severity;
use super::chars::{Class, Hidden, classify, is_base, may_hide};
use super::literals::{Decoded, Syntax, for_each_string};
use super::walk::walk_entry;

/// The version of what this scan finds. A store entry found clean is remembered with it
/// (`verdict.rs`), so a change to the classes, the formats decoded or the rules below
/// must bump it: entries remembered under an older version are scanned again.
pub const SCANNER_VERSION: u32 = 2;

/// Where a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// In the file's text, as written.
    Text,
    /// Written as an escape (`\u202e`, `\U000E0041`, `\e`) in a JSON, YAML or TOML string
    /// (a markdown file's front matter included), which its reader decodes; the line and
    /// column are the escape's.
    Escape,
    /// In the file's or folder's name: `line` is 0 and `column` counts the path's code
    /// points.
    Name,
}

/// One hidden character in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file (or folder), relative to the plugin's folder, with forward slashes.
    pub file: String,
    /// The line, from 1 (0 for a name).
    pub line: usize,
    /// The column, from 1, counted in Unicode code points.
    pub column: usize,
    /// The character (U+FFFD for bytes that are not UTF-8).
    pub code_point: u32,
    /// How much it matters.
    pub severity: Severity,
    /// What kind of character it is.
    pub class: Class,
    /// Where it is: text, escape or name.
    pub place: Place,
    /// What it is, for people.
    pub what: String,
}

impl Finding {
    /// The character as `U+202E` (at least four hex digits, upper case).
    pub fn code_point_label(&self) -> String {
        format!("U+{:04X}", self.code_point)
    }
}

/// At most this many findings are listed per file: the first ones, and the first critical
/// one if it comes later. A file of a million invisible characters is news once, not a
/// million lines (and a million findings would not fit in memory).
pub const MAX_FINDINGS_PER_FILE: usize = 100;
/// At most this many per plugin, by the same rule.
pub const MAX_FINDINGS_PER_PLUGIN: usize = 1000;

/// A hidden character found in a sequence, before its place is known: the byte offset of
/// what to point at, the character and its judgement.
#[derive(Debug)]
struct Spot {
    at: usize,
    c: char,
    class: Class,
    severity: Severity,
    what: &'static str,
    /// How many invisible characters stand in its row, when more than one.
    row: usize,
}

impl Spot {
    fn new(at: usize, c: char, h: Hidden) -> Self {
        Self {
            at,
            c,
            class: h.class,
            severity: h.severity,
            what: h.what,
            row: 0,
        }
    }

    /// What it is, for people, where it is.
    fn describe(&self, place: Place) -> String {
        let mut what = if self.row > 1 {
            let name = if self.class == Class::VariationSelector {
                "variation selector"
            } else {
                self.what
            };
            format!(
                "{name}, one of {} invisible characters in a row (they can carry hidden data)",
                self.row
            )
        } else {
            self.what.to_owned()
        };
        match place {
            Place::Text => {}
            Place::Escape => what.push_str(", written as an escape"),
            Place::Name => what.push_str(" in a file or folder name"),
        }
        what
    }
}

/// Findings kept under a limit (see [`MAX_FINDINGS_PER_FILE`]).
#[derive(Debug)]
struct Capped<T> {
    kept: Vec<T>,
    limit: usize,
    critical: bool,
}

impl<T> Capped<T> {
    fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            limit,
            critical: false,
        }
    }

    fn push(&mut self, item: T, severity: Severity) {
        let first_critical = severity == Severity::Critical && !self.critical;
        if self.kept.len() < self.limit || first_critical {
            self.critical |= severity == Severity::Critical;
            self.kept.push(item);
        }
    }
}

/// The invisible characters and variation selectors in a row being read: how many, the
/// character before them, and the first few.
#[derive(Debug, Default)]
struct Row {
    before: Option<char>,
    count: usize,
    first: Vec<Decoded>,
}

impl Row {
    fn push(&mut self, item: Decoded, before: Option<char>) {
        if self.count == 0 {
            self.before = before;
        }
        self.count += 1;
        // Enough to report the most a file lists, and the one that decides the first.
        if self.first.len() <= MAX_FINDINGS_PER_FILE {
            self.first.push(item);
        }
    }

    /// Reports the row and empties it: one variation selector right after a visible
    /// character picks its glyph and is none; two or more left are critical.
    fn flush(&mut self, found: &mut impl FnMut(Spot)) {
        let selector = |c: char| classify(c).is_some_and(|h| h.class == Class::VariationSelector);
        let mut members = self.first.as_slice();
        let mut count = self.count;
        if let [(_, first), rest @ ..] = members
            && selector(*first)
            && self.before.is_some_and(is_base)
            && (count == 1 || rest.first().is_some_and(|(_, next)| !selector(*next)))
        {
            members = rest;
            count -= 1;
        }
        for (at, c) in members {
            let (Some(at), Some(h)) = (at, classify(*c)) else {
                continue;
            };
            let mut spot = Spot::new(*at, *c, h);
            if count > 1 {
                spot.severity = Severity::Critical;
                spot.row = count;
            }
            found(spot);
        }
        self.count = 0;
        self.first.clear();
    }
}

/// Judges `chars` (each with the byte offset to report it at, or `None` for one found by
/// another pass), calling `found` for each hidden one. The context rules: a carriage
/// return before a line feed is a line end; a byte-order mark that starts a file
/// (`file_start`) is none; one variation selector right after a visible character picks
/// its glyph (emoji, ideographs) and is none; invisible characters and variation selectors
/// two or more in a row are critical, as they can carry data.
fn judge(chars: impl Iterator<Item = Decoded>, file_start: bool, found: &mut impl FnMut(Spot)) {
    let mut chars = chars.peekable();
    let mut previous: Option<char> = None;
    let mut row = Row::default();
    let mut first = true;
    while let Some((at, c)) = chars.next() {
        let hidden = classify(c);
        match hidden.map(|h| h.class) {
            Some(Class::Invisible | Class::VariationSelector) => {
                if !(first && file_start && c == '\u{FEFF}') {
                    row.push((at, c), previous);
                }
            }
            _ => {
                row.flush(found);
                let line_end = c == '\r' && chars.peek().is_some_and(|(_, next)| *next == '\n');
                if let (Some(h), Some(at), false) = (hidden, at, line_end) {
                    found(Spot::new(at, c, h));
                }
            }
        }
        previous = Some(c);
        first = false;
    }
    row.flush(found);
}

/// The hidden characters of `text` as written, as (line, column, character), lines and
/// columns from 1, columns in code points; `text` is a whole file (a byte-order mark that
/// starts it is not one).
pub fn scan_text(text: &str) -> Vec<(usize, usize, char)> {
    let mut spots = Vec::new();
    judge(
        text.char_indices().map(|(i, c)| (Some(i), c)),
        true,
        &mut |s| spots.push(s),
    );
    let places = positions(text, spots.iter().map(|s| s.at));
    spots
        .iter()
        .zip(places)
        .map(|(s, (line, column))| (line, column, s.c))
        .collect()
}

/// The (line, column) of each byte offset of `offsets` (ascending) in `text`, in one walk.
fn positions(text: &str, offsets: impl Iterator<Item = usize>) -> Vec<(usize, usize)> {
    let (mut line, mut column, mut from) = (1, 1, 0);
    let mut out = Vec::new();
    for at in offsets {
        for c in text[from..at].chars() {
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        from = at;
        out.push((line, column));
    }
    out
}

/// A file holding a NUL in its first 8 KiB is binary (as git and ripgrep decide), unless it
/// is in a format berth or a harness reads as text.
fn is_binary(rel: &str, bytes: &[u8]) -> bool {
    const TEXT: [&str; 9] = [
        ".md",
        ".markdown",
        ".json",
        ".jsonc",
        ".yaml",
        ".yml",
        ".toml",
        ".txt",
        ".mdc",
    ];
    let rel = rel.to_ascii_lowercase();
    bytes[..bytes.len().min(8192)].contains(&0) && !TEXT.iter().any(|ext| rel.ends_with(ext))
}

/// The findings of one file's content, at most [`MAX_FINDINGS_PER_FILE`]: `rel` is its
/// path (which names its format).
pub fn scan_file(rel: &str, bytes: &[u8]) -> Vec<Finding> {
    let syntax = Syntax::of(rel);
    let escapes = syntax.is_some() && bytes.contains(&b'\\');
    let valid = std::str::from_utf8(bytes).ok();
    if valid.is_some() && !escapes && !may_hide(bytes) || is_binary(rel, bytes) {
        return Vec::new();
    }
    let (text, not_utf8) = match valid {
        Some(text) => (std::borrow::Cow::Borrowed(text), None),
        None => {
            let (text, first) = lossy(bytes);
            (std::borrow::Cow::Owned(text), first)
        }
    };
    let mut spots = Capped::new(MAX_FINDINGS_PER_FILE);
    if let Some(at) = not_utf8 {
        spots.push((not_utf8_spot(at), Place::Text), Severity::Warning);
    }
    judge(
        text.char_indices().map(|(i, c)| (Some(i), c)),
        true,
        &mut |s| {
            let severity = s.severity;
            spots.push((s, Place::Text), severity);
        },
    );
    if let Some(syntax) = syntax.filter(|_| escapes) {
        for_each_string(&text, syntax, &mut |string| {
            judge(string, false, &mut |s| {
                let severity = s.severity;
                spots.push((s, Place::Escape), severity);
            });
        });
    }
    let mut spots = spots.kept;
    spots.sort_by_key(|(s, place)| (s.at, *place));
    let places = positions(&text, spots.iter().map(|(s, _)| s.at));
    spots
        .into_iter()
        .zip(places)
        .map(|((s, place), (line, column))| Finding {
            file: rel.to_owned(),
            line,
            column,
            code_point: u32::from(s.c),
            severity: s.severity,
            class: s.class,
            place,
            what: s.describe(place),
        })
        .collect()
}

fn not_utf8_spot(at: usize) -> Spot {
    Spot {
        at,
        c: '\u{FFFD}',
        class: Class::NotUtf8,
        severity: Severity::Warning,
        what: "bytes that are not UTF-8 (read as U+FFFD)",
        row: 0,
    }
}

/// `bytes` decoded with U+FFFD for what is not UTF-8, and the byte offset in the result of
/// the first replacement.
fn lossy(bytes: &[u8]) -> (String, Option<usize>) {
    let mut text = String::with_capacity(bytes.len());
    let mut first = None;
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            first.get_or_insert(text.len());
            text.push('\u{FFFD}');
        }
    }
    (text, first)
}

/// The findings of one path's last component (`rel` is the whole path; `utf8` whether its
/// bytes were UTF-8).
fn scan_name(rel: &str, utf8: bool) -> Vec<Finding> {
    let start = rel.rfind('/').map_or(0, |i| i + 1);
    let mut spots = Vec::new();
    if !utf8 {
        spots.push(not_utf8_spot(rel.find('\u{FFFD}').unwrap_or(start)));
    }
    if may_hide(&rel.as_bytes()[start..]) {
        judge(
            rel[start..]
                .char_indices()
                .map(|(i, c)| (Some(start + i), c)),
            false,
            &mut |s| spots.push(s),
        );
    }
    spots
        .into_iter()
        .map(|s| Finding {
            file: rel.to_owned(),
            line: 0,
            column: rel[..s.at].chars().count() + 1,
            code_point: u32::from(s.c),
            severity: s.severity,
            class: s.class,
            place: Place::Name,
            what: s.describe(Place::Name),
        })
        .collect()
}

/// The hidden characters of every path below `entry` (files, folders and symlinks by name)
/// and of every regular file's content (symlinks are not followed; a binary file's content
/// is not read as text), sorted by path, line and column; at most
/// [`MAX_FINDINGS_PER_FILE`] per file and [`MAX_FINDINGS_PER_PLUGIN`] in all.
pub fn scan_plugin(entry: &Path) -> std::io::Result<Vec<Finding>> {
    let walked = walk_entry(entry)?;
    let mut findings = Capped::new(MAX_FINDINGS_PER_PLUGIN);
    for name in &walked.names {
        for finding in scan_name(&name.rel, name.utf8) {
            let severity = finding.severity;
            findings.push(finding, severity);
        }
    }
    for file in &walked.files {
        let bytes = file.read()?;
        for finding in scan_file(&file.rel, &bytes) {
            let severity = finding.severity;
            findings.push(finding, severity);
        }
    }
    let mut findings = findings.kept;
    findings.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    Ok(findings)
}

#[cfg(test)]
mod tests;
