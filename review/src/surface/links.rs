//! A plugin's symlinks, followed for coverage: a link to a file of the plugin is covered
//! as the file it names, so a hook that runs `scripts/run.sh -> ../skills/x/notes.md`
//! runs nothing its approval did not see.

use std::collections::BTreeMap;

use super::super::walk::{FileEntry, sha256_hex};
use berth_plugin::error::PluginError;

/// How many links a chain may pass through before it counts as leading nowhere (Linux's
/// own bound).
const MAX_HOPS: usize = 40;

/// The plugin's files and links, by relative path.
pub(super) struct Links<'a> {
    by_path: BTreeMap<&'a str, &'a FileEntry>,
}

impl<'a> Links<'a> {
    pub(super) fn of(all: &'a [FileEntry]) -> Self {
        Self {
            by_path: all.iter().map(|f| (f.rel.as_str(), f)).collect(),
        }
    }

    /// `sha256:HEX` of the regular file the link `rel` names (through further links, each
    /// staying inside the plugin), or `None` when it names no file of the plugin (a
    /// folder, nothing, or something outside).
    pub(super) fn content(&self, rel: &str) -> Result<Option<String>, PluginError> {
        let mut at = rel.to_owned();
        for _ in 0..MAX_HOPS {
            let Some(entry) = self.by_path.get(at.as_str()) else {
                return Ok(None);
            };
            match &entry.link {
                None => {
                    let bytes = entry.read()?;
                    return Ok(Some(format!("sha256:{}", sha256_hex(&bytes))));
                }
                Some(target) => match resolve(&at, target) {
                    Some(next) => at = next,
                    None => return Ok(None),
                },
            }
        }
        Ok(None)
    }
}

/// The plugin-relative path the link at `rel` names with `target`, if it stays inside.
fn resolve(rel: &str, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn targets_resolve_inside_the_plugin_only() {
        assert_eq!(
            resolve("scripts/run.sh", "../skills/x/notes.md").as_deref(),
            Some("skills/x/notes.md")
        );
        assert_eq!(resolve("a", "b/./c").as_deref(), Some("b/c"));
        assert_eq!(resolve("scripts/run.sh", "../../etc/passwd"), None);
        assert_eq!(resolve("a", "/etc/passwd"), None);
    }
}
