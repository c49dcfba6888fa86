//! Sub-agent definitions (`agents/*.md`), loaded field by field as the OpenHands SDK's
//! `AgentDefinition.load` loads them.

use serde_json::{Map, Value, json};

use crate::error::PluginError;
use crate::frontmatter::{self, py_strip};
use crate::hooks::{HookMatcher, hooks_from_value, matchers_to_json};
use crate::manifest::Format;
use crate::mcp::{McpServer, agent_servers};
use crate::model::{Markdown, Reader, layout};
use crate::pystr::py_str;

/// One sub-agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// `name` (default: the file's stem).
    pub name: String,
    /// `description`.
    pub description: String,
    /// `model` (default `inherit`).
    pub model: String,
    /// `color`.
    pub color: Option<String>,
    /// `tools`.
    pub tools: Vec<String>,
    /// `skills`: skill names (a comma-separated string or a list).
    pub skills: Vec<String>,
    /// `permission_mode`, lower-cased; `None` inherits the parent's policy.
    pub permission_mode: Option<String>,
    /// `max_iteration_per_run` (positive).
    pub max_iteration_per_run: Option<u64>,
    /// `max_budget_per_run` in USD (positive).
    pub max_budget_per_run: Option<f64>,
    /// `mcp_servers` (or `mcp_config`); `None` when the file gives none.
    pub mcp_servers: Option<Vec<(String, McpServer)>>,
    /// `hooks`, per event; `None` when the file gives none.
    pub hooks: Option<Vec<(&'static str, Vec<HookMatcher>)>>,
    /// `profile_store_dir`.
    pub profile_store_dir: Option<String>,
    /// `condenser`: `None` for the default, else the SDK's condenser spec
    /// (`{"kind": "NoOpCondenser"}` for `none`/`off`/`false`).
    pub condenser: Option<Map<String, Value>>,
    /// The `<example>` blocks of the description, trimmed.
    pub when_to_use_examples: Vec<String>,
    /// Every other front-matter key, as written.
    pub metadata: Map<String, Value>,
    /// The system prompt: the file's body, trimmed.
    pub content: String,
    /// The file, relative to the plugin folder.
    pub source: String,
}

/// The front-matter keys the SDK reads into fields; the rest go to `metadata`.
const KNOWN_FIELDS: [&str; 14] = [
    "name",
    "description",
    "model",
    "color",
    "tools",
    "skills",
    "max_iteration_per_run",
    "max_budget_per_run",
    "hooks",
    "profile_store_dir",
    "mcp_config",
    "mcp_servers",
    "permission_mode",
    "condenser",
];

const PERMISSION_MODES: [&str; 3] = ["always_confirm", "confirm_risky", "never_confirm"];

/// Loads `agents/*.md` (Claude Code) or `dev.openhands/agents/*.md` (Agent Plugins), by file
/// name. A file the SDK would not load is skipped with a warning naming it and why.
pub fn load_agents(
    reader: &mut Reader<'_>,
    format: Format,
    warnings: &mut Vec<String>,
) -> Result<Vec<Agent>, PluginError> {
    let root = reader.root();
    let dir = layout(format).agents;
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
        agents.extend(agent_at(reader, &rel, &entry, warnings)?);
    }
    Ok(agents)
}

/// The agents a marketplace entry names (`agents`: files, or folders of `*.md`), in the
/// order it names them.
pub(crate) fn load_agent_paths(
    reader: &mut Reader<'_>,
    paths: &[String],
    warnings: &mut Vec<String>,
) -> Result<Vec<Agent>, PluginError> {
    let root = reader.root();
    let mut agents = Vec::new();
    for path in paths {
        if root.is_dir(path)? {
            for entry in root.list(path)? {
                let rel = format!("{path}/{entry}");
                if entry.to_lowercase().ends_with(".md")
                    && !entry.eq_ignore_ascii_case("readme.md")
                    && root.is_file(&rel)?
                {
                    agents.extend(agent_at(reader, &rel, &entry, warnings)?);
                }
            }
        } else if root.is_file(path)? && path.to_lowercase().ends_with(".md") {
            let file = path.rsplit('/').next().unwrap_or(path);
            agents.extend(agent_at(reader, path, file, warnings)?);
        } else {
            warnings.push(format!(
                "plugin `{}`: its marketplace entry names agent `{path}`, which is not a `.md` file or a folder of them",
                root.plugin()
            ));
        }
    }
    Ok(agents)
}

/// The agent in file `rel` (named `entry` in its folder), or `None` with a warning.
fn agent_at(
    reader: &mut Reader<'_>,
    rel: &str,
    entry: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Agent>, PluginError> {
    let root = reader.root();
    {
        let mut skip = |why: String| {
            warnings.push(format!(
                "plugin `{}`: skipped agent `{rel}`: {why}",
                root.plugin()
            ))
        };
        let read = reader.markdown(rel)?;
        let text = match read.as_deref() {
            Some(Markdown::Text(text)) => text,
            None => return Ok(None),
            Some(Markdown::NotUtf8(_)) => {
                skip("not UTF-8 text".into());
                return Ok(None);
            }
        };
        let stem = &entry[..entry.len() - 3];
        let mut dropped = Vec::new();
        match agent_from_text(
            text,
            stem,
            rel,
            &root.exposed().to_string_lossy(),
            &mut dropped,
        ) {
            Ok(agent) => {
                for why in dropped {
                    skip(why);
                }
                Ok(Some(agent))
            }
            Err(why) => {
                skip(why);
                Ok(None)
            }
        }
    }
}

/// One agent file's text as the SDK reads it. `root` is where plugin-root variables in its
/// MCP servers and hooks point; hook entries that are dropped are described in `dropped`.
fn agent_from_text(
    text: &str,
    stem: &str,
    rel: &str,
    root: &str,
    dropped: &mut Vec<String>,
) -> Result<Agent, String> {
    let doc = frontmatter::parse(text)?;
    let fm = &doc.meta;
    let string_or = |key: &str, default: &str| fm.get(key).map_or(default.to_owned(), py_str);
    let description = string_or("description", "");
    let permission_mode = permission_mode(fm.get("permission_mode"))?;
    let max_iteration_per_run = max_iterations(fm.get("max_iteration_per_run"))?;
    let max_budget_per_run = max_budget(fm.get("max_budget_per_run"))?;
    let mcp_servers = match fm.get("mcp_config").or_else(|| fm.get("mcp_servers")) {
        None | Some(Value::Null) => None,
        Some(value) => Some(agent_servers(value, root)?),
    };
    let profile_store_dir = match fm.get("profile_store_dir") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("`profile_store_dir` must be a string".into()),
    };
    let hooks = match fm.get("hooks") {
        Some(value @ Value::Object(_)) => {
            let mut warn = |why: String| dropped.push(format!("`hooks`: {why}"));
            Some(hooks_from_value(value.clone(), root, &mut warn))
        }
        _ => None,
    };
    Ok(Agent {
        name: string_or("name", stem),
        model: string_or("model", "inherit"),
        color: fm.get("color").filter(|v| !v.is_null()).map(py_str),
        tools: match fm.get("tools") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().map(py_str).collect(),
            _ => Vec::new(),
        },
        skills: skill_names(fm.get("skills")),
        permission_mode,
        max_iteration_per_run,
        max_budget_per_run,
        mcp_servers,
        hooks,
        profile_store_dir,
        condenser: condenser(fm.get("condenser"))?,
        when_to_use_examples: examples(&description),
        metadata: fm
            .iter()
            .filter(|(k, _)| !KNOWN_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        description,
        content: py_strip(&doc.content).to_owned(),
        source: rel.to_owned(),
    })
}

/// `permission_mode`, lower-cased; one of [`PERMISSION_MODES`].
fn permission_mode(value: Option<&Value>) -> Result<Option<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(raw) => {
            let mode = py_strip(&py_str(raw)).to_lowercase();
            if !PERMISSION_MODES.contains(&mode.as_str()) {
                return Err(format!(
                    "`permission_mode` `{}` is not one of {}",
                    py_str(raw),
                    PERMISSION_MODES.join(", ")
                ));
            }
            Ok(Some(mode))
        }
    }
}

/// `max_iteration_per_run`: a whole number (or a string of one) greater than 0.
fn max_iterations(value: Option<&Value>) -> Result<Option<u64>, String> {
    let n = match value {
        Some(Value::String(s)) => Some(py_int(s).ok_or(format!(
            "`max_iteration_per_run` `{s}` is not a whole number"
        ))?),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.as_i64().or(Some(i64::MAX)),
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        _ => None,
    };
    match n {
        Some(n) if n <= 0 => Err(format!(
            "`max_iteration_per_run` must be greater than 0, not {n}"
        )),
        other => Ok(other.map(|n| n.unsigned_abs())),
    }
}

/// `max_budget_per_run` in USD: a number (or a string of one) greater than 0; infinity is
/// no budget.
fn max_budget(value: Option<&Value>) -> Result<Option<f64>, String> {
    let x = match value {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => {
            Some(py_float(s).ok_or(format!("`max_budget_per_run` `{s}` is not a number"))?)
        }
        _ => None,
    };
    match x {
        Some(x) if x.is_nan() || x <= 0.0 => Err(format!(
            "`max_budget_per_run` must be greater than 0, not {x}"
        )),
        // JSON cannot write infinity, and the SDK's dump writes null.
        Some(x) if x.is_infinite() => Ok(None),
        other => Ok(other),
    }
}

/// `skills`: skill names, as a comma-separated string or a list.
fn skill_names(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => s
            .split(',')
            .map(|part| py_strip(part).to_owned())
            .filter(|part| !part.is_empty())
            .collect(),
        Some(Value::Array(items)) => items.iter().map(py_str).collect(),
        _ => Vec::new(),
    }
}

/// The SDK's `condenser` rules: absent, `default` or `true` keep the default; `none`,
/// `off`, `false` and the like turn condensation off; a mapping is a condenser spec.
fn condenser(value: Option<&Value>) -> Result<Option<Map<String, Value>>, String> {
    let off = || {
        let mut spec = Map::new();
        spec.insert("kind".into(), json!("NoOpCondenser"));
        Ok(Some(spec))
    };
    match value {
        None | Some(Value::Null) | Some(Value::Bool(true)) => Ok(None),
        Some(Value::Bool(false)) => off(),
        Some(Value::String(s)) => match py_strip(s).to_lowercase().as_str() {
            "" | "default" | "inherit" => Ok(None),
            "none" | "off" | "false" | "no" | "disable" | "disabled" => off(),
            _ => Err(format!(
                "`condenser` `{s}` is not `default`, `none` or a condenser mapping"
            )),
        },
        Some(Value::Object(map)) if map.get("kind").is_some_and(Value::is_string) => {
            Ok(Some(map.clone()))
        }
        Some(_) => Err("`condenser` must be `default`, `none` or a mapping with a `kind`".into()),
    }
}

/// The trimmed, non-empty `<example>…</example>` blocks of a description (any case,
/// across lines), as the SDK extracts them.
fn examples(description: &str) -> Vec<String> {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    PATTERN
        .get_or_init(|| regex::Regex::new(r"(?is)<example>(.*?)</example>").expect("valid regex"))
        .captures_iter(description)
        .map(|c| py_strip(&c[1]).to_owned())
        .filter(|e| !e.is_empty())
        .collect()
}

/// Python's `int(text)`: surrounding whitespace, a sign, digits with single underscores.
fn py_int(text: &str) -> Option<i64> {
    let t = py_strip(text);
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let valid = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !valid {
        return None;
    }
    digits
        .replace('_', "")
        .parse::<i64>()
        .ok()
        .map(|n| sign * n)
}

/// Python's `float(text)`: what Rust parses, plus surrounding whitespace, `inf`/`nan` in
/// any case and underscores between digits.
fn py_float(text: &str) -> Option<f64> {
    let t = py_strip(text);
    if t.contains("__") || t.starts_with('_') || t.ends_with('_') {
        return None;
    }
    t.replace('_', "").parse::<f64>().ok()
}

impl Agent {
    /// The agent as the plugin set writes it (without `plugin`).
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "content": self.content,
            "model": self.model,
            "color": self.color,
            "tools": self.tools,
            "skills": self.skills,
            "permission_mode": self.permission_mode,
            "max_iteration_per_run": self.max_iteration_per_run,
            "max_budget_per_run": self.max_budget_per_run,
            "mcp_servers": self.mcp_servers.as_ref().map(|servers| {
                servers
                    .iter()
                    .map(|(name, s)| (name.clone(), s.to_json()))
                    .collect::<Map<String, Value>>()
            }),
            "hooks": self.hooks.as_ref().map(|events| {
                events
                    .iter()
                    .map(|(event, matchers)| ((*event).to_owned(), matchers_to_json(matchers.iter().map(|m| (m, None)))))
                    .collect::<Map<String, Value>>()
            }),
            "profile_store_dir": self.profile_store_dir,
            "condenser": self.condenser,
            "when_to_use_examples": self.when_to_use_examples,
            "metadata": self.metadata,
            "source": self.source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Agent, agent_from_text, json, py_float, py_int};

    fn agent(text: &str) -> Result<Agent, String> {
        agent_from_text(text, "stem", "agents/stem.md", "/root", &mut Vec::new())
    }

    #[test]
    fn python_numbers() {
        assert_eq!(py_int(" +7 "), Some(7));
        assert_eq!(py_int("1_000"), Some(1000));
        assert_eq!(py_int("7.0"), None);
        assert_eq!(py_int("1__0"), None);
        assert_eq!(py_float(" 0.5 "), Some(0.5));
        assert_eq!(py_float("1e3"), Some(1000.0));
        assert!(py_float("inf").is_some_and(f64::is_infinite));
        assert_eq!(py_float("x"), None);
    }

    #[test]
    fn fields_follow_the_sdk() {
        let a = agent(
            "---\ndescription: 'Use <EXAMPLE> a\n</example> and <example> </example>'\ntools: 5\nskills: ' x, ,y'\npermission_mode: ' Never_Confirm '\nmax_iteration_per_run: '3'\ncondenser: off\nmaxTurns: 4\n---\n\n  Prompt.  \n",
        )
        .expect("valid");
        assert_eq!(a.name, "stem");
        assert_eq!(a.when_to_use_examples, ["a"]);
        assert!(a.tools.is_empty());
        assert_eq!(a.skills, ["x", "y"]);
        assert_eq!(a.permission_mode.as_deref(), Some("never_confirm"));
        assert_eq!(a.max_iteration_per_run, Some(3));
        assert_eq!(
            a.condenser,
            json!({"kind": "NoOpCondenser"}).as_object().cloned()
        );
        assert_eq!(
            a.metadata,
            json!({"maxTurns": 4}).as_object().cloned().expect("map")
        );
        assert_eq!(a.content, "Prompt.");
        assert!(agent("---\nmax_iteration_per_run: 0\n---\n").is_err());
        assert!(agent("---\nmax_iteration_per_run: x\n---\n").is_err());
        assert!(agent("---\nmax_budget_per_run: -1\n---\n").is_err());
        assert!(agent("---\ncondenser: sometimes\n---\n").is_err());
        assert!(agent("---\nmcp_servers: [a]\n---\n").is_err());
        assert!(agent("---\nprofile_store_dir: 3\n---\n").is_err());
        let float_iterations = agent("---\nmax_iteration_per_run: 2.5\n---\n").expect("valid");
        assert_eq!(float_iterations.max_iteration_per_run, None);
    }
}
