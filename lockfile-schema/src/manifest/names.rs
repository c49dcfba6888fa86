//! What a plugin may be named, and names that only look alike.

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
