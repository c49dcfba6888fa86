//! Which characters a reader cannot see, or a terminal acts on: the classes the scan
//! reports and every human output escapes. One table, so what `audit` finds and what
//! berth prints escaped never drift apart.

use serde::Serialize;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Reorders, hides or smuggles text, or drives a terminal: bidirectional controls, tag
    /// characters, invisible characters in a row, escape and C1 controls.
    Critical,
    /// Invisible but inert on its own: one zero-width character, one other control.
    Warning,
}

/// What kind of hidden character it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Bidirectional embeddings, overrides, isolates and marks: text shows in another
    /// order than it is read.
    Bidi,
    /// Unicode tag characters (U+E0000–U+E007F): invisible ASCII a model reads.
    Tag,
    /// Variation selectors: one after a character picks its glyph; several in a row carry
    /// data (one byte per selector).
    VariationSelector,
    /// Zero-width and invisible formatting characters (general category Cf, default
    /// ignorables, fillers and blanks).
    Invisible,
    /// C0 and C1 controls other than tab and line feed, and DEL.
    Control,
    /// Bytes that are not UTF-8 (read as U+FFFD).
    NotUtf8,
}

impl Class {
    /// Its short name, as SARIF rule ids and JSON spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bidi => "bidi",
            Self::Tag => "tag",
            Self::VariationSelector => "variation-selector",
            Self::Invisible => "zero-width",
            Self::Control => "control",
            Self::NotUtf8 => "not-utf8",
        }
    }
}

/// A hidden character's class, severity when it stands alone, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hidden {
    /// Its class.
    pub class: Class,
    /// Its severity alone; several [`Class::Invisible`] or [`Class::VariationSelector`]
    /// characters in a row are critical, whatever each is alone (see `hidden.rs`).
    pub severity: Severity,
    /// What it is, for people.
    pub what: &'static str,
}

const fn hidden(class: Class, severity: Severity, what: &'static str) -> Option<Hidden> {
    Some(Hidden {
        class,
        severity,
        what,
    })
}

/// Invisible formatting characters that are neither bidirectional controls nor tags: the
/// rest of general category Cf (Unicode 16), the default-ignorable code points outside it
/// (combining grapheme joiner, Hangul fillers, Khmer inherent vowels, unassigned
/// ignorables) and the braille blank, with what each is.
const INVISIBLE: &[(char, char, &str)] = &[
    ('\u{00AD}', '\u{00AD}', "soft hyphen"),
    ('\u{034F}', '\u{034F}', "combining grapheme joiner"),
    ('\u{0600}', '\u{0605}', "invisible formatting character"),
    ('\u{06DD}', '\u{06DD}', "invisible formatting character"),
    ('\u{070F}', '\u{070F}', "invisible formatting character"),
    ('\u{0890}', '\u{0891}', "invisible formatting character"),
    ('\u{08E2}', '\u{08E2}', "invisible formatting character"),
    ('\u{115F}', '\u{1160}', "Hangul filler"),
    ('\u{17B4}', '\u{17B5}', "invisible Khmer vowel"),
    ('\u{180E}', '\u{180E}', "invisible formatting character"),
    ('\u{200B}', '\u{200D}', "zero-width character"),
    ('\u{2060}', '\u{2060}', "zero-width character"),
    ('\u{2061}', '\u{2065}', "invisible operator"),
    ('\u{206A}', '\u{206F}', "deprecated formatting character"),
    ('\u{2800}', '\u{2800}', "braille blank"),
    ('\u{3164}', '\u{3164}', "Hangul filler"),
    (
        '\u{FEFF}',
        '\u{FEFF}',
        "byte-order mark after the start of the file",
    ),
    ('\u{FFA0}', '\u{FFA0}', "Hangul filler"),
    ('\u{FFF0}', '\u{FFF8}', "invisible formatting character"),
    ('\u{FFF9}', '\u{FFFB}', "interlinear annotation character"),
    ('\u{110BD}', '\u{110BD}', "invisible formatting character"),
    ('\u{110CD}', '\u{110CD}', "invisible formatting character"),
    ('\u{13430}', '\u{1343F}', "invisible formatting character"),
    ('\u{1BCA0}', '\u{1BCA3}', "invisible formatting character"),
    ('\u{1D173}', '\u{1D17A}', "musical formatting character"),
    ('\u{E0080}', '\u{E00FF}', "invisible formatting character"),
    ('\u{E01F0}', '\u{E0FFF}', "invisible formatting character"),
];

/// The class, severity alone and description of `c`, if it is hidden. Tab and line feed
/// are not; a carriage return is (the scan leaves out one that ends a line before a line
/// feed, and a byte-order mark that starts a file); a variation selector is (the scan leaves
/// out one that follows a visible character alone, as emoji and ideographs use them).
pub fn classify(c: char) -> Option<Hidden> {
    use Class::{Bidi, Control, Invisible, Tag, VariationSelector};
    use Severity::{Critical, Warning};
    match c {
        '\t' | '\n' => None,
        '\u{1B}' => hidden(
            Control,
            Critical,
            "escape character (starts terminal escape sequences)",
        ),
        '\r' => hidden(Control, Critical, "carriage return not before a line feed"),
        '\u{8}' => hidden(Control, Critical, "backspace"),
        '\0'..='\u{1F}' | '\u{7F}' => hidden(Control, Warning, "control character"),
        '\u{80}'..='\u{9F}' => hidden(Control, Critical, "C1 control character"),
        '\u{202A}'..='\u{202E}' => hidden(Bidi, Critical, "bidirectional embedding or override"),
        '\u{2066}'..='\u{2069}' => hidden(Bidi, Critical, "bidirectional isolate"),
        '\u{200E}' | '\u{200F}' | '\u{061C}' => hidden(Bidi, Critical, "bidirectional mark"),
        '\u{E0000}'..='\u{E007F}' => hidden(Tag, Critical, "tag character"),
        '\u{FE00}'..='\u{FE0F}'
        | '\u{E0100}'..='\u{E01EF}'
        | '\u{180B}'..='\u{180D}'
        | '\u{180F}' => hidden(
            VariationSelector,
            Warning,
            "variation selector with no character to vary",
        ),
        // Everything below is outside the ASCII and Latin-1 letters: one comparison for
        // ordinary text.
        c if c < '\u{AD}' => None,
        c => INVISIBLE
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&c))
            .and_then(|(_, _, what)| hidden(Invisible, Warning, what)),
    }
}

/// Whether `c` can carry a variation selector: a character that shows, neither a space,
/// a control nor itself hidden.
pub(crate) fn is_base(c: char) -> bool {
    !c.is_whitespace() && classify(c).is_none()
}

/// Whether the UTF-8 `bytes` may hold a hidden character, cheaply: every hidden character
/// is a control byte, DEL, or a code point whose UTF-8 form starts with one of the lead
/// bytes below (Arabic 0xD8/0xDB/0xDC, the grapheme joiner 0xCD, U+0800–U+0FFF 0xE0,
/// U+1000–U+1FFF 0xE1, U+3164 0xE3, planes 1 0xF0 and 14 0xF3); for the blocks that
/// ordinary text uses most (Latin-1 0xC2, punctuation 0xE2, U+F000–U+FFFF 0xEF) the next
/// bytes are looked at too, so dashes, quotes and ellipses pass. A carriage return before
/// a line feed is not one. Most files have none of these, and skip decoding.
pub(crate) fn may_hide(bytes: &[u8]) -> bool {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    bytes.iter().enumerate().any(|(i, b)| match b {
        b'\r' => at(i + 1) != b'\n',
        b'\t' | b'\n' => false,
        0..=0x1F | 0x7F => true,
        // C1 controls, the soft hyphen.
        0xC2 => matches!(at(i + 1), 0x80..=0x9F | 0xAD),
        // U+200B–U+200F, U+202A–U+202E; U+2060–U+206F; U+2800.
        0xE2 => match at(i + 1) {
            0x80 => matches!(at(i + 2), 0x8B..=0x8F | 0xAA..=0xAE),
            0x81 => matches!(at(i + 2), 0xA0..=0xAF),
            0xA0 => at(i + 2) == 0x80,
            _ => false,
        },
        // U+FE00–U+FE0F; U+FEFF; U+FFA0; U+FFF0–U+FFFB.
        0xEF => match at(i + 1) {
            0xB8 => matches!(at(i + 2), 0x80..=0x8F),
            0xBB => at(i + 2) == 0xBF,
            0xBE => at(i + 2) == 0xA0,
            0xBF => matches!(at(i + 2), 0xB0..=0xBB),
            _ => false,
        },
        0xCD | 0xD8 | 0xDB | 0xDC | 0xE0 | 0xE1 | 0xE3 | 0xF0 | 0xF3 => true,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::{Class, Severity, classify, may_hide};

    fn class(c: char) -> Option<(Class, Severity)> {
        classify(c).map(|h| (h.class, h.severity))
    }

    #[test]
    fn every_class_and_its_severity_alone() {
        use Class::{Bidi, Control, Invisible, Tag, VariationSelector};
        use Severity::{Critical, Warning};
        for c in [
            '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
        ] {
            assert_eq!(class(c), Some((Bidi, Critical)), "{c:?}");
        }
        for c in ['\u{E0000}', '\u{E0001}', '\u{E0041}', '\u{E007F}'] {
            assert_eq!(class(c), Some((Tag, Critical)), "{c:?}");
        }
        for c in [
            '\u{FE00}',
            '\u{FE0F}',
            '\u{E0100}',
            '\u{E01EF}',
            '\u{180B}',
            '\u{180F}',
        ] {
            assert_eq!(class(c), Some((VariationSelector, Warning)), "{c:?}");
        }
        for c in [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{2061}',
            '\u{2064}',
            '\u{206A}',
            '\u{206F}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{00AD}',
            '\u{034F}',
            '\u{180E}',
            '\u{115F}',
            '\u{1160}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{2800}',
            '\u{17B4}',
            '\u{17B5}',
            '\u{1D173}',
            '\u{1D17A}',
            '\u{FEFF}',
            '\u{0600}',
            '\u{110BD}',
            '\u{13430}',
            '\u{1BCA3}',
        ] {
            assert_eq!(class(c), Some((Invisible, Warning)), "{c:?}");
        }
        for c in [
            '\u{1B}', '\r', '\u{8}', '\u{80}', '\u{85}', '\u{9B}', '\u{9F}',
        ] {
            assert_eq!(class(c), Some((Control, Critical)), "{c:?}");
        }
        for c in ['\0', '\u{7}', '\u{B}', '\u{C}', '\u{1F}', '\u{7F}'] {
            assert_eq!(class(c), Some((Control, Warning)), "{c:?}");
        }
        for c in [
            '\t', '\n', ' ', 'a', 'é', '\u{A0}', '—', '“', '½', '\u{2028}', '\u{2010}', '\u{2070}',
            'ü', '😀', '\u{26A0}', '中', '\u{FFFD}', '\u{20E3}',
        ] {
            assert_eq!(class(c), None, "{c:?}");
        }
    }

    #[test]
    fn the_prefilter_lets_through_every_hidden_character() {
        // Every code point up to the end of plane 14's ignorables: a hidden one always
        // passes the byte filter.
        for cp in 0..=0xE0FFFu32 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            if classify(c).is_some() && c != '\r' {
                let mut buf = [0; 4];
                assert!(may_hide(c.encode_utf8(&mut buf).as_bytes()), "U+{cp:04X}");
            }
        }
        assert!(may_hide(b"a\rb"));
        assert!(may_hide(b"a\r"));
        assert!(!may_hide(b"line\r\nline\r\n\ttab"));
        assert!(!may_hide("plain é ½ ü 中 — “quoted” … ￼ ﬁ".as_bytes()));
        // Emoji share plane 1's lead byte with its invisible characters: decoded.
        assert!(may_hide("😀".as_bytes()));
    }
}
