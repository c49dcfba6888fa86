//! Sub-agent definitions (`agents/*.md`).

use serde_json::Value;

use crate::error::RuntimeError;
use crate::frontmatter;
use crate::manifest::Format;
use crate::pystr::py_str;
use crate::root::PluginRoot;

/// One sub-agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// `name` (default: the file's stem).
    pub name: String,
    /// `description`.
    pub description: String,
    /// `model` (default `inherit`).
    pub model: String,
    /// `tools`.
    pub tools: Vec<String>,
    /// The system prompt: the file's body.
    pub content: String,
}

const PERMISSION_MODES: [&str; 3] = ["always_confirm", "never_confirm", "confirm_risky"];

/// Loads `agents/*.md` (Claude Code) or `dev.openhands/agents/*.md` (Agent Plugins), by file
/// name. A file that cannot be read is skipped with a warning.
pub fn load_agents(
    root: &PluginRoot,
    format: Format,
    warnings: &mut Vec<String>,
) -> Result<Vec<Agent>, RuntimeError> {
    let dir = match format {
        Format::ClaudeCode => "agents",
        Format::AgentPlugins => "dev.openhands/agents",
    };
    let mut agents = Vec::new();
    for entry in root.list(dir)? {
        let rel = format!("{dir}/{entry}");
        if !entry.to_lowercase().ends_with(".md")
            || entry == "README.md"
            || entry == "readme.md"
            || !root.is_file(&rel)?
        {
            continue;
        }
        let mut skip = |why: String| {
            warnings.push(format!(
                "plugin `{}`: skipped agent `{rel}`: {why}",
                root.plugin()
            ))
        };
        let text = match root.read_text(&rel) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(RuntimeError::NotUtf8 { .. }) => {
                skip("not UTF-8 text".into());
                continue;
            }
            Err(e) => return Err(e),
        };
        let doc = match frontmatter::parse(&text) {
            Ok(doc) => doc,
            Err(why) => {
                skip(why);
                continue;
            }
        };
        let meta = &doc.meta;
        if let Some(mode) = meta.get("permission_mode").filter(|v| !v.is_null()) {
            let mode = py_str(mode).to_lowercase();
            if !PERMISSION_MODES.contains(&mode.as_str()) {
                skip(format!(
                    "`permission_mode` `{mode}` is not one of {}",
                    PERMISSION_MODES.join(", ")
                ));
                continue;
            }
        }
        let stem = entry[..entry.len() - 3].to_owned();
        agents.push(Agent {
            name: meta.get("name").map_or(stem, py_str),
            description: meta.get("description").map_or_else(String::new, py_str),
            model: meta
                .get("model")
                .map_or_else(|| "inherit".to_owned(), py_str),
            tools: match meta.get("tools") {
                Some(Value::Array(items)) => items.iter().map(py_str).collect(),
                Some(Value::Null) | None => Vec::new(),
                Some(other) => vec![py_str(other)],
            },
            content: doc.content,
        });
    }
    Ok(agents)
}
