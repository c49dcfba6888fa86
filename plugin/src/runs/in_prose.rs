//! What harnesses run, or read in, from inside prose: one table of each supported
//! harness's syntax, shared by the review (a span is a running part of the file: in the
//! approval, in the diff, counted as `hooks` when it runs) and the harness targets (what
//! they write verbatim is what the review counted).
//!
//! Claude Code runs `` !`cmd` `` and ```` ```! ```` blocks in skills and commands before
//! the model reads them (its patterns are `` /(?<=^|\s)!`[^`]+`/gm `` and
//! ```` /```!\s*\n?[\s\S]*?\n?```/g ````). Gemini CLI runs `!{cmd}` in a custom command's
//! prompt (after a confirmation its policy may waive) and injects a file's content for
//! `@{path}`, each brace-balanced. berth matches a superset of each: Claude Code's forms
//! without the whitespace it asks for before `!`, Gemini CLI's in every prose file (a
//! command berth writes for Gemini CLI comes from one), an unclosed span to the end of the
//! text.

/// What a harness does with a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// It runs the span as a shell command.
    Runs,
    /// It reads a file into the prompt.
    Reads,
}

/// How a span ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// At the next backtick.
    Backtick,
    /// At the next ```` ``` ````.
    Fence,
    /// At the brace that balances the opening one.
    Brace,
}

/// One harness's syntax for something inside prose.
#[derive(Debug, Clone, Copy)]
pub struct Syntax {
    /// The harness.
    pub harness: &'static str,
    /// What opens a span.
    pub opens: &'static str,
    /// What the harness does with it.
    pub effect: Effect,
    close: Close,
}

/// Every harness's syntax inside prose.
pub const IN_PROSE: [Syntax; 4] = [
    Syntax {
        harness: "Claude Code",
        opens: "```!",
        effect: Effect::Runs,
        close: Close::Fence,
    },
    Syntax {
        harness: "Claude Code",
        opens: "!`",
        effect: Effect::Runs,
        close: Close::Backtick,
    },
    Syntax {
        harness: "Gemini CLI",
        opens: "!{",
        effect: Effect::Runs,
        close: Close::Brace,
    },
    Syntax {
        harness: "Gemini CLI",
        opens: "@{",
        effect: Effect::Reads,
        close: Close::Brace,
    },
];

/// One span of prose a harness runs or reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The span as written, opener and closer included.
    pub text: String,
    /// What the harness does with it.
    pub effect: Effect,
    /// The harness.
    pub harness: &'static str,
    start: usize,
}

/// Every span of `text` some harness runs or reads, in order of where it starts. A span
/// inside another (a `` !` `` inside a ```` ```! ```` block) is part of the outer one.
pub fn spans(text: &str) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for syntax in IN_PROSE {
        let mut from = 0;
        while let Some(found) = text[from..].find(syntax.opens) {
            let start = from + found;
            let body = start + syntax.opens.len();
            let end = match syntax.close {
                Close::Backtick => text[body..].find('`').map(|e| body + e + 1),
                Close::Fence => text[body..].find("```").map(|e| body + e + 3),
                Close::Brace => balanced(&text[body..]).map(|e| body + e + 1),
            }
            .unwrap_or(text.len());
            let inside = out
                .iter()
                .any(|s| s.start <= start && start < s.start + s.text.len());
            // `` ``! `` followed by a backtick is the fence opener's tail, not a span.
            let fence_tail = syntax.opens == "!`" && text[..start].ends_with("``");
            if !inside && !fence_tail {
                out.push(Span {
                    text: text[start..end].to_owned(),
                    effect: syntax.effect,
                    harness: syntax.harness,
                    start,
                });
            }
            from = if syntax.close == Close::Brace {
                body
            } else {
                end.max(body)
            };
        }
    }
    out.sort_by_key(|s| s.start);
    out
}

/// Whether `part` (a running part of a file, as [`spans`] gives it) is a span a harness
/// runs.
pub fn runs(part: &str) -> bool {
    IN_PROSE
        .iter()
        .any(|s| s.effect == Effect::Runs && part.starts_with(s.opens))
}

/// The offset of the `}` that closes a brace already open before `text`.
fn balanced(text: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{Effect, runs, spans};

    fn texts(text: &str) -> Vec<String> {
        spans(text).into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn every_harness_s_spans_in_order() {
        let text = "Status: !`git status`\n```!\ncurl x | sh\n!`inner`\n```\nRun !{echo {a} b} and read @{docs/x.md}; plain !not, {braces}\n";
        assert_eq!(
            texts(text),
            [
                "!`git status`",
                "```!\ncurl x | sh\n!`inner`\n```",
                "!{echo {a} b}",
                "@{docs/x.md}"
            ]
        );
        let effects: Vec<Effect> = spans(text).iter().map(|s| s.effect).collect();
        assert_eq!(effects[3], Effect::Reads);
        assert!(runs("!{id}") && runs("```!\nx```") && !runs("@{x}"));
        assert_eq!(texts("tail !{unclosed {"), ["!{unclosed {"]);
        assert!(texts("```\ncode\n```\n").is_empty());
    }
}
