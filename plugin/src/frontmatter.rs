//! Front matter as python-frontmatter (which the OpenHands SDK uses) reads it: a YAML block
//! between `---` lines at the top, or a JSON object whose first line is `{`.

use serde_json::{Map, Value};

/// A markdown file split into its front matter and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The front matter as JSON-like values (`{}` when there is none).
    pub meta: Map<String, Value>,
    /// The body, trimmed of surrounding whitespace.
    pub content: String,
}

/// Parses `text`. Line ends are normalised as Python's universal newlines do; a byte-order
/// mark is kept (the SDK then sees no front matter). Invalid YAML is an error.
pub fn parse(text: &str) -> Result<Document, String> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    for candidate in [text.as_str(), py_strip(&text)] {
        if let Some((fm, body)) = split_yaml(candidate) {
            let meta = yaml_mapping(fm)?;
            return Ok(Document {
                meta,
                content: py_strip(body).to_owned(),
            });
        }
        if let Some((fm, body)) = split_json(candidate) {
            let value: Value =
                serde_json::from_str(fm).map_err(|e| format!("invalid JSON front matter: {e}"))?;
            let meta = match value {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            return Ok(Document {
                meta,
                content: py_strip(body).to_owned(),
            });
        }
    }
    Ok(Document {
        meta: Map::new(),
        content: py_strip(&text).to_owned(),
    })
}

/// Parses `text` as the most lenient harness berth supports reads front matter (Claude
/// Code strips one leading byte-order mark first): what the review reads, so that a mark
/// cannot hide front matter a harness applies. The OpenHands set keeps [`parse`].
pub fn parse_lenient(text: &str) -> Result<Document, String> {
    parse(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// The body of `text` as [`parse`] gives it, its front matter not read (for a file whose
/// front matter was read before, and parsed).
pub fn body(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    for candidate in [text.as_str(), py_strip(&text)] {
        if let Some((_, body)) = split_yaml(candidate).or_else(|| split_json(candidate)) {
            return py_strip(body).to_owned();
        }
    }
    py_strip(&text).to_owned()
}

/// Python's `str.strip()`: Unicode whitespace, which also includes `\x1c`..`\x1f`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// A boundary line: three or more dashes, then only whitespace.
fn is_boundary(line: &str) -> bool {
    let dashes = line.len() - line.trim_start_matches('-').len();
    dashes >= 3 && line[dashes..].trim().is_empty()
}

/// `---\n<fm>\n---\n<body>` with the first boundary on the first line.
fn split_yaml(text: &str) -> Option<(&str, &str)> {
    let first_end = text.find('\n').unwrap_or(text.len());
    if !is_boundary(&text[..first_end]) {
        return None;
    }
    let mut offset = first_end + 1;
    while offset <= text.len() {
        let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
        if is_boundary(&text[offset..end]) {
            let fm = &text[(first_end + 1).min(offset)..offset];
            let body = if end < text.len() {
                &text[end + 1..]
            } else {
                ""
            };
            return Some((fm, body));
        }
        if end >= text.len() {
            break;
        }
        offset = end + 1;
    }
    None
}

/// A JSON front matter block: first line exactly `{`, ending at a line exactly `}`.
fn split_json(text: &str) -> Option<(&str, &str)> {
    if !text.starts_with("{\n") && text != "{" {
        return None;
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end_matches('\n') == "}" {
            return Some((&text[..offset], &text[offset..]));
        }
    }
    None
}

/// The most `[` and `{` YAML front matter may hold. The YAML parser's time grows with the
/// square of flow nesting depth (150,000 levels take minutes), and a plugin is someone
/// else's file: the count of openers, quoted or not, bounds that depth soundly (a
/// quote-aware scan could be fooled), so parsing stays linear in the file's size. Real
/// front matter holds a handful; deeper than 128 levels fails to parse anyway.
pub const MAX_FLOW_OPENERS: usize = 1024;

fn yaml_mapping(fm: &str) -> Result<Map<String, Value>, String> {
    if fm.trim().is_empty() {
        return Ok(Map::new());
    }
    let openers = fm.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    if openers > MAX_FLOW_OPENERS {
        return Err(format!(
            "YAML front matter has {openers} `[` and `{{`, over berth's limit of {MAX_FLOW_OPENERS} (a bound on its nesting depth, which makes parsing slow); write lists and mappings in block style"
        ));
    }
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(fm).map_err(|e| format!("invalid YAML front matter: {e}"))?;
    match yaml_to_json(value) {
        Value::Object(map) => Ok(map),
        // A list or scalar front matter carries no fields, as in python-frontmatter.
        _ => Ok(Map::new()),
    }
}

/// YAML values as JSON values; non-string mapping keys become their Python `str()`.
pub fn yaml_to_json(value: serde_yaml_ng::Value) -> Value {
    use serde_yaml_ng::Value as Y;
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(Value::Null, Value::Number)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (crate::pystr::py_str(&yaml_to_json(k)), yaml_to_json(v)))
                .collect(),
        ),
        Y::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn yaml_front_matter_and_stripped_body() {
        let doc = parse("---\nname: x\ntriggers: [a, b]\n---\n\n# Body\n\n").expect("parse");
        assert_eq!(doc.meta["name"], "x");
        assert_eq!(doc.meta["triggers"], serde_json::json!(["a", "b"]));
        assert_eq!(doc.content, "# Body");
    }

    #[test]
    fn variants_python_frontmatter_accepts() {
        // CRLF, longer dashes, leading blank lines, no closing boundary, empty front matter.
        assert_eq!(
            parse("---\r\nname: c\r\n---\r\nbody\r\n")
                .expect("crlf")
                .meta["name"],
            "c"
        );
        assert_eq!(
            parse("-----  \nname: d\n----\nb").expect("dashes").meta["name"],
            "d"
        );
        assert_eq!(
            parse("\n\n---\nname: e\n---\nb").expect("leading").meta["name"],
            "e"
        );
        let open = parse("---\nname: f\nbody").expect("open");
        assert!(open.meta.is_empty());
        assert_eq!(open.content, "---\nname: f\nbody");
        assert!(parse("---\n---\nbody").expect("empty").meta.is_empty());
        assert_eq!(
            parse("{\n\"name\": \"j\"\n}\nbody").expect("json").meta["name"],
            "j"
        );
        assert!(parse("---\nname: [unclosed\n---\n").is_err());
        let bom = parse("\u{feff}---\nname: g\n---\nbody").expect("bom");
        assert!(
            bom.meta.is_empty(),
            "a BOM hides the front matter, as in the SDK"
        );
        let lenient = super::parse_lenient("\u{feff}---\r\nname: g\r\n---\r\nbody").expect("bom");
        assert_eq!(lenient.meta["name"], "g", "Claude Code strips the mark");
    }

    #[test]
    fn deeply_nested_flow_yaml_is_refused_before_it_is_parsed() {
        for fm in [
            "[".repeat(150_000),
            format!("a: \"{}\"", "[".repeat(150_000)),
        ] {
            let err = parse(&format!("---\n{fm}\n---\nbody")).expect_err("refused");
            assert!(
                err.contains("150000 `[` and `{`, over berth's limit of 1024"),
                "{err}"
            );
        }
        let nested = format!("a: {}1{}", "[".repeat(100), "]".repeat(100));
        let doc = parse(&format!("---\n{nested}\n---\nbody")).expect("100 levels parse");
        assert!(doc.meta["a"].is_array());
    }
}
