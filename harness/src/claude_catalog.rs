//! What a plugin's entry in berth's marketplace for Claude Code says beyond its name,
//! source and version: the locked definition of its own marketplace entry (so Claude Code
//! builds it from berth's folder as from the original) and what berth wrote there before
//! (what Claude Code would refuse is `claude_rules.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::entry::{Kind, children, copy_of};
use super::files::string_or_list;
use super::guard::read_unlinked;
use super::pinned::Overlay;
use super::plan::Planned;
use berth_runtime::set::PluginInfo;

/// What a plugin's catalog entry says beyond name, source and version: its marketplace
/// entry's `strict` and component fields, as the lock pinned them, so Claude Code builds
/// the plugin from berth's marketplace as it did from the original.
pub(super) fn definition_fields(info: &PluginInfo) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(definition) = &info.locked.definition {
        if !definition.strict {
            out.insert("strict".to_owned(), json!(false));
        }
        for (key, value) in &definition.components {
            out.insert(key.clone(), value.clone());
        }
    }
    out
}

/// The entries of the catalog berth wrote before, by name: what they say beyond name,
/// source and version (for installs of other scopes, whose plugins this run does not
/// hold).
pub(super) fn written_entries(
    catalog: &Map<String, Value>,
) -> BTreeMap<String, Map<String, Value>> {
    let mut out = BTreeMap::new();
    for entry in catalog
        .get("plugins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(name), Some(fields)) = (entry["name"].as_str(), entry.as_object()) {
            let mut fields = fields.clone();
            for key in ["name", "source", "version", "description"] {
                fields.remove(key);
            }
            out.insert(name.to_owned(), fields);
        }
    }
    out
}

/// The manifest fields whose values name paths in the plugin.
const PATH_FIELDS: [&str; 7] = [
    "commands",
    "agents",
    "skills",
    "hooks",
    "mcpServers",
    "lspServers",
    "outputStyles",
];

/// Whether `value` is, or lists, a plugin-relative path (`./…`).
fn names_a_path(value: &Value) -> bool {
    match value {
        Value::String(path) => path.starts_with("./"),
        Value::Array(items) => items.iter().any(names_a_path),
        _ => false,
    }
}

/// Whether Claude Code must read the plugin from a real folder in berth's marketplace, not
/// a link to its store entry: its marketplace entry or `.claude-plugin/plugin.json` names a
/// component path (`"skills": ["./extra-skills/"]`), and Claude Code (2.1.328) refuses a
/// named path that resolves outside the marketplace's folder, as one through a link to the
/// store does. It reads a plugin's default folders (`skills/`, `hooks/hooks.json`, …)
/// through the link.
pub(super) fn needs_real_folder(info: &PluginInfo) -> bool {
    let entry = info
        .locked
        .definition
        .as_ref()
        .is_some_and(|d| d.components.values().any(names_a_path));
    entry || {
        let manifest = Path::new(".claude-plugin/plugin.json");
        match read_unlinked(&info.path, manifest) {
            Ok(Some(bytes)) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(map)) => PATH_FIELDS
                    .iter()
                    .any(|key| map.get(*key).is_some_and(names_a_path)),
                _ => false,
            },
            _ => false,
        }
    }
}

/// The skill folders Claude Code leaves out of a plugin at its marketplace's root (a
/// `strict: false` entry with `"source": "./"`, whose folder holds the marketplace's own
/// `.claude-plugin/marketplace.json`): there it reads only the skills the entry lists, not
/// the plugin's `skills/` folder (`anthropics/skills`' `document-skills`). In berth's
/// marketplace every plugin has a folder of its own, where Claude Code reads `skills/`
/// whole, so berth leaves the unlisted ones out of that folder.
pub(super) fn unlisted_root_skills(info: &PluginInfo) -> Vec<PathBuf> {
    let Some(definition) = &info.locked.definition else {
        return Vec::new();
    };
    let Some(listed) = definition
        .components
        .get("skills")
        .filter(|_| !definition.strict)
    else {
        return Vec::new();
    };
    let catalog = Path::new(".claude-plugin/marketplace.json");
    if !std::fs::symlink_metadata(info.path.join(catalog)).is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    let listed: Vec<PathBuf> = string_or_list(listed)
        .iter()
        .map(|p| PathBuf::from(p.trim_start_matches("./").trim_end_matches('/')))
        .collect();
    let Ok(entries) = std::fs::read_dir(info.path.join("skills")) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| Path::new("skills").join(e.file_name()))
        .filter(|rel| !listed.iter().any(|l| l == rel || l.starts_with(rel)))
        .collect();
    out.sort();
    out
}

/// The plugin's store entry as a folder of read-only copies (links inside it kept as
/// links), with `overlay`'s files written over it and the paths it hides, and `left_out`,
/// not there.
pub(super) fn copied(
    info: &PluginInfo,
    overlay: Option<&Overlay>,
    left_out: &[PathBuf],
) -> std::io::Result<Vec<(PathBuf, Planned)>> {
    fn walk(
        info: &PluginInfo,
        rel: &Path,
        skip: &dyn Fn(&Path) -> bool,
        out: &mut Vec<(PathBuf, Planned)>,
    ) -> std::io::Result<()> {
        for (child, kind) in children(info, rel)? {
            if skip(&child) {
                continue;
            }
            if kind == Kind::Folder {
                walk(info, &child, skip, out)?;
            } else if kind == Kind::Link {
                out.push((
                    child.clone(),
                    Planned::Link(std::fs::read_link(info.path.join(&child))?),
                ));
            } else if kind == Kind::File {
                out.push((child.clone(), copy_of(info, &child)));
            }
        }
        Ok(())
    }
    let skip = |rel: &Path| {
        left_out.iter().any(|p| p == rel)
            || overlay
                .is_some_and(|o| o.hidden.iter().any(|p| p == rel) || o.files.contains_key(rel))
    };
    let mut out = Vec::new();
    walk(info, Path::new(""), &skip, &mut out)?;
    if let Some(overlay) = overlay {
        out.extend(
            overlay
                .files
                .iter()
                .map(|(p, bytes)| (p.clone(), Planned::File(bytes.clone()))),
        );
    }
    Ok(out)
}
