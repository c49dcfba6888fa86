//! What a review reads beside the runtime's loaders: LSP server definitions (raw JSON),
//! and the plugin files that commands and arguments name.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::error::RuntimeError;
use crate::expand::ROOT_VARIABLES;
use crate::root::PluginRoot;

/// The file Claude Code reads LSP servers from when the manifest names none.
const LSP_FILE: &str = ".lsp.json";

/// The plugin's LSP servers, by name, as raw JSON with object keys sorted: the manifest's
/// `lspServers` (an object, a path to a JSON file in the plugin, or a list of either),
/// then `.lsp.json`. What cannot be read is left out with a warning; a name given twice
/// is kept twice (the second as `name#2`), so that nothing is hidden from a review.
pub(crate) fn lsp_servers(
    root: &PluginRoot,
    manifest_file: Option<&str>,
    definition: Option<&berth_lockfile_schema::EntryDefinition>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Value>, RuntimeError> {
    let mut servers = BTreeMap::new();
    if let Some(value) = definition.and_then(|d| d.components.get("lspServers")) {
        add_lsp(
            root,
            "its marketplace entry",
            value,
            true,
            &mut servers,
            warnings,
        )?;
    }
    if let Some(file) = manifest_file
        && let Some(document) = read_json(root, file, warnings)?
        && let Some(value) = document.get("lspServers")
    {
        add_lsp(root, file, value, true, &mut servers, warnings)?;
    }
    if let Some(document) = read_json(root, LSP_FILE, warnings)? {
        add_lsp(root, LSP_FILE, &document, false, &mut servers, warnings)?;
    }
    Ok(servers)
}

fn add_lsp(
    root: &PluginRoot,
    file: &str,
    value: &Value,
    may_refer: bool,
    servers: &mut BTreeMap<String, Value>,
    warnings: &mut Vec<String>,
) -> Result<(), RuntimeError> {
    let plugin = root.plugin();
    match value {
        Value::Object(map) => {
            // A file may wrap its servers as `{"lspServers": {...}}`.
            let map = match map.get("lspServers") {
                Some(Value::Object(inner)) if map.len() == 1 => inner,
                _ => map,
            };
            for (name, server) in map {
                if server.is_object() {
                    insert_unique(servers, name, canonical(server), file, warnings, plugin);
                } else {
                    warnings.push(format!(
                        "plugin `{plugin}`: `{file}`: LSP server `{name}` ignored: it must be an object"
                    ));
                }
            }
        }
        Value::String(path) if may_refer => match plugin_path(path) {
            Some(rel) => {
                if let Some(document) = read_json(root, &rel, warnings)? {
                    add_lsp(root, &rel, &document, false, servers, warnings)?;
                } else {
                    warnings.push(format!(
                        "plugin `{plugin}`: `{file}`: LSP file `{path}` is missing or unreadable"
                    ));
                }
            }
            None => warnings.push(format!(
                "plugin `{plugin}`: `{file}`: LSP file `{path}` is not a path inside the plugin; ignored"
            )),
        },
        Value::Array(items) if may_refer => {
            for item in items {
                add_lsp(root, file, item, true, servers, warnings)?;
            }
        }
        _ => warnings.push(format!(
            "plugin `{plugin}`: `{file}`: LSP servers must be an object of servers; ignored"
        )),
    }
    Ok(())
}

/// The JSON document at `rel`, or `None` (with a warning when it exists but is not JSON).
fn read_json(
    root: &PluginRoot,
    rel: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Value>, RuntimeError> {
    let text = match root.read_text(rel) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(RuntimeError::NotUtf8 { .. }) => {
            warnings.push(format!(
                "plugin `{}`: `{rel}` is not UTF-8 text; ignored",
                root.plugin()
            ));
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match crate::json::parse_allowing_bom(&text) {
        Ok(value) => Ok(Some(value)),
        Err(why) => {
            warnings.push(format!(
                "plugin `{}`: `{rel}`: {why}; ignored",
                root.plugin()
            ));
            Ok(None)
        }
    }
}

/// Inserts `value` at `name`, or at `name#2`, `name#3`… when taken, with a warning.
pub(crate) fn insert_unique<T>(
    map: &mut BTreeMap<String, T>,
    name: &str,
    value: T,
    file: &str,
    warnings: &mut Vec<String>,
    plugin: &str,
) {
    if !map.contains_key(name) {
        map.insert(name.to_owned(), value);
        return;
    }
    let mut n = 2;
    while map.contains_key(&format!("{name}#{n}")) {
        n += 1;
    }
    let key = format!("{name}#{n}");
    warnings.push(format!(
        "plugin `{plugin}`: `{file}`: `{name}` is defined more than once; this one is reviewed as `{key}`"
    ));
    map.insert(key, value);
}

/// `value` with every object's keys sorted, so that equal definitions serialise alike.
pub(crate) fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&map[k])))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The plugin-relative paths of `files` that `text` names: each word (split as a shell
/// splits, quotes removed, also at `=`) that is a plugin-root variable followed by `/path`
/// (`${CLAUDE_PLUGIN_ROOT}/x`, `$CLAUDE_PLUGIN_ROOT/x`, and the other root variables), or a
/// relative path (`./x`, `scripts/x.sh`), and names one of `files`. `..` is never followed.
pub(crate) fn named_paths(text: &str, files: &BTreeSet<&str>, out: &mut BTreeSet<String>) {
    for word in std::iter::once(text.to_owned()).chain(words(text)) {
        if let Some(rel) = word_path(&word)
            && files.contains(rel.as_str())
        {
            out.insert(rel);
        }
    }
}

/// The words of `text` as a shell would split them, quotes removed; operators
/// (`; | & ( ) < >`, backquotes) and `=` also end a word.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c.is_whitespace() || ";|&()<>`=".contains(c) => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            None => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The plugin-relative path a word names, if it names one.
fn word_path(word: &str) -> Option<String> {
    for braced in ROOT_VARIABLES {
        let bare = format!("${}", &braced[2..braced.len() - 1]);
        for var in [braced, bare.as_str()] {
            if let Some(rest) = word.strip_prefix(var) {
                return rest.strip_prefix('/').and_then(plugin_path);
            }
        }
    }
    if word.starts_with(['$', '-', '~']) || word.contains("://") {
        return None;
    }
    plugin_path(word)
}

/// `path` as a normalised path inside the plugin: relative, without `..`.
fn plugin_path(path: &str) -> Option<String> {
    if path.starts_with('/') || path.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_paths() {
        let files: BTreeSet<&str> = ["scripts/a.sh", "b.py", "my file.sh", "c.json"].into();
        let mut out = BTreeSet::new();
        named_paths(
            r#"bash "${CLAUDE_PLUGIN_ROOT}"/scripts/a.sh && python3 ./b.py --x=$PLUGIN_ROOT/c.json; sh '$SKILL_ROOT/my file.sh' ../b.py /b.py"#,
            &files,
            &mut out,
        );
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            ["b.py", "c.json", "my file.sh", "scripts/a.sh"]
        );
        let mut none = BTreeSet::new();
        named_paths(
            "scripts/../b.py $HOME/b.py ${CLAUDE_PLUGIN_ROOT}/../b.py",
            &files,
            &mut none,
        );
        assert!(none.is_empty(), "{none:?}");
    }
}
