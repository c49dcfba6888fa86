//! The plugin's own name, from its manifest (`plugin.json`), as SPEC section 5 describes.

use berth_lockfile_schema::is_valid_plugin_name;

use crate::error::ResolveError;

/// Where a plugin's manifest may be, in the order they are looked for: the Claude Code
/// layouts (`.plugin/`, then `.claude-plugin/`), then the Agent Plugins 1.0 root file.
pub const MANIFEST_FILES: [&str; 3] = [
    ".plugin/plugin.json",
    ".claude-plugin/plugin.json",
    "plugin.json",
];

/// The plugin's name: the `name` of the first manifest found by `read` (which returns a
/// regular file's bytes, or `None`), else `fallback` (the folder's name).
pub fn plugin_name_from_manifest(
    read: impl Fn(&str) -> Result<Option<Vec<u8>>, ResolveError>,
    fallback: &str,
) -> Result<String, ResolveError> {
    for file in MANIFEST_FILES {
        let Some(bytes) = read(file)? else {
            continue;
        };
        let error = |message: String| ResolveError::PluginManifest {
            file: file.to_owned(),
            message,
        };
        let json: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| error(format!("is not valid JSON ({e})")))?;
        let Some(object) = json.as_object() else {
            return Err(error("must hold a JSON object".into()));
        };
        return match object.get("name") {
            None => checked(fallback, file),
            Some(serde_json::Value::String(name)) => checked(name, file),
            Some(_) => Err(error("`name` must be a string".into())),
        };
    }
    checked(fallback, "the folder name")
}

fn checked(name: &str, origin: &str) -> Result<String, ResolveError> {
    if is_valid_plugin_name(name) {
        Ok(name.to_owned())
    } else {
        Err(ResolveError::PluginManifest {
            file: origin.to_owned(),
            message: format!(
                "`{name}` is not a valid plugin name (it must not be empty or hold `/`, `\\` or `:`)"
            ),
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
    fn manifests_are_searched_in_order() {
        let both = [
            (".claude-plugin/plugin.json", r#"{"name": "claude"}"#),
            (".plugin/plugin.json", r#"{"name": "dot-plugin"}"#),
        ];
        assert_eq!(name(&both, "dir").expect("named"), "dot-plugin");
        assert_eq!(name(&both[..1], "dir").expect("named"), "claude");
        assert_eq!(
            name(
                &[("plugin.json", r#"{"$schema": "x", "name": "gamma"}"#)],
                "dir"
            )
            .expect("named"),
            "gamma"
        );
        assert_eq!(name(&[], "dir").expect("fallback"), "dir");
        assert_eq!(
            name(&[("plugin.json", "{}")], "dir").expect("fallback"),
            "dir"
        );
    }

    #[test]
    fn bad_manifests_name_the_file() {
        let err = name(&[(".plugin/plugin.json", "{nope")], "dir").expect_err("bad json");
        assert!(
            err.to_string()
                .starts_with(".plugin/plugin.json: is not valid JSON"),
            "{err}"
        );
        let err = name(&[("plugin.json", r#"{"name": "a/b"}"#)], "dir").expect_err("bad name");
        assert!(err.to_string().contains("`a/b`"), "{err}");
    }
}
