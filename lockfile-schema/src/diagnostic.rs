//! Positions in a file and the messages attached to them.

use std::fmt;

/// A message about one place in a file: `plugins.toml:7:9: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong and, where it helps, what to do.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic at byte `offset` of `text`.
    pub fn at(file: &str, text: &str, offset: usize, message: impl Into<String>) -> Self {
        let (line, column) = line_column(text, offset);
        Self {
            file: file.to_owned(),
            line,
            column,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for Diagnostic {}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_and_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // `=` comes after the two characters `bé` and a space, which are four bytes.
        assert_eq!(line_column(text, 10), (2, 4));
        assert_eq!(line_column(text, 1000), (3, 1));
    }
}
