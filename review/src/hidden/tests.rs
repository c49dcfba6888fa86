use super::{Finding, MAX_FINDINGS_PER_FILE, Place, Severity, scan_file, scan_plugin, scan_text};

fn summary(findings: &[Finding]) -> Vec<(&str, usize, usize, String, Severity, Place)> {
    findings
        .iter()
        .map(|f| {
            let label = f.code_point_label();
            (
                f.file.as_str(),
                f.line,
                f.column,
                label,
                f.severity,
                f.place,
            )
        })
        .collect()
}

fn short(findings: &[Finding]) -> Vec<(usize, usize, String, Severity)> {
    findings
        .iter()
        .map(|f| (f.line, f.column, f.code_point_label(), f.severity))
        .collect()
}

#[test]
fn text_positions_in_code_points() {
    assert_eq!(
        scan_text("\u{FEFF}ok\né x\u{202E}y\nz\u{200B}\u{FEFF}"),
        [(2, 4, '\u{202E}'), (3, 2, '\u{200B}'), (3, 3, '\u{FEFF}')]
    );
    assert!(scan_text("plain\ntext é — “quoted” ½\r\nwindows\r\n").is_empty());
    assert_eq!(scan_text("a\rb\x1b[2K"), [(1, 2, '\r'), (1, 4, '\u{1b}')]);
}

#[test]
fn runs_selectors_and_their_bases() {
    let critical = |text: &str| {
        scan_file("a.md", text.as_bytes())
            .iter()
            .map(|f| (f.column, f.severity))
            .collect::<Vec<_>>()
    };
    // An emoji's presentation selector, a keycap, a ZWJ sequence: one warning for the
    // joiner, as before.
    assert!(critical("ok \u{26A0}\u{FE0F} #\u{FE0F}\u{20E3} 中\u{E0100}").is_empty());
    assert_eq!(
        critical("\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}"),
        [(3, Severity::Warning)]
    );
    // Two selectors after one character carry data.
    assert_eq!(
        critical("x\u{E0163}\u{E0175}"),
        [(2, Severity::Critical), (3, Severity::Critical)]
    );
    // A selector after a space has nothing to vary.
    assert_eq!(critical("x \u{FE0F}"), [(3, Severity::Warning)]);
    // Invisible characters in a row, and a selector and joiners alternating.
    assert_eq!(
        critical("a\u{2062}\u{2062}b"),
        [(2, Severity::Critical), (3, Severity::Critical)]
    );
    assert_eq!(
        critical("a\u{FE0F}\u{200B}\u{FE0F}\u{200B}"),
        [
            (3, Severity::Critical),
            (4, Severity::Critical),
            (5, Severity::Critical)
        ]
    );
    // A byte-order mark starts a file; it is no base and no member of a run.
    assert_eq!(critical("\u{FEFF}\u{200B}x"), [(2, Severity::Warning)]);
}

#[test]
fn lossy_decoding_reports_the_bytes_and_scans_the_rest() {
    let mut bytes = "line\nRun \u{202E} x\n".as_bytes().to_vec();
    bytes.extend_from_slice(b"\xff\xfe tail \xe2\x80");
    assert_eq!(
        short(&scan_file("s.md", &bytes)),
        [
            (2, 5, "U+202E".to_owned(), Severity::Critical),
            (3, 1, "U+FFFD".to_owned(), Severity::Warning),
        ]
    );
    // Binary by a NUL, unless a text format.
    let mut blob = b"\x89PNG\r\n\x1a\n\0\0".to_vec();
    blob.extend_from_slice("\u{202E}".as_bytes());
    assert!(scan_file("icon.png", &blob).is_empty());
    assert_eq!(scan_file("icon.md", &blob).len(), 5);
}

#[test]
fn a_flood_is_capped_and_keeps_its_first_critical_finding() {
    let mut text = "\u{200B} ".repeat(5 * MAX_FINDINGS_PER_FILE);
    text.push_str(&"\0".repeat(1 << 20));
    text.push('\u{202E}');
    let found = scan_file("a.md", text.as_bytes());
    assert_eq!(found.len(), MAX_FINDINGS_PER_FILE + 1);
    assert_eq!(found[0].code_point_label(), "U+200B");
    assert_eq!(found[MAX_FINDINGS_PER_FILE].code_point_label(), "U+202E");
    // A row of a million invisible characters is one critical row, its first listed.
    let row = format!("x{}y", "\u{2062}".repeat(1 << 20));
    let found = scan_file("b.md", row.as_bytes());
    assert_eq!(found.len(), MAX_FINDINGS_PER_FILE);
    assert!(found.iter().all(|f| f.severity == Severity::Critical));
    assert!(
        found[0]
            .what
            .contains("one of 1048576 invisible characters in a row")
    );
}

#[test]
fn escapes_are_reported_where_they_are_written() {
    let json = r#"{"a": "x\u202ey", "b\udb40\udc41": "ok\r\n", "c": "\u001b[2K\r"}"#;
    let at = |needle: &str| json.find(needle).expect("needle") + 1;
    assert_eq!(
        short(&scan_file("hooks/hooks.json", json.as_bytes())),
        [
            (1, at(r"\u202e"), "U+202E".to_owned(), Severity::Critical),
            (1, at(r"\udb40"), "U+E0041".to_owned(), Severity::Critical),
            (1, at(r"\u001b"), "U+001B".to_owned(), Severity::Critical),
            (1, at(r#"\r""#), "U+000D".to_owned(), Severity::Critical),
        ]
    );
    let found = scan_file("x.json", br#"{"a": "\u202e"}"#);
    assert_eq!(found[0].place, Place::Escape);
    assert!(found[0].what.ends_with("written as an escape"), "{found:?}");
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
    // Binary (a NUL) holding the bytes of U+202E: its content is not text.
    fs_err::write(d.join("blob.bin"), b"\0\xff\xfe\xe2\x80\xae").expect("write");
    fs_err::create_dir_all(d.join("docs/s\u{202E}DM.evil")).expect("mkdir");
    fs_err::write(d.join("docs/read\u{200B}me.md"), "x").expect("write");
    std::os::unix::fs::symlink(d.join("tag.md"), d.join("link\u{2060}.md")).expect("symlink");
    let findings = scan_plugin(d).expect("scan");
    use Place::{Name, Text};
    use Severity::{Critical, Warning};
    assert_eq!(
        summary(&findings),
        [
            ("bom.md", 1, 7, "U+FEFF".to_owned(), Warning, Text),
            (
                "docs/read\u{200B}me.md",
                0,
                10,
                "U+200B".to_owned(),
                Warning,
                Name
            ),
            (
                "docs/s\u{202E}DM.evil",
                0,
                7,
                "U+202E".to_owned(),
                Critical,
                Name
            ),
            ("link\u{2060}.md", 0, 5, "U+2060".to_owned(), Warning, Name),
            (
                "skills/a/SKILL.md",
                2,
                10,
                "U+202E".to_owned(),
                Critical,
                Text
            ),
            ("tag.md", 1, 2, "U+E0041".to_owned(), Critical, Text),
            ("tag.md", 1, 4, "U+200B".to_owned(), Warning, Text),
        ]
    );
    let json = serde_json::to_value(&findings[2]).expect("json");
    assert_eq!(json["severity"], "critical");
    assert_eq!(json["place"], "name");
    assert_eq!(json["class"], "bidi");
}
