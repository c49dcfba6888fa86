//! Claude Code's own validation of a plugin's manifest, as data: what makes the pinned
//! Claude Code refuse to install a plugin (`claude plugin install` fails with "Validation
//! errors: agents.0: Invalid string: must end with ".md""), whether the marketplace entry
//! or the plugin's `.claude-plugin/plugin.json` says it. Read from the client's behaviour
//! (`claude plugin validate --json` and `plugin install` of 2.1.328 and 2.1.332, which
//! agree; 2.1.197 refuses the same plugins, saying only "Invalid input"). Move
//! [`CHECKED_WITH`] with the pin in `.ci/run`, after reading the rules again.

use serde_json::{Map, Value};

use super::guard::read_entry_file;
use berth_runtime::set::PluginInfo;

/// The Claude Code release these rules were read from.
pub(super) const CHECKED_WITH: &str = "2.1.332";

/// A component field of a manifest or marketplace entry whose value names paths: each
/// path must start with `./` and end with one of `suffixes` (if any); whether a list of
/// paths and an inline object are taken besides one path.
struct PathField {
    key: &'static str,
    list: bool,
    inline: bool,
    suffixes: &'static [&'static str],
}

/// The component fields Claude Code checks, as 2.1.332 does (`monitors`, experimental,
/// is left out: its forms moved between releases).
const PATH_FIELDS: [PathField; 7] = [
    PathField {
        key: "commands",
        list: true,
        inline: true,
        suffixes: &[],
    },
    PathField {
        key: "agents",
        list: true,
        inline: false,
        suffixes: &[".md"],
    },
    PathField {
        key: "skills",
        list: true,
        inline: false,
        suffixes: &[],
    },
    PathField {
        key: "hooks",
        list: true,
        inline: true,
        suffixes: &[".json"],
    },
    PathField {
        key: "mcpServers",
        list: true,
        inline: true,
        suffixes: &[".json", ".mcpb", ".dxt"],
    },
    PathField {
        key: "lspServers",
        list: true,
        inline: true,
        suffixes: &[".json"],
    },
    PathField {
        key: "outputStyles",
        list: true,
        inline: false,
        suffixes: &[],
    },
];

/// The manifest fields that must be strings when present.
const STRING_FIELDS: [&str; 2] = ["version", "description"];

/// Why Claude Code refuses one path of a component field (`at` is Claude Code's name for
/// it, `agents.0`), if it does.
fn refused_path(field: &PathField, at: &str, path: &str) -> Option<String> {
    if !path.starts_with("./") {
        return Some(format!("`{at}` must start with `./` (`{path}`)"));
    }
    if !field.suffixes.is_empty() && !field.suffixes.iter().any(|s| path.ends_with(s)) {
        let suffixes: Vec<String> = field.suffixes.iter().map(|s| format!("`{s}`")).collect();
        return Some(format!(
            "`{at}` must end with {} (`{path}`)",
            suffixes.join(" or ")
        ));
    }
    None
}

/// Why Claude Code refuses the component fields of `fields` (a manifest or an entry).
fn refused_components(fields: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for field in &PATH_FIELDS {
        let Some(value) = fields.get(field.key) else {
            continue;
        };
        match value {
            Value::String(path) => out.extend(refused_path(field, field.key, path)),
            Value::Array(items) if field.list && items.iter().all(Value::is_string) => {
                for (i, item) in items.iter().enumerate() {
                    let path = item.as_str().unwrap_or_default();
                    out.extend(refused_path(field, &format!("{}.{i}", field.key), path));
                }
            }
            Value::Object(_) if field.inline => {}
            _ => out.push(format!("`{}` is not a form it takes", field.key)),
        }
    }
    out
}

/// Why Claude Code refuses a plugin's own manifest: its name (a string, not empty, without
/// spaces), its string fields, its component paths.
fn refused_manifest(manifest: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    match manifest.get("name") {
        Some(Value::String(name)) if name.is_empty() => out.push("`name` is empty".to_owned()),
        Some(Value::String(name)) if name.contains(' ') => {
            out.push(format!("`name` has a space (`{name}`)"));
        }
        Some(Value::String(_)) => {}
        _ => out.push("`name` is not a string".to_owned()),
    }
    for key in STRING_FIELDS {
        if manifest.get(key).is_some_and(|v| !v.is_string()) {
            out.push(format!("`{key}` is not a string"));
        }
    }
    out.extend(refused_components(manifest));
    out
}

/// Why the pinned Claude Code refuses to install `info`, one reason a line, each naming
/// where it is: the plugin's marketplace entry (its locked definition) or its
/// `.claude-plugin/plugin.json`.
pub(super) fn refusals(info: &PluginInfo) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(definition) = &info.locked.definition {
        let fields: Map<String, Value> = definition.components.clone().into_iter().collect();
        out.extend(
            refused_components(&fields)
                .into_iter()
                .map(|why| format!("its marketplace entry's {why}")),
        );
    }
    let manifest = read_entry_file(
        &info.path,
        std::path::Path::new(".claude-plugin/plugin.json"),
    )
    .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    if let Some(Value::Object(manifest)) = manifest {
        out.extend(
            refused_manifest(&manifest)
                .into_iter()
                .map(|why| format!("its `.claude-plugin/plugin.json`'s {why}")),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{refused_components, refused_manifest};
    use serde_json::{Map, Value, json};

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    #[test]
    fn refuses_what_claude_code_refuses() {
        let said = refused_manifest(&object(json!({
            "name": "My Plugin",
            "version": 1,
            "agents": ["./agents"],
            "hooks": "./hooks/h.txt",
            "skills": ["skills/s"],
            "outputStyles": {"a": "./x"},
        })));
        assert_eq!(
            said,
            [
                "`name` has a space (`My Plugin`)",
                "`version` is not a string",
                "`agents.0` must end with `.md` (`./agents`)",
                "`skills.0` must start with `./` (`skills/s`)",
                "`hooks` must end with `.json` (`./hooks/h.txt`)",
                "`outputStyles` is not a form it takes",
            ]
        );
    }

    #[test]
    fn takes_what_claude_code_takes() {
        let fine = object(json!({
            "name": "p_x.y",
            "version": "latest",
            "agents": "./agents/a.md",
            "commands": ["./commands"],
            "skills": "./skills/",
            "hooks": {"PreToolUse": []},
            "mcpServers": "./m.mcpb",
            "lspServers": {"l": {"command": "x"}},
        }));
        assert_eq!(refused_manifest(&fine), Vec::<String>::new());
        assert_eq!(refused_components(&Map::new()), Vec::<String>::new());
    }
}
