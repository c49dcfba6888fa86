//! What a local folder must be before berth locks it or copies it into the store: a
//! plugin (a folder the manifest names), and readable by everyone (any local folder, since
//! the store is readable by every user of the machine, as Nix's is).

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crate::error::{LocalPathProblem, ResolveError};

/// The manifests of the layouts berth reads, any one of which makes a folder a plugin.
const MANIFESTS: [&str; 6] = [
    ".claude-plugin/plugin.json",
    ".codex-plugin/plugin.json",
    ".cursor-plugin/plugin.json",
    ".plugin/plugin.json",
    ".github/plugin/plugin.json",
    "plugin.json",
];

/// The components a harness reads by convention (folders end in `/`), any one of which
/// makes a folder without a manifest a plugin.
const COMPONENTS: [&str; 15] = [
    "skills/",
    "SKILL.md",
    "commands/",
    "agents/",
    "hooks/hooks.json",
    ".mcp.json",
    "mcp.json",
    ".lsp.json",
    "monitors/monitors.json",
    ".app.json",
    "dev.openhands/",
    // GitHub Copilot CLI's own.
    "hooks.json",
    ".github/mcp.json",
    "lsp.json",
    ".github/lsp.json",
];

/// How many private files an error names before it counts the rest.
const NAMED: usize = 5;

/// Refuses a folder that holds neither a manifest nor a component a harness reads: a
/// `source` naming `/etc`, or a home folder, is a mistake, not a plugin.
pub(crate) fn check_holds_a_plugin(dir: &Path) -> Result<(), ResolveError> {
    let present =
        |rel: &str| std::fs::symlink_metadata(dir.join(rel.trim_end_matches('/'))).is_ok();
    if MANIFESTS.iter().chain(&COMPONENTS).any(|rel| present(rel)) {
        return Ok(());
    }
    Err(ResolveError::LocalPath {
        path: dir.to_owned(),
        link: None,
        problem: LocalPathProblem::NotAPlugin {
            manifests: &MANIFESTS,
            components: &COMPONENTS,
        },
    })
}

/// Refuses a folder holding a file (or folder) without the read bit for others: the
/// store's copy would be readable by every user of the machine. The folder's top-level
/// names in `excluded` are not part of the plugin. Links are copied as links, so their
/// targets keep their own modes.
pub(crate) fn check_readable_by_all(dir: &Path, excluded: &[&str]) -> Result<(), ResolveError> {
    let mut private = Vec::new();
    walk(dir, "", excluded, &mut private);
    if private.is_empty() {
        return Ok(());
    }
    let more = private.len().saturating_sub(NAMED);
    private.truncate(NAMED);
    Err(ResolveError::LocalPath {
        path: dir.to_owned(),
        link: None,
        problem: LocalPathProblem::Private {
            paths: private,
            more,
        },
    })
}

/// Adds to `private` each path under `dir` (`rel` from the plugin's folder) others may
/// not read: a file without `o+r`, a folder without `o+r` and `o+x`.
fn walk(dir: &Path, rel: &str, excluded: &[&str], private: &mut Vec<String>) {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    let mode = meta.permissions().mode();
    let shown = if rel.is_empty() { "." } else { rel };
    if meta.is_file() && mode & 0o004 == 0 {
        private.push(shown.to_owned());
    }
    if !meta.is_dir() {
        return;
    }
    if mode & 0o005 != 0o005 {
        private.push(format!("{shown}/"));
    }
    // A folder its owner cannot list fails the hash that follows, naming it.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    names.sort();
    for name in names {
        let shown_name = name.to_string_lossy();
        if rel.is_empty() && excluded.contains(&shown_name.as_ref()) {
            continue;
        }
        let child = if rel.is_empty() {
            shown_name.into_owned()
        } else {
            format!("{rel}/{shown_name}")
        };
        walk(&dir.join(&name), &child, excluded, private);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn a_folder_is_a_plugin_by_a_manifest_or_a_component() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join("README.md"), "x").expect("write");
        let refused = check_holds_a_plugin(root).expect_err("no plugin");
        assert!(
            matches!(
                &refused,
                ResolveError::LocalPath {
                    problem: LocalPathProblem::NotAPlugin { .. },
                    ..
                }
            ),
            "{refused:?}"
        );
        let text = refused.to_string();
        assert!(
            text.contains("`.claude-plugin/plugin.json`") && text.contains("`skills/`"),
            "{text}"
        );
        for marker in ["SKILL.md", "hooks/hooks.json", ".codex-plugin/plugin.json"] {
            let one = tempfile::tempdir().expect("tempdir");
            let path = one.path().join(marker);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "{}").expect("write");
            check_holds_a_plugin(one.path()).expect(marker);
        }
        std::fs::create_dir(root.join("commands")).expect("mkdir");
        check_holds_a_plugin(root).expect("a commands folder");
    }

    #[test]
    fn files_and_folders_others_cannot_read_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        chmod(root, 0o755);
        std::fs::create_dir_all(root.join("skills/x")).expect("mkdir");
        std::fs::write(root.join("skills/x/SKILL.md"), "x").expect("write");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join(".git/config"), "x").expect("write");
        chmod(&root.join(".git/config"), 0o600);
        check_readable_by_all(root, &[".git"]).expect("all readable, `.git` left out");
        std::fs::write(root.join(".env"), "TOKEN=x").expect("write");
        chmod(&root.join(".env"), 0o600);
        std::fs::create_dir(root.join("keys")).expect("mkdir");
        chmod(&root.join("keys"), 0o750);
        let refused = check_readable_by_all(root, &[".git"]).expect_err("private");
        let ResolveError::LocalPath {
            problem: LocalPathProblem::Private { paths, more },
            ..
        } = &refused
        else {
            panic!("{refused:?}");
        };
        assert_eq!(
            (paths.as_slice(), *more),
            (&[".env".to_owned(), "keys/".to_owned()][..], 0)
        );
        assert!(refused.to_string().contains("chmod o+r"), "{refused}");
    }
}
