//! The model read from plugin folders built in temporary directories.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::{Body, Found, JsonFile, Kind, PluginModel, Reader};
use crate::root::PluginRoot;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs_err::write(path, text).expect("write");
}

#[test]
fn a_file_is_read_once_however_often_it_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let hooks = json!({"hooks": {"Stop": [{"hooks": [{"command": "one"}]}]}});
    write(d, "hooks/hooks.json", &hooks.to_string());
    let manifest = json!({"name": "p", "hooks": ["./hooks/hooks.json", "hooks/hooks.json"]});
    write(d, ".claude-plugin/plugin.json", &manifest.to_string());
    let root = PluginRoot::new("p", d).expect("root");
    let mut model = PluginModel::default();
    let mut reader = Reader::new(&root, None, &mut model);
    reader.manifest().expect("manifest");
    assert!(value_is(
        &reader.json("hooks/hooks.json").expect("read"),
        &hooks
    ));
    // Changed behind the reader's back (a store entry never is): the model keeps what it
    // read, so every place that names the file sees the one reading of it.
    write(d, "hooks/hooks.json", "{}");
    let everything = reader.everything(&[]).expect("everything");
    let files: Vec<(&str, bool)> = everything
        .found
        .iter()
        .filter_map(|found| match found {
            Found::Document(document) if document.kind == Kind::Hooks => match &document.body {
                Body::File { read, .. } => Some((document.source.as_str(), value_is(read, &hooks))),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        files,
        [
            ("hooks/hooks.json", true),
            ("dev.openhands/hooks/hooks.json", false),
            ("hooks.json", false),
            ("hooks/hooks.json", true),
            ("hooks/hooks.json", true),
        ],
        "the conventional files (Copilot CLI's `hooks.json` among them), then both names the manifest gives the first"
    );
}

fn value_is(read: &Option<Arc<JsonFile>>, expected: &serde_json::Value) -> bool {
    matches!(read.as_deref(), Some(JsonFile::Text { value: Ok(v), .. }) if v == expected)
}

#[test]
fn a_byte_order_mark_is_refused_where_the_claude_layout_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(d, ".mcp.json", "\u{feff}{\"mcpServers\": {}}");
    write(d, "bad.json", "{");
    let root = PluginRoot::new("p", d).expect("root");
    let mut model = PluginModel::default();
    let mut reader = Reader::new(&root, None, &mut model);
    let read = reader.json(".mcp.json").expect("read").expect("there");
    assert!(matches!(read.lenient(), Some(Ok(_))));
    let refused = read.strict().expect("text").expect_err("a BOM");
    assert!(refused.contains("byte-order mark"), "{refused}");
    let bad = reader.json("bad.json").expect("read").expect("there");
    assert!(bad.strict().expect("text").is_err() && bad.lenient().expect("text").is_err());
    assert!(reader.json("absent.json").expect("read").is_none());
}
