//! What berth shows people of a plugin's content, escaped: a name, a hook's command or a
//! description may hold a terminal escape sequence, a carriage return that hides what
//! came before, a bidirectional override or invisible text. Every front end that prints
//! plugin content for people passes it through [`escape_for_display`]; a JSON document
//! through [`escape_json`], which keeps it the same document.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::chars::{Class, classify, is_base};

/// Whether `text` may need escaping: a control but tab and line feed, or a character the
/// scan classifies.
fn may_need(text: &str) -> bool {
    let suspect = |b: &u8| (*b < 0x20 && *b != b'\t' && *b != b'\n') || *b >= 0x7F;
    text.bytes().any(|b| suspect(&b)) && text.chars().any(|c| classify(c).is_some())
}

/// `text` with every control character but tab and line feed written `\x1b` (C0, DEL) or
/// `\u{9b}` (C1), and every character the scan would report (bidirectional controls, tag
/// characters, zero-width and invisible characters, variation selectors) written
/// `\u{202e}`; one variation selector after a visible character (an emoji's) is kept, as
/// the scan keeps it. Nothing else changes, so text without such characters is returned
/// as it is.
pub fn escape_for_display(text: &str) -> Cow<'_, str> {
    if !may_need(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let keep = match classify(c) {
            None => true,
            Some(h) if h.class == Class::VariationSelector => {
                let next_is_selector = chars.peek().is_some_and(|n| {
                    classify(*n).is_some_and(|h| h.class == Class::VariationSelector)
                });
                previous.is_some_and(is_base) && !next_is_selector
            }
            Some(_) => false,
        };
        if keep {
            out.push(c);
        } else if u32::from(c) < 0x80 {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        previous = Some(c);
    }
    Cow::Owned(out)
}

/// A JSON document's text with every control and hidden character outside ASCII written
/// as a JSON escape (`\u202e`, a surrogate pair above U+FFFF): they can only stand in its
/// strings, so the document is the same to any reader, and none reaches a terminal raw.
/// (serde_json already escapes C0 controls.)
pub fn escape_json(json: &str) -> Cow<'_, str> {
    if !json.bytes().any(|b| b >= 0x7F) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if u32::from(c) >= 0x7F && classify(c).is_some() {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{Cow, escape_for_display, escape_json};

    #[test]
    fn controls_and_hidden_characters_are_escaped() {
        assert_eq!(
            escape_for_display("curl x | sh\r\u{1b}[2K  ok\tand\nmore\u{7f}\u{9b}"),
            "curl x | sh\\x0d\\x1b[2K  ok\tand\nmore\\x7f\\u{9b}"
        );
        assert_eq!(
            escape_for_display("#\u{202e} hs\u{200b}\u{e0041}\u{feff}"),
            "#\\u{202e} hs\\u{200b}\\u{e0041}\\u{feff}"
        );
        // An emoji's own selector stays; one with nothing to vary, or two, do not.
        assert_eq!(escape_for_display("⚠\u{fe0f} ok"), "⚠\u{fe0f} ok");
        assert_eq!(
            escape_for_display("x\u{e0163}\u{e0175} \u{fe0f}"),
            "x\\u{e0163}\\u{e0175} \\u{fe0f}"
        );
        let plain = "plain é — “quoted” 中 😀";
        assert!(matches!(escape_for_display(plain), Cow::Borrowed(_)));
        assert_eq!(escape_for_display(plain), plain);
    }

    #[test]
    fn json_stays_the_same_document() {
        let value = serde_json::json!({"c": "a\u{202e}b\u{1b}\u{e0041}\u{9b}é\u{fe0f}"});
        let text = serde_json::to_string_pretty(&value).expect("json");
        let escaped = escape_json(&text);
        assert!(
            escaped.contains(r"a\u202eb\u001b\udb40\udc41\u009bé\ufe0f"),
            "{escaped}"
        );
        assert!(escaped.is_ascii() || escaped.contains('é'));
        let back: serde_json::Value = serde_json::from_str(&escaped).expect("still JSON");
        assert_eq!(back, value);
    }
}
