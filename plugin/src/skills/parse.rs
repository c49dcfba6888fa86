//! A skill file's front matter and body read into a [`Skill`], with the SDK's rules for
//! which fields it takes and how the trigger follows from them.

use serde_json::{Map, Value};

use super::{Skill, TriggerKind, truncate_description};
use crate::frontmatter::{self, py_strip};
use crate::pystr::{lax_bool, py_str};

pub(super) fn skill_from_text(
    text: &str,
    default_name: &str,
    rel: &str,
    is_skill_md: bool,
) -> Result<(Skill, usize), String> {
    let doc = frontmatter::parse(text)?;
    let meta = &doc.meta;
    let name = meta
        .get("name")
        .map_or_else(|| default_name.to_owned(), py_str);
    let description = optional_string(meta, "description")?;
    let license = optional_string(meta, "license")?;
    let compatibility = optional_string(meta, "compatibility")?;
    let metadata = metadata(meta.get("metadata"))?;
    let allowed_tools = allowed_tools(meta)?;
    let mut disable_model_invocation = disable_model_invocation(meta)?;
    let mut triggers = triggers(meta.get("triggers"))?;
    let paths = parse_paths(meta.get("paths"))?;
    let mut content = doc.content;
    let mut inputs = Vec::new();
    let trigger = if paths.is_some() {
        triggers.clear();
        disable_model_invocation = true;
        TriggerKind::Path
    } else if meta.contains_key("inputs") {
        let task = format!("/{name}");
        if !triggers.contains(&task) {
            triggers.push(task);
        }
        inputs = task_inputs(meta.get("inputs"))?;
        let asks = !inputs.is_empty() || has_variable(&content);
        const ASK: &str = "\n\nIf the user didn't provide any of these variables, ask the user to provide them first before the agent can proceed with the task.";
        if asks && !content.is_empty() && !content.contains(ASK) {
            content.push_str(ASK);
        }
        TriggerKind::Task
    } else if !triggers.is_empty() {
        TriggerKind::Keyword
    } else {
        TriggerKind::Always
    };
    let kind = if is_skill_md {
        "agentskills"
    } else if trigger == TriggerKind::Always {
        "repo"
    } else {
        "knowledge"
    };
    let description_chars = description.as_ref().map_or(0, |d| d.chars().count());
    let skill = Skill {
        description: description.map(|d| truncate_description(&d, rel)),
        name,
        content,
        trigger,
        triggers,
        paths,
        inputs,
        allowed_tools,
        license,
        compatibility,
        metadata,
        disable_model_invocation,
        source: rel.to_owned(),
        kind,
        // A SKILL.md's servers come from its `.mcp.json` (see `with_skill_dir`).
        mcp_tools: if is_skill_md {
            None
        } else {
            mcp_tools(meta.get("mcp_tools"))?
        },
        resources: None,
    };
    Ok((skill, description_chars))
}

/// A field that is a string when given.
fn optional_string(meta: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match meta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` must be a string, not `{}`", py_str(other))),
    }
}

/// `metadata`: a mapping, its values as Python `str()` renders them.
fn metadata(value: Option<&Value>) -> Result<Option<Map<String, Value>>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(
            map.iter()
                .map(|(k, v)| (k.clone(), Value::String(py_str(v))))
                .collect(),
        )),
        Some(_) => Err("`metadata` must be a mapping".into()),
    }
}

/// `allowed-tools` (or `allowed_tools`): a space-separated string or a list.
fn allowed_tools(meta: &Map<String, Value>) -> Result<Option<Vec<String>>, String> {
    match meta
        .get("allowed-tools")
        .or_else(|| meta.get("allowed_tools"))
    {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.split_whitespace().map(str::to_owned).collect())),
        Some(Value::Array(items)) => Ok(Some(items.iter().map(py_str).collect())),
        Some(other) => Err(format!(
            "`allowed-tools` must be a string or a list, not `{}`",
            py_str(other)
        )),
    }
}

/// `disable-model-invocation` (or `disable_model_invocation`): a boolean, as pydantic
/// takes one.
fn disable_model_invocation(meta: &Map<String, Value>) -> Result<bool, String> {
    match meta
        .get("disable-model-invocation")
        .or_else(|| meta.get("disable_model_invocation"))
    {
        None | Some(Value::Null) => Ok(false),
        Some(value) => {
            lax_bool(value).ok_or_else(|| "`disable-model-invocation` must be a boolean".into())
        }
    }
}

/// `triggers`: a list of strings.
fn triggers(value: Option<&Value>) -> Result<Vec<String>, String> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|t| match t {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("triggers must be strings, not `{}`", py_str(other))),
            })
            .collect(),
        Some(_) => Err("triggers must be a list of strings".into()),
    }
}

/// A task skill's `inputs`: the SDK's `InputMetadata` keeps `name` and `description` and
/// ignores the rest.
fn task_inputs(value: Option<&Value>) -> Result<Vec<Value>, String> {
    let list = match value {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::Null) | None => Vec::new(),
        Some(_) => return Err("inputs must be a list".into()),
    };
    list.iter()
        .map(|input| match input.as_object() {
            Some(o)
                if o.get("name").is_some_and(Value::is_string)
                    && o.get("description").is_some_and(Value::is_string) =>
            {
                Ok(serde_json::json!({"name": o["name"], "description": o["description"]}))
            }
            _ => Err(format!(
                "each input needs a string `name` and `description`, not `{}`",
                py_str(input)
            )),
        })
        .collect()
}

/// A legacy skill's `mcp_tools`: a mapping, as written.
fn mcp_tools(value: Option<&Value>) -> Result<Option<Value>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(tools @ Value::Object(_)) => Ok(Some(tools.clone())),
        Some(_) => Err("mcp_tools must be a dictionary or None".into()),
    }
}

/// `${name}` placeholders mark a task skill as needing input.
fn has_variable(content: &str) -> bool {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    PATTERN
        .get_or_init(|| regex::Regex::new(r"\$\{[a-zA-Z_][a-zA-Z0-9_]*\}").expect("valid regex"))
        .is_match(content)
}

fn parse_paths(value: Option<&Value>) -> Result<Option<Vec<String>>, String> {
    let items: Vec<String> = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.split(',').map(str::to_owned).collect(),
        Some(Value::Array(items)) => items.iter().map(py_str).collect(),
        Some(_) => return Err("`paths` must be a string or a list".into()),
    };
    let cleaned: Vec<String> = items
        .iter()
        .map(|p| py_strip(p).to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    Ok((!cleaned.is_empty()).then_some(cleaned))
}

#[cfg(test)]
mod tests {
    use super::{TriggerKind, skill_from_text};

    #[test]
    fn front_matter_fields() {
        let skill = skill_from_text(
            "---\nname: t\ndescription: d\ninputs:\n  - name: A\n    description: a\nallowed-tools: terminal file_editor\nmetadata:\n  tier: 1\n  ok: true\n---\nUse ${A}.\n",
            "dir",
            "skills/dir/SKILL.md",
            true,
        )
        .expect("valid")
        .0;
        assert_eq!(skill.name, "t");
        assert_eq!(skill.trigger, TriggerKind::Task);
        assert_eq!(skill.triggers, ["/t"]);
        assert!(
            skill
                .content
                .ends_with("before the agent can proceed with the task.")
        );
        assert_eq!(
            skill.allowed_tools,
            Some(vec!["terminal".into(), "file_editor".into()])
        );
        let metadata = skill.metadata.expect("metadata");
        assert_eq!(metadata["tier"], "1");
        assert_eq!(metadata["ok"], "True");
        let path = skill_from_text(
            "---\npaths: 'src/**, , Cargo.toml'\ntriggers: [x]\n---\nb",
            "p",
            "skills/p.md",
            false,
        )
        .expect("valid")
        .0;
        assert_eq!(path.trigger, TriggerKind::Path);
        assert_eq!(path.paths, Some(vec!["src/**".into(), "Cargo.toml".into()]));
        assert!(path.triggers.is_empty() && path.disable_model_invocation);
        assert!(
            skill_from_text("---\ndescription: 123\n---\n", "d", "skills/d.md", false).is_err()
        );
        assert!(skill_from_text("---\ntriggers: foo\n---\n", "d", "skills/d.md", false).is_err());
    }
}
