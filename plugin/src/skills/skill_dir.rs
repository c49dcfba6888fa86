//! What a `SKILL.md`'s folder adds to its skill: the resource files beside it and the MCP
//! servers of its own `.mcp.json`.

use serde_json::Value;

use super::Skill;
use crate::error::PluginError;
use crate::model::{JsonFile, Reader};
use crate::root::PluginRoot;

/// The folders of a `SKILL.md` skill whose files are listed as its resources.
const RESOURCE_DIRECTORIES: [&str; 3] = ["scripts", "references", "assets"];

/// A `SKILL.md` skill with what its folder adds, as the SDK reads it: the files under
/// `scripts/`, `references/` and `assets/`, and (except for a plugin-root `SKILL.md`,
/// whose `.mcp.json` is the plugin's) the servers of a `.mcp.json` beside it. Only
/// `${SKILL_ROOT}` is expanded there: the SDK also reads the loading process's environment,
/// which would make the set differ between machines. An unreadable `.mcp.json` drops the
/// skill, as it does in the SDK.
pub(super) fn with_skill_dir(
    reader: &mut Reader<'_>,
    mut skill: Skill,
    rel: &str,
    is_skill_md: bool,
) -> Result<Skill, String> {
    let root = reader.root();
    if !is_skill_md {
        return Ok(skill);
    }
    let dir = rel.rsplit_once('/').map_or("", |(dir, _)| dir);
    let fail = |e: PluginError| e.to_string();
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
            && let Some(read) = reader.json_utf8(&mcp).map_err(fail)?
            && let JsonFile::Text { text, value } = &*read
        {
            // The SDK reads it with Python's `json` (`utf-8`): a byte-order mark is refused.
            let config = match value {
                Ok(value) if !text.starts_with('\u{feff}') => value.clone(),
                _ => serde_json::from_str::<Value>(text)
                    .map_err(|e| format!("`{mcp}` is not valid JSON: {e}"))?,
            };
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
) -> Result<(), PluginError> {
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
