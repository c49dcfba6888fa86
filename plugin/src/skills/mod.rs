//! Skills and commands, with the OpenHands SDK's discovery order and front-matter rules.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::error::PluginError;
use crate::model::{Markdown, Reader};
use crate::root::PluginRoot;

mod parse;
mod skill_dir;

use parse::skill_from_text;
use skill_dir::with_skill_dir;

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

/// Loads the skills of a plugin in the SDK's order: `skills/<dir>/SKILL.md` and
/// `skills/*.md` sorted by path (folder by folder), or a root `SKILL.md` when there is no
/// `skills/`. A skill file that cannot be read is skipped with a warning.
pub fn load_skills(
    reader: &mut Reader<'_>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Skill>, PluginError> {
    let root = reader.root();
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
            let Some(skill) = load_skill_file(reader, &rel, is_skill_md, warnings)? else {
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
        Some(file) => Ok(load_skill_file(reader, &file, true, warnings)?
            .into_iter()
            .collect()),
        None => Ok(Vec::new()),
    }
}

/// The skills a marketplace entry names (`skills`: a skill's folder holding a `SKILL.md`,
/// a folder of such folders, or a `.md` file), in the order it names them; a later skill
/// of the same name replaces an earlier one, as Claude Code's install does.
pub fn load_skill_paths(
    reader: &mut Reader<'_>,
    paths: &[String],
    warnings: &mut Vec<String>,
) -> Result<Vec<Skill>, PluginError> {
    let root = reader.root();
    let mut skills: Vec<Skill> = Vec::new();
    let add = |skill: Skill, skills: &mut Vec<Skill>| match skills
        .iter_mut()
        .find(|s| s.name == skill.name)
    {
        Some(existing) => *existing = skill,
        None => skills.push(skill),
    };
    for path in paths {
        let dir = if path == "." { "" } else { path.as_str() };
        if root.is_dir(path)? {
            if let Some(file) = find_skill_md(root, dir)? {
                if let Some(skill) = load_skill_file(reader, &file, true, warnings)? {
                    add(skill, &mut skills);
                }
                continue;
            }
            for entry in root.list(path)? {
                let sub = if dir.is_empty() {
                    entry
                } else {
                    format!("{dir}/{entry}")
                };
                if root.is_dir(&sub)?
                    && let Some(file) = find_skill_md(root, &sub)?
                    && let Some(skill) = load_skill_file(reader, &file, true, warnings)?
                {
                    add(skill, &mut skills);
                }
            }
        } else if root.is_file(path)? && path.to_lowercase().ends_with(".md") {
            let is_skill_md = path.to_lowercase().ends_with("skill.md");
            if let Some(skill) = load_skill_file(reader, path, is_skill_md, warnings)? {
                add(skill, &mut skills);
            }
        } else {
            warnings.push(format!(
                "plugin `{}`: its marketplace entry names skill `{path}`, which is not a skill's folder or file",
                root.plugin()
            ));
        }
    }
    Ok(skills)
}

/// The first file (sorted) in `dir` (`""` for the plugin's root) named `skill.md` in any
/// case, as a path relative to the plugin.
fn find_skill_md(root: &PluginRoot, dir: &str) -> Result<Option<String>, PluginError> {
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
    reader: &mut Reader<'_>,
    rel: &str,
    is_skill_md: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<Skill>, PluginError> {
    let root = reader.root();
    let read = reader.markdown(rel)?;
    let text = match read.as_deref() {
        Some(Markdown::Text(text)) => text,
        None => return Ok(None),
        Some(Markdown::NotUtf8(_)) => {
            warnings.push(format!(
                "plugin `{}`: skipped skill `{rel}`: not UTF-8 text",
                root.plugin()
            ));
            return Ok(None);
        }
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
            content: text.to_string(),
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
    match skill_from_text(text, &default_name, rel, is_skill_md)
        .and_then(|(skill, chars)| Ok((with_skill_dir(reader, skill, rel, is_skill_md)?, chars)))
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
    use super::{MAX_DESCRIPTION_CHARS, compare_paths, truncate_description};

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
}
