//! The plugin's own name, from its manifest (docs/spec.md section 5), read with the runtime's rules
//! so the name locked is the name the plugin set uses.

use berth_lockfile_schema::is_valid_plugin_name;

use crate::error::ResolveError;

/// The plugin's name: its manifest's (`.plugin/`, `.claude-plugin/` or an Agent Plugins root
/// `plugin.json`), else `fallback`, the folder's name. `read` returns a regular file's
/// bytes or `None`. An unusable manifest is an error naming the file.
pub fn plugin_name_from_manifest(
    read: impl Fn(&str) -> Result<Option<Vec<u8>>, ResolveError>,
    fallback: &str,
) -> Result<String, ResolveError> {
    let manifest = berth_lockfile_schema::plugin_manifest::read_manifest(
        |rel| read(rel).map_err(|e| e.to_string()),
        fallback,
    )?;
    if is_valid_plugin_name(&manifest.name) {
        Ok(manifest.name)
    } else {
        Err(ResolveError::InvalidPluginName {
            file: manifest.file.unwrap_or("the folder name").to_owned(),
            name: manifest.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(files: &[(&str, &str)], fallback: &str) -> Result<String, ResolveError> {
        plugin_name_from_manifest(
            |path| {
                Ok(files
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, c)| c.as_bytes().to_vec()))
            },
            fallback,
        )
    }

    #[test]
    fn names_come_from_the_manifest_else_the_folder() {
        assert_eq!(
            name(&[(".plugin/plugin.json", r#"{"name": "dot"}"#)], "dir").expect("named"),
            "dot"
        );
        assert_eq!(name(&[], "dir").expect("fallback"), "dir");
    }

    #[test]
    fn bad_manifests_name_the_file() {
        let err = name(&[(".plugin/plugin.json", "{nope")], "dir").expect_err("bad json");
        assert!(
            err.to_string()
                .starts_with(".plugin/plugin.json: invalid JSON ("),
            "{err}"
        );
        let err =
            name(&[(".plugin/plugin.json", r#"{"name": "a/b"}"#)], "dir").expect_err("bad name");
        assert!(err.to_string().contains("`a/b`"), "{err}");
    }
}
