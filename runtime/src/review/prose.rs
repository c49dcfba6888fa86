//! Prose: the files of a plugin an approval does not cover, except for the parts of them
//! that run or grant.
//!
//! Prose is exactly `skills/**/*.md`, `commands/**/*.md` and `agents/**/*.md`, and
//! `README*`, `LICENSE*`, `CHANGELOG*` and `NOTICE*` at the plugin's root. The parts that
//! run are a command's or skill's shell lines (`` !`cmd` `` and ```` ```! ```` blocks, which
//! Claude Code runs before the model reads the text); the parts that grant are the front
//! matter keys naming tools, hooks, servers, a shell, a permission mode or an agent to run.

/// Root files that are prose, by the start of their name.
const ROOT_PROSE: [&str; 4] = ["README", "LICENSE", "CHANGELOG", "NOTICE"];

/// Folders whose markdown files are prose.
const PROSE_FOLDERS: [&str; 3] = ["skills/", "commands/", "agents/"];

/// Front-matter keys that grant or run, compared with `-` and `_` removed, lower case.
const GRANTING: [&str; 13] = [
    "allowedtools",
    "tools",
    "disallowedtools",
    "hooks",
    "mcpservers",
    "mcpconfig",
    "mcptools",
    "lspservers",
    "permissionmode",
    "shell",
    "context",
    "agent",
    "monitors",
];

/// Whether the regular file `rel` (relative, `/`-separated) is prose.
pub(crate) fn is_prose(rel: &str) -> bool {
    if !rel.contains('/') {
        return ROOT_PROSE.iter().any(|p| rel.starts_with(p));
    }
    rel.ends_with(".md") && PROSE_FOLDERS.iter().any(|f| rel.starts_with(f))
}

/// The parts of prose file `text` that run or grant, in order: each shell span as written
/// (`` !`…` `` up to its closing backtick, a ```` ```! ```` block up to its closing fence),
/// then `front matter KEY: JSON` for each granting key. Front matter that cannot be read
/// is taken whole.
pub(crate) fn running_parts(text: &str) -> Vec<String> {
    let mut parts = shell_spans(text);
    match crate::frontmatter::parse(text) {
        Ok(document) => {
            for (key, value) in &document.meta {
                let plain: String = key
                    .chars()
                    .filter(|c| !matches!(c, '-' | '_'))
                    .flat_map(char::to_lowercase)
                    .collect();
                if GRANTING.contains(&plain.as_str()) {
                    let value = berth_lockfile_schema::canonical_json(value);
                    parts.push(format!("front matter {key}: {value}"));
                }
            }
        }
        Err(_) => {
            if let Some(block) = front_matter(text) {
                parts.push(format!("front matter (unreadable): {block}"));
            }
        }
    }
    parts
}

/// The shell spans of `text`: every `` !` `` to the next backtick, and every ```` ```! ````
/// fence to the next ```` ``` ````. A superset of what Claude Code runs (it also asks for
/// whitespace before the `!`).
pub(crate) fn shell_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("!`") {
        let before = &rest[..start];
        // A ```! fence: `` ` `` `` ` `` then `!` then a backtick is not a fence opener.
        let fenced = before.ends_with("``");
        let body = &rest[start + 2..];
        let end = if fenced {
            body.find("```").map(|e| e + 3)
        } else {
            body.find('`').map(|e| e + 1)
        };
        let end = end.unwrap_or(body.len());
        let from = if fenced { start - 2 } else { start };
        spans.push(rest[from..start + 2 + end].to_owned());
        rest = &body[end..];
    }
    let mut rest = text;
    while let Some(start) = rest.find("```!") {
        let body = &rest[start + 4..];
        let end = body.find("```").map_or(body.len(), |e| e + 3);
        let span = &rest[start..start + 4 + end];
        if !spans
            .iter()
            .any(|s| s.contains(span) || span.contains(s.as_str()))
        {
            spans.push(span.to_owned());
        }
        rest = &body[end..];
    }
    spans
}

/// The front matter block of `text`, if it opens with one.
fn front_matter(text: &str) -> Option<&str> {
    let text = text.trim_start_matches('\u{feff}');
    let rest = text.strip_prefix("---")?;
    let end = rest.find("\n---").map_or(rest.len(), |e| e + 4);
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::{is_prose, running_parts};

    #[test]
    fn which_files_are_prose() {
        for prose in [
            "README.md",
            "README",
            "LICENSE-MIT",
            "CHANGELOG.md",
            "NOTICE",
            "skills/a/SKILL.md",
            "skills/a/reference.md",
            "commands/deploy.md",
            "agents/x/y.md",
        ] {
            assert!(is_prose(prose), "{prose}");
        }
        for not in [
            "readme.md",
            "docs/README.md",
            "skills/a/run.py",
            "skills/a/SKILL.MD",
            "commands/deploy.sh",
            ".claude-plugin/plugin.json",
            "hooks/hooks.json",
            "notes.md",
            "bin/tool",
        ] {
            assert!(!is_prose(not), "{not}");
        }
    }

    #[test]
    fn shell_lines_and_granting_keys() {
        let text = "---\nname: st\ndescription: d\nallowed-tools: Bash(git:*)\nmodel: x\n---\nStatus: !`git status`\nand ``` inline code ```\n```!\ncurl x | sh\n```\nplain !not shell\n";
        assert_eq!(
            running_parts(text),
            [
                "!`git status`",
                "```!\ncurl x | sh\n```",
                "front matter allowed-tools: \"Bash(git:*)\""
            ]
        );
        assert!(running_parts("---\nname: a\n---\nJust text.\n").is_empty());
        let unreadable = running_parts("---\nname: [a\nhooks: x\n---\nbody\n");
        assert_eq!(unreadable.len(), 1, "{unreadable:?}");
        assert!(unreadable[0].starts_with("front matter (unreadable)"));
    }
}
