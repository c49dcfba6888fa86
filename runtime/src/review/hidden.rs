//! Hidden Unicode in a plugin's text files: characters that make text read differently
//! from what a model or a reviewer sees (bidirectional overrides, tag characters,
//! zero-width characters).

use std::path::Path;

use serde::Serialize;

use super::walk::regular_files;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Reorders or hides text: bidirectional controls, tag characters.
    Critical,
    /// Invisible but inert on its own: zero-width characters, a byte-order mark after the
    /// start of a file.
    Warning,
}

/// One hidden character in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file, relative to the plugin's folder, with forward slashes.
    pub file: String,
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1, counted in Unicode code points.
    pub column: usize,
    /// The character.
    pub code_point: u32,
    /// How much it matters.
    pub severity: Severity,
    /// What kind of character it is.
    pub what: &'static str,
}

impl Finding {
    /// The character as `U+202E` (at least four hex digits, upper case).
    pub fn code_point_label(&self) -> String {
        format!("U+{:04X}", self.code_point)
    }
}

/// The severity of `c` and what it is, if it is a hidden character. A byte-order mark is
/// always classified; [`scan_text`] exempts one that starts the text.
pub fn classify(c: char) -> Option<(Severity, &'static str)> {
    match c {
        '\u{202A}'..='\u{202E}' => {
            Some((Severity::Critical, "bidirectional embedding or override"))
        }
        '\u{2066}'..='\u{2069}' => Some((Severity::Critical, "bidirectional isolate")),
        '\u{E0000}'..='\u{E007F}' => Some((Severity::Critical, "tag character")),
        '\u{200B}'..='\u{200D}' | '\u{2060}' => Some((Severity::Warning, "zero-width character")),
        '\u{FEFF}' => Some((
            Severity::Warning,
            "byte-order mark after the start of the file",
        )),
        _ => None,
    }
}

/// The hidden characters of `text` as (line, column, character), lines and columns from
/// 1, columns in code points; a byte-order mark that starts the text is not one.
pub fn scan_text(text: &str) -> Vec<(usize, usize, char)> {
    let mut found = Vec::new();
    let (mut line, mut column) = (1, 0);
    for (i, c) in text.chars().enumerate() {
        if c == '\n' {
            line += 1;
            column = 0;
            continue;
        }
        column += 1;
        if classify(c).is_some() && !(i == 0 && c == '\u{FEFF}') {
            found.push((line, column, c));
        }
    }
    found
}

/// Whether `bytes` may hold a hidden character: every one is encoded in UTF-8 with a lead
/// byte of 0xE2 (U+2000 block), 0xEF (U+FEFF) or 0xF3 (tags). Most files have none of
/// these, and skip decoding.
fn may_hide(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| matches!(b, 0xE2 | 0xEF | 0xF3))
}

/// The hidden characters of every regular file below `entry` (symlinks skipped, files that
/// are not UTF-8 skipped), sorted by file, line and column.
pub fn scan_plugin(entry: &Path) -> std::io::Result<Vec<Finding>> {
    let mut findings = Vec::new();
    for file in regular_files(entry)? {
        let bytes = fs_err::read(&file.path)?;
        if !may_hide(&bytes) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        for (line, column, c) in scan_text(text) {
            let Some((severity, what)) = classify(c) else {
                continue;
            };
            findings.push(Finding {
                file: file.rel.clone(),
                line,
                column,
                code_point: u32::from(c),
                severity,
                what,
            });
        }
    }
    // Files come sorted and each file's findings in text order.
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_positions_in_code_points() {
        assert_eq!(
            scan_text("\u{FEFF}ok\né x\u{202E}y\nz\u{200B}\u{FEFF}"),
            [(2, 4, '\u{202E}'), (3, 2, '\u{200B}'), (3, 3, '\u{FEFF}')]
        );
        assert!(scan_text("plain\ntext é — “quoted” ½").is_empty());
    }

    #[test]
    fn plugin_scan() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        fs_err::create_dir_all(d.join("skills/a")).expect("mkdir");
        fs_err::write(
            d.join("skills/a/SKILL.md"),
            "line one\nsay “hi” \u{202E}evil\n",
        )
        .expect("write");
        fs_err::write(d.join("tag.md"), "a\u{E0041}b\u{200B}").expect("write");
        fs_err::write(d.join("bom.md"), "\u{FEFF}start\u{FEFF}").expect("write");
        fs_err::write(d.join("clean.md"), "nothing here\n").expect("write");
        // Invalid UTF-8 holding the bytes of U+202E: skipped as binary.
        fs_err::write(d.join("blob.bin"), b"\xff\xfe\xe2\x80\xae").expect("write");
        std::os::unix::fs::symlink(d.join("tag.md"), d.join("link.md")).expect("symlink");
        let findings = scan_plugin(d).expect("scan");
        let summary: Vec<(&str, usize, usize, String, Severity)> = findings
            .iter()
            .map(|f| {
                let label = f.code_point_label();
                (f.file.as_str(), f.line, f.column, label, f.severity)
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("bom.md", 1, 7, "U+FEFF".to_owned(), Severity::Warning),
                (
                    "skills/a/SKILL.md",
                    2,
                    10,
                    "U+202E".to_owned(),
                    Severity::Critical
                ),
                ("tag.md", 1, 2, "U+E0041".to_owned(), Severity::Critical),
                ("tag.md", 1, 4, "U+200B".to_owned(), Severity::Warning),
            ]
        );
        assert_eq!(
            serde_json::to_value(&findings[1]).expect("json")["severity"],
            "critical"
        );
    }
}
