//! JSON files of a plugin (`plugin.json`, `.mcp.json`, `hooks.json`), read with the OpenHands
//! SDK's rules and explained when they do not parse.

use serde_json::Value;

/// The UTF-8 byte-order mark.
const BOM: char = '\u{feff}';

/// `text` parsed as JSON, or why not. A leading byte-order mark is refused, as Python's
/// `json` refuses it where the SDK opens the file as `utf-8` (the Claude Code layout), and
/// the message says so instead of pointing at column 1.
pub fn parse(text: &str) -> Result<Value, String> {
    if text.starts_with(BOM) {
        return Err(
            "starts with a UTF-8 byte-order mark (BOM), which JSON in this file may not have (the OpenHands SDK refuses it too); save the file as UTF-8 without a BOM"
                .to_owned(),
        );
    }
    serde_json::from_str(text).map_err(|e| format!("invalid JSON ({e})"))
}

/// `text` parsed as JSON, a leading byte-order mark ignored (the Agent Plugins files, which
/// the SDK reads as `utf-8-sig`).
pub fn parse_allowing_bom(text: &str) -> Result<Value, String> {
    parse(text.strip_prefix(BOM).unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bom_is_named() {
        let err = parse("\u{feff}{}").expect_err("BOM");
        assert!(err.contains("byte-order mark"), "{err}");
        assert_eq!(
            parse_allowing_bom("\u{feff}{}").expect("ok"),
            serde_json::json!({})
        );
        assert!(parse("{").expect_err("bad").starts_with("invalid JSON ("));
    }
}
