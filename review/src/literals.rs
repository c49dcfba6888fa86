//! The strings JSON, YAML and TOML decode from escapes: a file holding only ASCII
//! `\u202e` gives its reader a real U+202E. Each string is handed over as its characters,
//! those written as an escape with the byte offset of their backslash, so a finding points
//! at the escape.
//!
//! JSON and TOML are lexed exactly (a backslash means something only inside their
//! strings). YAML decodes escapes in double-quoted scalars only, and where one starts
//! depends on the grammar around it; rather than trust a partial parser, every `"` that
//! could start one (after a line's indentation, or after one of `:-?,[{`, blanks and node
//! properties) is taken as a start, up to the next `"` that no backslash escapes, each
//! start on its own (a wrong start cannot hide the next one). A double-quoted scalar
//! always starts at such a place, so none is missed; a quote in a block scalar or after
//! `a - ` in a plain one may be taken for one too, which can only report more.

/// A text format whose strings hold escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    Json,
    Yaml,
    Toml,
    /// Markdown: its front matter (YAML between `---` lines, or a JSON object).
    Markdown,
}

impl Syntax {
    /// The format a file's name says it has.
    pub(crate) fn of(rel: &str) -> Option<Self> {
        let name = rel.rsplit('/').next().unwrap_or(rel).to_ascii_lowercase();
        let ext = name.rsplit_once('.').map_or("", |(_, ext)| ext);
        match ext {
            "json" | "jsonc" => Some(Self::Json),
            "yaml" | "yml" => Some(Self::Yaml),
            "toml" => Some(Self::Toml),
            "md" | "markdown" | "mdc" => Some(Self::Markdown),
            _ => None,
        }
    }
}

/// One decoded character: the byte offset of the escape it was written as, or `None` when
/// it is written as itself.
pub(crate) type Decoded = (Option<usize>, char);

/// Calls `each` with every string of `text` that holds an escape, decoded character by
/// character (a string is never copied: a file may be one huge string).
pub(crate) fn for_each_string(text: &str, syntax: Syntax, each: &mut impl FnMut(Decoder<'_>)) {
    match syntax {
        Syntax::Json => json(text, 0, each),
        Syntax::Yaml => yaml(text, 0, each),
        Syntax::Toml => toml(text, each),
        Syntax::Markdown => match front_matter(text) {
            Some((start, end, Syntax::Json)) => json(&text[start..end], start, each),
            Some((start, end, _)) => yaml(&text[start..end], start, each),
            None => {}
        },
    }
}

/// The characters of one string, decoded: an iterator over [`Decoded`].
#[derive(Debug)]
pub(crate) struct Decoder<'a> {
    text: &'a str,
    at: usize,
    end: usize,
    base: usize,
}

impl Iterator for Decoder<'_> {
    type Item = Decoded;

    fn next(&mut self) -> Option<Decoded> {
        while self.at < self.end {
            let at = self.at;
            if self.text.as_bytes()[at] == b'\\' {
                let (c, len) = escape(&self.text[at + 1..self.end]);
                self.at += 1 + len;
                if let Some(c) = c {
                    return Some((Some(self.base + at), c));
                }
                continue;
            }
            let c = self.text[at..].chars().next().expect("inside the text");
            self.at += c.len_utf8();
            return Some((None, c));
        }
        None
    }
}

/// Where a markdown file's front matter is, and its format: YAML from a first line of
/// three or more dashes to the next such line (or the end), or a JSON object from a first
/// line `{` to a line `}` (or the end). A leading byte-order mark is skipped.
fn front_matter(text: &str) -> Option<(usize, usize, Syntax)> {
    let start = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
    let mut lines = text[start..].split_inclusive('\n');
    let first = lines.next()?.trim_end();
    let (syntax, is_end): (Syntax, fn(&str) -> bool) =
        if first.len() >= 3 && first.bytes().all(|b| b == b'-') {
            (Syntax::Yaml, |l| {
                l.len() >= 3 && l.bytes().all(|b| b == b'-')
            })
        } else if first == "{" {
            (Syntax::Json, |l| l == "}")
        } else {
            return None;
        };
    let mut offset = start
        + text[start..]
            .find('\n')
            .map_or(text.len() - start, |i| i + 1);
    let body = if syntax == Syntax::Json {
        start
    } else {
        offset
    };
    for line in lines {
        if is_end(line.trim_end()) {
            let end = if syntax == Syntax::Json {
                offset + line.len()
            } else {
                offset
            };
            return Some((body, end, syntax));
        }
        offset += line.len();
    }
    Some((body, text.len(), syntax))
}

/// JSON (comments of JSONC skipped): every string from its `"` to the next unescaped `"`.
fn json(text: &str, base: usize, each: &mut impl FnMut(Decoder<'_>)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = string(text, i + 1, b"\"", base, each),
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = line_end(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
            }
            _ => i += 1,
        }
    }
}

/// YAML: from every `"` that could start a double-quoted scalar.
fn yaml(text: &str, base: usize, each: &mut impl FnMut(Decoder<'_>)) {
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'"' && could_start(bytes, i) && !escaped(bytes, i) {
            string(text, i + 1, b"\"", base, each);
        }
    }
}

/// Whether a YAML node may start at byte `i`: after the line's indentation, or after an
/// indicator (`:`, `-`, `?`, `,`, `[`, `{`) and any blanks, with node properties (`!tag`,
/// `&anchor`) between. A quote inside a plain scalar (`say "hi"`) follows a word.
fn could_start(bytes: &[u8], i: usize) -> bool {
    let blank = |b: u8| matches!(b, b' ' | b'\t');
    let mut j = i;
    loop {
        while j > 0 && blank(bytes[j - 1]) {
            j -= 1;
        }
        // A byte-order mark may start the stream.
        if j == 0
            || bytes[..j] == *"\u{FEFF}".as_bytes()
            || matches!(
                bytes[j - 1],
                b'\n' | b'\r' | b':' | b'-' | b'?' | b',' | b'[' | b'{'
            )
        {
            return true;
        }
        if j == i {
            return false;
        }
        let token = bytes[..j]
            .iter()
            .rposition(|b| blank(*b) || matches!(b, b'\n' | b'\r'))
            .map_or(0, |p| p + 1);
        if !matches!(bytes[token], b'!' | b'&') {
            return false;
        }
        j = token;
    }
}

/// Whether the byte at `i` follows an odd number of backslashes.
fn escaped(bytes: &[u8], i: usize) -> bool {
    bytes[..i].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
}

/// TOML: basic strings (`"`, `"""`) decoded; literal strings (`'`, `'''`) and comments
/// skipped.
fn toml(text: &str, each: &mut impl FnMut(Decoder<'_>)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        i = if rest.starts_with(b"\"\"\"") {
            closing_quotes(bytes, string(text, i + 3, b"\"\"\"", 0, each), b'"')
        } else if rest.starts_with(b"'''") {
            let end = text[i + 3..]
                .find("'''")
                .map_or(bytes.len(), |e| i + 3 + e + 3);
            closing_quotes(bytes, end, b'\'')
        } else {
            match rest[0] {
                b'"' => string(text, i + 1, b"\"", 0, each),
                b'\'' => text[i + 1..]
                    .find(['\'', '\n'])
                    .map_or(bytes.len(), |e| i + 2 + e),
                b'#' => line_end(bytes, i),
                _ => i + 1,
            }
        };
    }
}

/// After a multi-line string's closing `"""` (or `'''`): up to two more quotes are its
/// content's last (`""""` ends a string whose content ends in `"`).
fn closing_quotes(bytes: &[u8], mut end: usize, quote: u8) -> usize {
    for _ in 0..2 {
        if bytes.get(end) == Some(&quote) {
            end += 1;
        }
    }
    end
}

fn line_end(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |e| i + e)
}

/// The string that starts at byte `from` of `text` and ends at `close` (or the end):
/// calls `each` with it, decoded, if it holds an escape. Returns the offset after its end.
fn string(
    text: &str,
    from: usize,
    close: &[u8],
    base: usize,
    each: &mut impl FnMut(Decoder<'_>),
) -> usize {
    let bytes = text.as_bytes();
    let mut any_escape = false;
    let mut i = from;
    // An escape never takes a quote but as itself (`\"`), so the end found here is the
    // decoder's.
    let (end, after) = loop {
        if i >= bytes.len() {
            break (bytes.len(), bytes.len());
        }
        if bytes[i..].starts_with(close) {
            break (i, i + close.len());
        }
        if bytes[i] == b'\\' {
            any_escape = true;
            i += 1 + escape(&text[i + 1..]).1;
        } else {
            i += 1;
        }
    };
    if any_escape {
        each(Decoder {
            text,
            at: from,
            end,
            base,
        });
    }
    after
}

/// The character the escape after a backslash stands for (`None` for a lone surrogate or
/// one no format knows), and how many bytes after the backslash it takes. The union of
/// JSON's, YAML's and TOML's escapes: a file's own reader accepts a subset.
fn escape(after: &str) -> (Option<char>, usize) {
    let hex = |digits: usize| -> Option<u32> {
        let s = after.get(1..=digits)?;
        if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok()
    };
    let Some(first) = after.chars().next() else {
        return (None, 0);
    };
    let simple = match first {
        'b' => Some('\u{8}'),
        'f' => Some('\u{C}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' | '\t' => Some('\t'),
        '0' => Some('\0'),
        'a' => Some('\u{7}'),
        'v' => Some('\u{B}'),
        'e' => Some('\u{1B}'),
        'N' => Some('\u{85}'),
        '_' => Some('\u{A0}'),
        'L' => Some('\u{2028}'),
        'P' => Some('\u{2029}'),
        _ => None,
    };
    if let Some(c) = simple {
        return (Some(c), 1);
    }
    let coded = match first {
        'x' => hex(2).map(|v| (v, 3)),
        'U' => hex(8).map(|v| (v, 9)),
        'u' => hex(4).map(|v| match v {
            // A high surrogate and a low one after it are one character.
            0xD800..=0xDBFF => match after.get(5..7).filter(|s| *s == "\\u").and(
                after
                    .get(7..11)
                    .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit())),
            ) {
                Some(low) => {
                    let low = u32::from_str_radix(low, 16).unwrap_or(0);
                    if (0xDC00..=0xDFFF).contains(&low) {
                        (0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00), 11)
                    } else {
                        (v, 5)
                    }
                }
                None => (v, 5),
            },
            v => (v, 5),
        }),
        _ => None,
    };
    match coded {
        Some((v, len)) => (char::from_u32(v), len),
        // Anything else stands for itself (`\"`, `\\`, `\/`, `\ `).
        None => (Some(first), first.len_utf8()),
    }
}

#[cfg(test)]
mod tests {
    use super::{Syntax, for_each_string};

    /// Every decoded string holding an escape, as (offset of each escape, character).
    fn escapes(text: &str, syntax: Syntax) -> Vec<Vec<(usize, char)>> {
        let mut out = Vec::new();
        for_each_string(text, syntax, &mut |s| {
            out.push(s.filter_map(|(at, c)| at.map(|at| (at, c))).collect());
        });
        out
    }

    #[test]
    fn json_escapes_surrogates_and_comments() {
        let text = r#"{"a\u202eb": "x\udb40\udc41\"y\\u202e", // "\u2066"
 "c": "\ud800z\r\n\u001b"}"#;
        let at = |needle: &str| text.find(needle).expect("needle");
        assert_eq!(
            escapes(text, Syntax::Json),
            [
                vec![(at(r"\u202e"), '\u{202E}')],
                vec![
                    (at(r"\udb40"), '\u{E0041}'),
                    (at(r#"\""#), '"'),
                    (at(r"\\"), '\\')
                ],
                vec![
                    (at(r"\r"), '\r'),
                    (at(r"\n"), '\n'),
                    (at(r"\u001b"), '\u{1B}')
                ],
            ]
        );
    }

    #[test]
    fn yaml_double_quoted_scalars_and_nothing_plain() {
        let text = "a: \"x \\u202e\"\nb: C:\\build\\e\nc: [\"\\U000E0041\", '\\e']\n- \"\\e\"\nd: Use \"C:\\bin\\x.exe\" now\ne: !!str &a \"\\x1b\"\nf: {\"g\":\"\\u2066\"}\n";
        let found: Vec<char> = escapes(text, Syntax::Yaml)
            .into_iter()
            .flatten()
            .map(|(_, c)| c)
            .collect();
        assert_eq!(
            found,
            ['\u{202E}', '\u{E0041}', '\u{1B}', '\u{1B}', '\u{2066}']
        );
        let bom = "\u{FEFF}\"k\\u202e\": v\n";
        assert_eq!(escapes(bom, Syntax::Yaml).len(), 1);
    }

    #[test]
    fn toml_basic_strings_only() {
        let text = "# \"\\u202e\"\na = '\\u202e'\nb = \"\\u2066\"\nc = '''\n\\e'''\nd = \"\"\"\nx\\U000E0041\"\"\"\ne = \"\"\"x\"\"\"\"\nf = \"\\u2067\"\n";
        let found: Vec<char> = escapes(text, Syntax::Toml)
            .into_iter()
            .flatten()
            .map(|(_, c)| c)
            .collect();
        assert_eq!(found, ['\u{2066}', '\u{E0041}', '\u{2067}']);
    }

    #[test]
    fn markdown_front_matter_only() {
        let text = "---\ndescription: \"\\u202e\"\n---\nBody \"\\u2066\"\n";
        let found = escapes(text, Syntax::Markdown);
        assert_eq!(
            found,
            [vec![(text.find('\\').expect("escape"), '\u{202E}')]]
        );
        let json = "{\n\"d\": \"\\u202e\"\n}\n\"\\u2066\"";
        assert_eq!(escapes(json, Syntax::Markdown).len(), 1);
        assert!(escapes("Body \"\\u202e\"", Syntax::Markdown).is_empty());
        assert_eq!(Syntax::of("skills/a/SKILL.md"), Some(Syntax::Markdown));
        assert_eq!(Syntax::of(".mcp.json"), Some(Syntax::Json));
        assert_eq!(Syntax::of("scripts/run.sh"), None);
    }
}
