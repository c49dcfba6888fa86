//! Skills and commands, with the OpenHands SDK's discovery order and front-matter rules.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::error::RuntimeError;
use crate::frontmatter::{self, py_strip};
use crate::pystr::{lax_bool, py_str};
use crate::root::PluginRoot;

/// The longest description kept whole; longer ones are cut in the middle, as the SDK does.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// How a skill is activated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerKind {
    /// Always in context.
    Always,
    /// When a keyword appears in the user's message.
    Keyword,
    /// A task the user starts with `/name`, possibly with inputs.
    Task,
    /// When a file matching `paths` is touched.
    Path,
}

impl TriggerKind {
    /// The name used in the plugin set.
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerKind::Always => "always",
            TriggerKind::Keyword => "keyword",
            TriggerKind::Task => "task",
            TriggerKind::Path => "path",
        }
    }
}

/// One skill of a plugin (commands become skills too).
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Its name; later plugins win name clashes.
    pub name: String,
    /// Its description, at most [`MAX_DESCRIPTION_CHARS`] characters.
    pub description: Option<String>,
    /// The body the agent reads.
    pub content: String,
    /// How it is activated.
    pub trigger: TriggerKind,
    /// Keywords for keyword and task skills (`/name` for tasks and commands).
    pub triggers: Vec<String>,
    /// Path globs of a path-triggered skill.
    pub paths: Option<Vec<String>>,
    /// A task skill's inputs (`{name, description}` objects); empty for other skills.
    pub inputs: Vec<Value>,
    /// `allowed-tools`.
    pub allowed_tools: Option<Vec<String>>,
    /// `license`.
    pub license: Option<String>,
    /// `compatibility`.
    pub compatibility: Option<String>,
    /// `metadata`, values as Python `str()` renders them.
    pub metadata: Option<Map<String, Value>>,
    /// `disable-model-invocation` (forced on for path skills).
    pub disable_model_invocation: bool,
    /// The file it came from, relative to the plugin folder.
    pub source: String,
    /// `agentskills` (a `SKILL.md`), `repo` (always on), `knowledge` (triggered), `command`.
    pub kind: &'static str,
    /// The skill's own MCP servers, as written: a `SKILL.md`'s `.mcp.json` beside it (with
    /// `${SKILL_ROOT}` expanded) or a legacy skill's `mcp_tools` front matter.
    pub mcp_tools: Option<Value>,
    /// A `SKILL.md` skill's `scripts/`, `references/` and `assets/` files, as
    /// `{skill_root, scripts, references, assets}` with `skill_root` relative to the plugin;
    /// `None` when it has none.
    pub resources: Option<Value>,
}

/// The folders of a `SKILL.md` skill whose files are listed as its resources.
const RESOURCE_DIRECTORIES: [&str; 3] = ["scripts", "references", "assets"];

/// Loads the skills of a plugin in the SDK's order: `skills/<dir>/SKILL.md` and
/// `skills/*.md` sorted by path (folder by folder), or a root `SKILL.md` when there is no
/// `skills/`. A skill file that cannot be read is skipped with a warning.
pub fn load_skills(
    root: &PluginRoot,
    warnings: &mut Vec<String>,
) -> Result<Vec<Skill>, RuntimeError> {
    if root.exists("skills")? {
        if !root.is_dir("skills")? {
            warnings.push(format!(
                "plugin `{}`: `skills` is not a folder; no skills loaded from it",
                root.plugin()
            ));
            return Ok(Vec::new());
        }
        // The SDK files skills in three maps by name (SKILL.md, always-on, triggered): a
        // later file of the same name in the same map replaces an earlier one.
        let mut agent: Vec<Skill> = Vec::new();
        let mut repo: Vec<Skill> = Vec::new();
        let mut knowledge: Vec<Skill> = Vec::new();
        let mut candidates: Vec<(String, bool)> = Vec::new();
        for entry in root.list("skills")? {
            let dir = format!("skills/{entry}");
            if root.is_dir(&dir)?
                && let Some(skill_md) = find_skill_md(root, &dir)?
            {
                candidates.push((skill_md, true));
            }
        }
        for entry in root.list("skills")? {
            let rel = format!("skills/{entry}");
            if entry.ends_with(".md")
                && entry.to_lowercase() != "readme.md"
                && root.is_file(&rel)?
            {
                candidates.push((rel, entry.to_lowercase() == "skill.md"));
            }
        }
        for (rel, is_skill_md) in candidates {
            let Some(skill) = load_skill_file(root, &rel, is_skill_md, warnings)? else {
                continue;
            };
            let bucket = if rel
                .rsplit('/')
                .next()
                .is_some_and(|f| f.eq_ignore_ascii_case("skill.md"))
            {
                &mut agent
            } else if skill.trigger == TriggerKind::Always {
                &mut repo
            } else {
                &mut knowledge
            };
            match bucket.iter_mut().find(|s| s.name == skill.name) {
                Some(existing) => *existing = skill,
                None => bucket.push(skill),
            }
        }
        let mut skills: Vec<Skill> = agent.into_iter().chain(repo).chain(knowledge).collect();
        skills.sort_by(|a, b| compare_paths(&a.source, &b.source));
        return Ok(skills);
    }
    match find_skill_md(root, "")? {
        Some(file) => Ok(load_skill_file(root, &file, true, warnings)?
            .into_iter()
            .collect()),
        None => Ok(Vec::new()),
    }
}

/// The first file (sorted) in `dir` (`""` for the plugin's root) named `skill.md` in any
/// case, as a path relative to the plugin.
fn find_skill_md(root: &PluginRoot, dir: &str) -> Result<Option<String>, RuntimeError> {
    for name in root.list(if dir.is_empty() { "." } else { dir })? {
        let rel = if dir.is_empty() {
            name.clone()
        } else {
            format!("{dir}/{name}")
        };
        if name.to_lowercase() == "skill.md" && root.is_file(&rel)? {
            return Ok(Some(rel));
        }
    }
    Ok(None)
}

/// Python's `PurePath` order: component by component.
pub fn compare_paths(a: &str, b: &str) -> Ordering {
    a.split('/').cmp(b.split('/'))
}

const THIRD_PARTY: [(&str, &str); 4] = [
    ("agents.md", "agents"),
    ("agent.md", "agents"),
    ("claude.md", "claude"),
    ("gemini.md", "gemini"),
];

fn load_skill_file(
    root: &PluginRoot,
    rel: &str,
    is_skill_md: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<Skill>, RuntimeError> {
    let text = match root.read_text(rel) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(RuntimeError::NotUtf8 { .. }) => {
            warnings.push(format!(
                "plugin `{}`: skipped skill `{rel}`: not UTF-8 text",
                root.plugin()
            ));
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let file_name = rel.rsplit('/').next().unwrap_or(rel);
    if !is_skill_md
        && let Some((_, name)) = THIRD_PARTY
            .iter()
            .find(|(f, _)| *f == file_name.to_lowercase())
    {
        // Agent instruction files from other tools are taken verbatim, always on.
        return Ok(Some(Skill {
            name: (*name).to_owned(),
            description: None,
            content: text,
            trigger: TriggerKind::Always,
            triggers: Vec::new(),
            paths: None,
            inputs: Vec::new(),
            allowed_tools: None,
            license: None,
            compatibility: None,
            metadata: None,
            disable_model_invocation: false,
            source: rel.to_owned(),
            kind: "repo",
            mcp_tools: None,
            resources: None,
        }));
    }
    let default_name = if is_skill_md {
        // The folder's name, or the plugin's for a root SKILL.md.
        let parent = rel.rsplit_once('/').map(|(p, _)| p);
        match parent.and_then(|p| p.rsplit('/').next()) {
            Some(dir) => dir.to_owned(),
            None => root.plugin().to_owned(),
        }
    } else {
        let relative = rel.strip_prefix("skills/").unwrap_or(rel);
        relative.strip_suffix(".md").unwrap_or(relative).to_owned()
    };
    match skill_from_text(&text, &default_name, rel, is_skill_md)
        .and_then(|(skill, chars)| Ok((with_skill_dir(root, skill, rel, is_skill_md)?, chars)))
    {
        Ok((skill, description_chars)) => {
            if let Some(note) = truncation_note(description_chars, &skill.name, rel) {
                warnings.push(format!("plugin `{}`: {note}", root.plugin()));
            }
            Ok(Some(skill))
        }
        Err(why) => {
            warnings.push(format!(
                "plugin `{}`: skipped skill `{rel}`: {why}",
                root.plugin()
            ));
            Ok(None)
        }
    }
}

fn skill_from_text(
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
    let optional_string = |key: &str| -> Result<Option<String>, String> {
        match meta.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("`{key}` must be a string, not `{}`", py_str(other))),
        }
    };
    let description = optional_string("description")?;
    let license = optional_string("license")?;
    let compatibility = optional_string("compatibility")?;
    let metadata = match meta.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(
            map.iter()
                .map(|(k, v)| (k.clone(), Value::String(py_str(v))))
                .collect(),
        ),
        Some(_) => return Err("`metadata` must be a mapping".into()),
    };
    let allowed_tools = match meta
        .get("allowed-tools")
        .or_else(|| meta.get("allowed_tools"))
    {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.split_whitespace().map(str::to_owned).collect()),
        Some(Value::Array(items)) => Some(items.iter().map(py_str).collect()),
        Some(other) => {
            return Err(format!(
                "`allowed-tools` must be a string or a list, not `{}`",
                py_str(other)
            ));
        }
    };
    let mut disable_model_invocation = match meta
        .get("disable-model-invocation")
        .or_else(|| meta.get("disable_model_invocation"))
    {
        None | Some(Value::Null) => false,
        Some(value) => lax_bool(value).ok_or("`disable-model-invocation` must be a boolean")?,
    };
    let mut triggers = match meta.get("triggers") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|t| match t {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("triggers must be strings, not `{}`", py_str(other))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("triggers must be a list of strings".into()),
    };
    let paths = parse_paths(meta.get("paths"))?;
    let mut content = doc.content;
    let mut inputs = Vec::new();
    let trigger = if let Some(paths) = &paths {
        let _ = paths;
        triggers.clear();
        disable_model_invocation = true;
        TriggerKind::Path
    } else if meta.contains_key("inputs") {
        let task = format!("/{name}");
        if !triggers.contains(&task) {
            triggers.push(task);
        }
        let list = match meta.get("inputs") {
            Some(Value::Array(items)) => items.clone(),
            Some(Value::Null) | None => Vec::new(),
            Some(_) => return Err("inputs must be a list".into()),
        };
        // The SDK's `InputMetadata` keeps `name` and `description` and ignores the rest.
        let list = list
            .iter()
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
            .collect::<Result<Vec<_>, _>>()?;
        let asks = !list.is_empty() || has_variable(&content);
        const ASK: &str = "\n\nIf the user didn't provide any of these variables, ask the user to provide them first before the agent can proceed with the task.";
        if asks && !content.is_empty() && !content.contains(ASK) {
            content.push_str(ASK);
        }
        inputs = list;
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
        triggers: if trigger == TriggerKind::Path {
            Vec::new()
        } else {
            triggers
        },
        paths,
        inputs,
        allowed_tools,
        license,
        compatibility,
        metadata,
        disable_model_invocation,
        source: rel.to_owned(),
        kind,
        mcp_tools: match meta.get("mcp_tools") {
            // A SKILL.md's servers come from its `.mcp.json` (see `with_skill_dir`).
            _ if is_skill_md => None,
            None | Some(Value::Null) => None,
            Some(tools @ Value::Object(_)) => Some(tools.clone()),
            Some(_) => return Err("mcp_tools must be a dictionary or None".into()),
        },
        resources: None,
    };
    Ok((skill, description_chars))
}

/// A `SKILL.md` skill with what its folder adds, as the SDK reads it: the files under
/// `scripts/`, `references/` and `assets/`, and (except for a plugin-root `SKILL.md`,
/// whose `.mcp.json` is the plugin's) the servers of a `.mcp.json` beside it. Only
/// `${SKILL_ROOT}` is expanded there: the SDK also reads the loading process's environment,
/// which would make the set differ between machines. An unreadable `.mcp.json` drops the
/// skill, as it does in the SDK.
fn with_skill_dir(
    root: &PluginRoot,
    mut skill: Skill,
    rel: &str,
    is_skill_md: bool,
) -> Result<Skill, String> {
    if !is_skill_md {
        return Ok(skill);
    }
    let dir = rel.rsplit_once('/').map_or("", |(dir, _)| dir);
    let fail = |e: RuntimeError| e.to_string();
    let mut lists = Vec::with_capacity(RESOURCE_DIRECTORIES.len());
    for kind in RESOURCE_DIRECTORIES {
        let folder = if dir.is_empty() {
            kind.to_owned()
        } else {
            format!("{dir}/{kind}")
        };
        let mut files = Vec::new();
        if root.is_dir(&folder).map_err(fail)? {
            list_files(root, &folder, "", &mut files).map_err(fail)?;
        }
        files.sort();
        lists.push(files);
    }
    if lists.iter().any(|files| !files.is_empty()) {
        let [scripts, references, assets] = <[Vec<String>; 3]>::try_from(lists)
            .unwrap_or_else(|_| unreachable!("three resource folders"));
        skill.resources = Some(serde_json::json!({
            "skill_root": if dir.is_empty() { "." } else { dir },
            "scripts": scripts,
            "references": references,
            "assets": assets,
        }));
    }
    if !dir.is_empty() {
        let mcp = format!("{dir}/.mcp.json");
        if root.is_file(&mcp).map_err(fail)?
            && let Some(text) = root.read_text(&mcp).map_err(fail)?
        {
            let config: Value = serde_json::from_str(&text)
                .map_err(|e| format!("`{mcp}` is not valid JSON: {e}"))?;
            if !config.is_object() {
                return Err(format!("`{mcp}` must hold a JSON object"));
            }
            let skill_root = root.exposed().join(dir);
            skill.mcp_tools = Some(expand_skill_root(config, &skill_root.to_string_lossy()));
        }
    }
    Ok(skill)
}

/// Every file below `folder` (following links that stay in the plugin), as paths relative
/// to it.
fn list_files(
    root: &PluginRoot,
    folder: &str,
    prefix: &str,
    out: &mut Vec<String>,
) -> Result<(), RuntimeError> {
    for name in root.list(folder)? {
        let rel = format!("{folder}/{name}");
        let shown = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if root.is_dir(&rel)? {
            list_files(root, &rel, &shown, out)?;
        } else if root.is_file(&rel)? {
            out.push(shown);
        }
    }
    Ok(())
}

/// `${SKILL_ROOT}` replaced by `skill_root` in every string of a skill's `.mcp.json`.
fn expand_skill_root(value: Value, skill_root: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("${SKILL_ROOT}", skill_root)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| expand_skill_root(v, skill_root))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, expand_skill_root(v, skill_root)))
                .collect(),
        ),
        other => other,
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

/// The warning the SDK logs when it cuts a description of `chars` characters, naming
/// skill and file.
pub(crate) fn truncation_note(chars: usize, name: &str, source: &str) -> Option<String> {
    (chars > MAX_DESCRIPTION_CHARS).then(|| {
        format!(
            "skill `{name}` (`{source}`): description truncated from {chars} to {MAX_DESCRIPTION_CHARS} characters"
        )
    })
}

/// Cuts a description over the limit in the middle, as the SDK does, with a notice that
/// points at the skill. The SDK names the absolute path; berth names `plugin-relative`
/// source so the plugin set is the same in every store.
pub fn truncate_description(description: &str, source: &str) -> String {
    let chars: Vec<char> = description.chars().collect();
    if chars.len() <= MAX_DESCRIPTION_CHARS {
        return description.to_owned();
    }
    let notice = format!(
        "<response clipped><NOTE>Due to the max output limit, only part of the full description is shown. You can view the complete skill content at {source}.</NOTE>"
    );
    let notice_len = notice.chars().count();
    if notice_len >= MAX_DESCRIPTION_CHARS {
        return notice.chars().take(MAX_DESCRIPTION_CHARS).collect();
    }
    let available = MAX_DESCRIPTION_CHARS - notice_len;
    let head = available.div_ceil(2);
    let tail = available - head;
    let mut out: String = chars[..head].iter().collect();
    out.push_str(&notice);
    out.extend(&chars[chars.len() - tail..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_sort_component_by_component() {
        let mut paths = vec![
            "a.md",
            "a-b.md",
            "a-b/SKILL.md",
            "a/SKILL.md",
            "B/SKILL.md",
            ".hidden.md",
        ];
        paths.sort_by(|a, b| compare_paths(a, b));
        assert_eq!(
            paths,
            [
                ".hidden.md",
                "B/SKILL.md",
                "a/SKILL.md",
                "a-b/SKILL.md",
                "a-b.md",
                "a.md"
            ]
        );
    }

    #[test]
    fn long_descriptions_are_cut_in_the_middle() {
        let long = "x".repeat(1500);
        let cut = truncate_description(&long, "skills/s/SKILL.md");
        assert_eq!(cut.chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(cut.contains("skills/s/SKILL.md"));
        let exact = "y".repeat(1024);
        assert_eq!(truncate_description(&exact, "x"), exact);
    }

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
