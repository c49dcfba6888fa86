//! Commands (`commands/*.md`, or `dev.openhands/commands/*.md` in Agent Plugins), and the
//! `<plugin>:<command>` skill each becomes, as the SDK makes it.

use serde_json::Value;

use crate::error::PluginError;
use crate::frontmatter::{self, py_strip};
use crate::manifest::Format;
use crate::model::{Markdown, Reader, layout};
use crate::pystr::py_str;
use crate::skills::{Skill, TriggerKind, truncate_description, truncation_note};

/// A command file (`commands/*.md`), before it becomes a skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The file's stem.
    pub name: String,
    /// `description`, as Python `str()` renders it.
    pub description: String,
    /// `argument-hint`.
    pub argument_hint: Option<String>,
    /// `allowed-tools`.
    pub allowed_tools: Vec<String>,
    /// The body.
    pub content: String,
    /// The file, relative to the plugin folder.
    pub source: String,
}

/// Loads `commands/*.md` (Claude Code) or `dev.openhands/commands/*.md` (Agent Plugins),
/// sorted by file name.
pub fn load_commands(
    reader: &mut Reader<'_>,
    format: Format,
    warnings: &mut Vec<String>,
) -> Result<Vec<Command>, PluginError> {
    let root = reader.root();
    let dir = layout(format).commands;
    let mut commands = Vec::new();
    for entry in root.list(dir)? {
        let rel = format!("{dir}/{entry}");
        let is_md = entry.to_lowercase().ends_with(".md") && entry.len() > 3;
        if !is_md || entry == "README.md" || entry == "readme.md" || !root.is_file(&rel)? {
            continue;
        }
        commands.extend(command_at(reader, &rel, &entry, warnings)?);
    }
    Ok(commands)
}

/// The commands a marketplace entry names (`commands`: files, or folders of `*.md`),
/// in the order it names them.
pub(crate) fn load_command_paths(
    reader: &mut Reader<'_>,
    paths: &[String],
    warnings: &mut Vec<String>,
) -> Result<Vec<Command>, PluginError> {
    let root = reader.root();
    let mut commands = Vec::new();
    for path in paths {
        if root.is_dir(path)? {
            for entry in root.list(path)? {
                let rel = format!("{path}/{entry}");
                let is_md = entry.to_lowercase().ends_with(".md") && entry.len() > 3;
                if is_md && !entry.eq_ignore_ascii_case("readme.md") && root.is_file(&rel)? {
                    commands.extend(command_at(reader, &rel, &entry, warnings)?);
                }
            }
        } else if root.is_file(path)? && path.to_lowercase().ends_with(".md") {
            let file = path.rsplit('/').next().unwrap_or(path);
            commands.extend(command_at(reader, path, file, warnings)?);
        } else {
            warnings.push(format!(
                "plugin `{}`: its marketplace entry names command `{path}`, which is not a `.md` file or a folder of them",
                root.plugin()
            ));
        }
    }
    Ok(commands)
}

/// The command in file `rel` (named `entry` in its folder), or `None` with a warning.
fn command_at(
    reader: &mut Reader<'_>,
    rel: &str,
    entry: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Command>, PluginError> {
    let root = reader.root();
    let rel = rel.to_owned();
    {
        let read = reader.markdown(&rel)?;
        let text = match read.as_deref() {
            Some(Markdown::Text(text)) => text,
            None => return Ok(None),
            Some(Markdown::NotUtf8(_)) => {
                warnings.push(format!(
                    "plugin `{}`: skipped command `{rel}`: not UTF-8 text",
                    root.plugin()
                ));
                return Ok(None);
            }
        };
        let doc = match frontmatter::parse(text) {
            Ok(doc) => doc,
            Err(why) => {
                warnings.push(format!(
                    "plugin `{}`: skipped command `{rel}`: {why}",
                    root.plugin()
                ));
                return Ok(None);
            }
        };
        let meta = &doc.meta;
        let argument_hint = match meta
            .get("argument-hint")
            .or_else(|| meta.get("argumentHint"))
        {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) if items.is_empty() => None,
            Some(Value::Array(items)) => {
                Some(items.iter().map(py_str).collect::<Vec<_>>().join(" "))
            }
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::Bool(false)) => None,
            Some(other) => Some(py_str(other)),
        };
        let allowed_tools = match meta
            .get("allowed-tools")
            .or_else(|| meta.get("allowedTools"))
        {
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().map(py_str).collect(),
            _ => Vec::new(),
        };
        let stem = entry[..entry.len() - 3].to_owned();
        let description = meta.get("description").map_or_else(String::new, py_str);
        let skill_name = format!("{}:{stem}", root.plugin());
        if let Some(note) = truncation_note(description.chars().count(), &skill_name, &rel) {
            warnings.push(format!("plugin `{}`: {note}", root.plugin()));
        }
        Ok(Some(Command {
            name: stem,
            description,
            argument_hint,
            allowed_tools,
            content: doc.content,
            source: rel,
        }))
    }
}

impl Command {
    /// The skill `<plugin>:<command>`, triggered by `/<plugin>:<command>`.
    pub fn to_skill(&self, plugin: &str) -> Skill {
        let mut parts: Vec<String> = Vec::new();
        if !self.description.is_empty() {
            parts.push(format!("## {}\n\n{}\n", self.name, self.description));
        }
        if let Some(hint) = &self.argument_hint {
            parts.push(format!("**Arguments**: `$ARGUMENTS` - {hint}\n"));
        }
        if !self.content.is_empty() {
            parts.push(format!("\n{}", self.content));
        }
        let content = py_strip(&parts.join("\n")).to_owned();
        let name = format!("{plugin}:{}", self.name);
        let description = if self.description.is_empty() {
            format!("Command {} from {plugin}", self.name)
        } else {
            self.description.clone()
        };
        Skill {
            description: Some(truncate_description(&description, &self.source)),
            triggers: vec![format!("/{name}")],
            name,
            content,
            trigger: TriggerKind::Keyword,
            paths: None,
            inputs: Vec::new(),
            allowed_tools: (!self.allowed_tools.is_empty()).then(|| self.allowed_tools.clone()),
            license: None,
            compatibility: None,
            metadata: None,
            disable_model_invocation: false,
            source: self.source.clone(),
            kind: "command",
            mcp_tools: None,
            resources: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Command;

    #[test]
    fn commands_become_skills_like_the_sdk_makes_them() {
        let command = Command {
            name: "review".into(),
            description: "Review the current change".into(),
            argument_hint: Some("path".into()),
            allowed_tools: vec!["terminal".into()],
            content: "Review the code at $ARGUMENTS carefully.".into(),
            source: "commands/review.md".into(),
        };
        let skill = command.to_skill("alpha");
        assert_eq!(skill.name, "alpha:review");
        assert_eq!(skill.triggers, ["/alpha:review"]);
        assert_eq!(
            skill.content,
            "## review\n\nReview the current change\n\n**Arguments**: `$ARGUMENTS` - path\n\n\nReview the code at $ARGUMENTS carefully."
        );
        let bare = Command {
            description: String::new(),
            argument_hint: None,
            ..command
        };
        assert_eq!(
            bare.to_skill("alpha").description.as_deref(),
            Some("Command review from alpha")
        );
    }
}
