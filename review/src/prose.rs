//! Prose: the files of a plugin an approval covers only in part in a plugin that runs
//! nothing (the parts of them that run or grant), and whole in a plugin that runs anything
//! (see `Surface::runs_code`).
//!
//! Prose is exactly `skills/**/*.md`, `commands/**/*.md` and `agents/**/*.md`, and
//! `README*`, `LICENSE*`, `CHANGELOG*` and `NOTICE*` at the plugin's root. The parts that
//! run are the spans a harness runs or reads in (`berth_plugin::runs::in_prose`: Claude Code's
//! `` !`cmd` `` and ```` ```! ```` blocks, Gemini CLI's `!{cmd}` and `@{file}`); the parts
//! that grant are the front matter keys naming tools, hooks, servers, a shell, a
//! permission mode or an agent to run.

use berth_lockfile_schema::harness_keys::grants_in_front_matter;

use berth_plugin::runs::in_prose::{self, Effect};

/// Root files that are prose, by the start of their name.
const ROOT_PROSE: [&str; 4] = ["README", "LICENSE", "CHANGELOG", "NOTICE"];

/// Folders whose markdown files are prose.
const PROSE_FOLDERS: [&str; 3] = ["skills/", "commands/", "agents/"];

/// Whether the regular file `rel` (relative, `/`-separated) is prose.
pub(crate) fn is_prose(rel: &str) -> bool {
    if !rel.contains('/') {
        return ROOT_PROSE.iter().any(|p| rel.starts_with(p));
    }
    rel.ends_with(".md") && PROSE_FOLDERS.iter().any(|f| rel.starts_with(f))
}

/// The parts of prose file `text` that run or grant, in order: each span a harness runs
/// or reads in ([`berth_plugin::runs::in_prose`]: `` !`…` ``, ```` ```! ```` blocks, `!{…}`,
/// `@{…}`) as written, then `front matter KEY: JSON` for each key that grants or runs (the
/// table of harness keys models it in a skill's, command's or agent's front matter, in
/// any spelling). Front matter is read as Claude Code reads it (a leading byte-order mark
/// stripped); front matter that cannot be read, or whose text names such a key that the
/// reading does not find, is taken whole.
pub(crate) fn running_parts(text: &str) -> Vec<String> {
    let mut parts = shell_spans(text);
    parts.extend(
        in_prose::spans(text)
            .into_iter()
            .filter(|s| s.effect == Effect::Reads)
            .map(|s| s.text),
    );
    let whole = |parts: &mut Vec<String>| {
        if let Some(block) = front_matter(text) {
            parts.push(format!("front matter (unreadable): {block}"));
        }
    };
    match berth_plugin::frontmatter::parse_lenient(text) {
        Ok(document) => {
            let mut found = Vec::new();
            for (key, value) in &document.meta {
                if grants_in_front_matter(key) {
                    let value = berth_lockfile_schema::canonical_json(value);
                    parts.push(format!("front matter {key}: {value}"));
                    found.push(key.as_str());
                }
            }
            let named = front_matter(text).map_or(0, |block| {
                block
                    .lines()
                    .filter(|line| line_key(line).is_some_and(grants_in_front_matter))
                    .count()
            });
            if named > found.len() {
                whole(&mut parts);
            }
        }
        Err(_) => whole(&mut parts),
    }
    parts
}

/// The spans of `text` a harness runs ([`berth_plugin::runs::in_prose`]), as written, in order.
pub(crate) fn shell_spans(text: &str) -> Vec<String> {
    in_prose::spans(text)
        .into_iter()
        .filter(|s| s.effect == Effect::Runs)
        .map(|s| s.text)
        .collect()
}

/// The key a front-matter line starts with (`key:`, `"key":`), if it starts with one.
fn line_key(line: &str) -> Option<&str> {
    let line = line.trim_start_matches(['"', '\'']);
    let end = line.find([':', '"', '\''])?;
    let key = &line[..end];
    (!key.is_empty() && !key.starts_with([' ', '\t', '#', '-'])).then_some(key)
}

/// The front matter block of `text`, if it opens with one (after a byte-order mark and
/// blank lines).
fn front_matter(text: &str) -> Option<&str> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
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

    #[test]
    fn a_byte_order_mark_hides_nothing_and_gemini_spans_count() {
        let bom = "\u{feff}---\r\nname: s\r\nallowed-tools: Bash(*)\r\n---\r\nRun !`x` then !{curl e | sh} with @{notes.md}\r\n";
        assert_eq!(
            running_parts(bom),
            [
                "!`x`",
                "!{curl e | sh}",
                "@{notes.md}",
                "front matter allowed-tools: \"Bash(*)\""
            ]
        );
        // A line naming a granting key that the parse reads as part of a string (here a
        // quoted scalar running on) takes the block whole: another reader may not.
        let hidden = running_parts("---\ndescription: \"first\nhooks: x\"\n---\nbody\n");
        assert_eq!(hidden.len(), 1, "{hidden:?}");
        assert!(
            hidden[0].starts_with("front matter (unreadable)"),
            "{hidden:?}"
        );
    }
}
