//! The committed JSON Schema must be exactly what the lockfile types generate, so the two
//! cannot drift. Run with `BERTH_BLESS=1` to rewrite the file after changing the types.

use std::path::Path;

#[test]
fn committed_schema_matches_the_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins.lock.schema.json");
    let generated = crate::lock_json_schema();
    if std::env::var_os("BERTH_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
    }
    let committed = std::fs::read_to_string(&path).expect("plugins.lock.schema.json is committed");
    assert_eq!(
        committed, generated,
        "plugins.lock.schema.json is out of date: run `BERTH_BLESS=1 cargo test -p berth-lockfile-schema`"
    );
}

#[test]
fn schema_describes_the_fields_the_writer_uses() {
    let schema: serde_json::Value =
        serde_json::from_str(&crate::lock_json_schema()).expect("valid JSON");
    let entry = &schema["$defs"]["LockedPluginWire"];
    let properties = entry["properties"].as_object().expect("entry properties");
    for key in [
        "name",
        "source",
        "ref",
        "version",
        "resolved_ref",
        "repo_path",
        "url",
        "rev",
        "archive_hash",
        "path",
        "hash",
    ] {
        assert!(properties.contains_key(key), "schema lacks `{key}`");
    }
    let required: Vec<&str> = entry["required"]
        .as_array()
        .expect("required list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(required, ["name", "source", "hash"]);
    assert_eq!(entry["additionalProperties"], serde_json::json!(false));
}
