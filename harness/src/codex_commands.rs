//! The skills Codex makes of a plugin's commands when it installs the plugin itself
//! (`codex plugin add`, 0.169.0): each command it can run as a skill becomes
//! `.codex-plugin/migrated-command-skills/source-command-NAME/SKILL.md` in the install,
//! and Codex lists it as `PLUGIN:source-command-NAME`. berth writes the same files, so
//! Codex reads berth's install as its own.
//!
//! What Codex does, as observed (0.169.0 and 0.171.0 alike): the commands are the files
//! the plugin's `.claude-plugin/plugin.json` `commands` names, else those its marketplace
//! entry names, else `commands/` (a named folder is read whole, recursively, like
//! `commands/`); a command is a `.md` file with a front matter whose `description` is not
//! empty, and a body without `$ARGUMENTS`, a positional `$N`, a template (`{{` and `}}`),
//! a shell line (`` !` ``) or a file reference (a word starting with `@`, as `@file.md`),
//! whose skill is at most [`MAX_SKILL_BYTES`] long; others are not migrated.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::files::string_or_list;
use super::guard::read_unlinked;
use berth_runtime::set::PluginInfo;

/// Where Codex writes the skills it makes of commands, in the install.
const MIGRATED: &str = ".codex-plugin/migrated-command-skills";

/// What makes Codex leave a command out: arguments it cannot pass to a skill, a shell
/// line.
const NOT_MIGRATED: [&str; 3] = ["$ARGUMENTS", "!`", "! `"];

/// The longest `SKILL.md` Codex makes of a command, in bytes: a command whose skill would
/// be longer is left out (a 4,000-byte skill is made, a 4,001-byte one is not).
const MAX_SKILL_BYTES: usize = 4000;

/// The `commands` of the plugin's Claude Code manifest, if it names any.
fn manifest_commands(info: &PluginInfo) -> Option<Vec<String>> {
    let bytes = read_unlinked(&info.path, Path::new(".claude-plugin/plugin.json")).ok()??;
    let manifest: Value = serde_json::from_slice(&bytes).ok()?;
    manifest.get("commands").map(string_or_list)
}

/// The plugin's command files with the name Codex gives each (a folder's files by their
/// path in it, `/` as `-`, without `.md`), in Codex's order.
fn commands(info: &PluginInfo) -> Vec<(String, PathBuf)> {
    let listed = manifest_commands(info).or_else(|| {
        let definition = info.locked.definition.as_ref()?;
        definition.components.get("commands").map(string_or_list)
    });
    let roots: Vec<PathBuf> = match listed {
        Some(paths) => paths
            .iter()
            .map(|p| PathBuf::from(p.trim_start_matches("./").trim_end_matches('/')))
            .collect(),
        None => vec![PathBuf::from("commands")],
    };
    let mut out = Vec::new();
    for root in roots {
        let at = info.path.join(&root);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            continue;
        };
        if meta.is_file() {
            if let Some(stem) = markdown_stem(&root) {
                out.push((stem, root));
            }
        } else if meta.is_dir() {
            let mut files = Vec::new();
            if super::files::regular_files(&at, Path::new(""), &mut files).is_ok() {
                for rel in files {
                    if let Some(stem) = markdown_stem(&rel) {
                        let mut name: Vec<String> = rel
                            .parent()
                            .into_iter()
                            .flat_map(Path::components)
                            .map(|c| c.as_os_str().to_string_lossy().into_owned())
                            .collect();
                        name.push(stem);
                        out.push((name.join("-"), root.join(rel)));
                    }
                }
            }
        }
    }
    out
}

/// A `.md` file's name without the extension.
fn markdown_stem(rel: &Path) -> Option<String> {
    let file = rel.file_name()?.to_str()?;
    file.strip_suffix(".md").map(str::to_owned)
}

/// Codex's skill name for command `name`: `source-command-` and the name's ASCII letters
/// and digits, lower-cased, every other run of characters one `-`.
fn skill_name(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "source-command".to_owned()
    } else {
        format!("source-command-{slug}")
    }
}

/// Whether `body` holds what Codex will not run as a skill: its arguments, a shell line,
/// a template (`{{` and `}}` both), or a file reference (a word of more than `@`).
fn not_migrated(body: &str) -> bool {
    NOT_MIGRATED.iter().any(|m| body.contains(m))
        || (body.contains("{{") && body.contains("}}"))
        || body
            .split_whitespace()
            .any(|word| word.len() > 1 && word.starts_with('@'))
        || body
            .as_bytes()
            .windows(2)
            .any(|w| w[0] == b'$' && w[1].is_ascii_digit())
}

/// The skill Codex makes of command `name` with text `text`, or `None` when it makes none.
fn migrate(name: &str, text: &str) -> Option<(String, String)> {
    let document = berth_plugin::frontmatter::parse(text).ok()?;
    let description = match document.meta.get("description")? {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    if description.is_empty() || not_migrated(&document.content) {
        return None;
    }
    let skill = skill_name(name);
    let body = if document.content.is_empty() {
        "No command template body was found."
    } else {
        document.content.as_str()
    };
    let quoted = description.replace('\\', "\\\\").replace('"', "\\\"");
    let text = format!(
        "---\nname: \"{skill}\"\ndescription: \"{quoted}\"\n---\n\n# {skill}\n\nUse this skill when the user asks to run the migrated source command `{name}`.\n\n## Command Template\n\n{body}\n"
    );
    (text.len() <= MAX_SKILL_BYTES).then_some((skill, text))
}

/// The files Codex's own install of the plugin adds for its commands (relative to the
/// install), and the commands it leaves out, by name.
pub(super) fn migrated_commands(info: &PluginInfo) -> (Vec<(PathBuf, Vec<u8>)>, Vec<String>) {
    let mut files = Vec::new();
    let mut left = Vec::new();
    for (name, rel) in commands(info) {
        let text = match read_unlinked(&info.path, &rel) {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => continue,
        };
        match migrate(&name, &text) {
            Some((skill, text)) => files.push((
                Path::new(MIGRATED).join(skill).join("SKILL.md"),
                text.into_bytes(),
            )),
            None => left.push(name),
        }
    }
    (files, left)
}

#[cfg(test)]
mod tests {
    use super::{migrate, skill_name};

    #[test]
    fn names_as_codex_does() {
        assert_eq!(skill_name("Upper_Case"), "source-command-upper-case");
        assert_eq!(skill_name("dash--x"), "source-command-dash-x");
        assert_eq!(skill_name("a.b"), "source-command-a-b");
        assert_eq!(skill_name("unicodé"), "source-command-unicod");
        assert_eq!(skill_name("___"), "source-command");
        assert_eq!(skill_name("sub-nested"), "source-command-sub-nested");
    }

    #[test]
    fn migrates_what_codex_migrates() {
        let (skill, text) = migrate(
            "rollback",
            "---\r\ndescription: Rolls \"it\" back\r\n---\r\n\r\n  Roll back.  \r\n\r\n",
        )
        .expect("migrated");
        assert_eq!(skill, "source-command-rollback");
        assert_eq!(
            text,
            "---\nname: \"source-command-rollback\"\ndescription: \"Rolls \\\"it\\\" back\"\n---\n\n# source-command-rollback\n\nUse this skill when the user asks to run the migrated source command `rollback`.\n\n## Command Template\n\nRoll back.\n"
        );
        let (_, empty) = migrate("e", "---\ndescription: e\n---\n").expect("migrated");
        assert!(empty.ends_with("## Command Template\n\nNo command template body was found.\n"));
        for left in [
            "---\ndescription: d\n---\nDo $ARGUMENTS.\n",
            "---\ndescription: d\n---\nDo $1.\n",
            "---\ndescription: d\n---\nDo {{x}}.\n",
            "---\ndescription: d\n---\n}} then {{\n",
            "---\ndescription: d\n---\nRead @file.md first.\n",
            "---\ndescription: d\n---\nx\t@1\n",
            "---\ndescription: d\n---\nSee !`git status`.\n",
            "---\nmodel: haiku\n---\nNo description.\n",
            "No front matter.\n",
            "---\ndescription: \"\"\n---\nEmpty description.\n",
        ] {
            assert_eq!(migrate("c", left), None, "{left}");
        }
        for kept in [
            "The $HOME and }} stay.",
            "A {{ alone stays.",
            "Mail a@b.com, say @ or (@x) or `@x`.",
        ] {
            let text = format!("---\ndescription: d\n---\n{kept}\n");
            assert!(migrate("c", &text).is_some(), "{kept}");
        }
        // The skill's length decides, not the command's: 4,000 bytes are made.
        let (_, short) = migrate("c", "---\ndescription: d\n---\nx\n").expect("migrated");
        let fill = "a".repeat(4000 - short.len() + 1);
        let at_most = format!("---\ndescription: d\n---\n{fill}\n");
        assert_eq!(migrate("c", &at_most).map(|(_, t)| t.len()), Some(4000));
        let over = format!("---\ndescription: d\n---\n{fill}a\n");
        assert_eq!(migrate("c", &over), None);
    }
}
