//! A plugin's capability surface: what it can run (hooks, MCP and LSP servers, executables,
//! every file that is not prose) and what it tells the agent (skills, commands, agents).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::prose::{is_prose, running_parts, shell_spans};
use super::sources::named_paths;
use super::walk::{FileEntry, files_and_links, sha256_files, sha256_hex};
use crate::error::RuntimeError;
use crate::root::PluginRoot;
use crate::runs::read_runs;

pub use super::shape::{
    Component, DATA_PLACEHOLDER, HookEntry, McpEntry, ROOT_PLACEHOLDER, Surface,
};

/// The surface of plugin `plugin` stored at `entry`: what any harness berth supports would
/// run ([`crate::runs`]: every manifest, hooks file, server file, the marketplace entry's
/// `definition` and markdown front matter, read leniently, what cannot be modelled counted
/// as its capability), every file that is not prose, and the skills, commands and agents
/// as the runtime loads them. Paths read `${CLAUDE_PLUGIN_ROOT}`, whatever the store's path.
///
/// A `SKILL.md` skill's digest covers every regular file of its folder (the whole plugin
/// for a root `SKILL.md`): SHA-256 over each file's relative path, a NUL, its length in
/// decimal, a NUL and its bytes, in path order. Symlinks are listed, never followed.
pub fn surface_of(
    plugin: &str,
    entry: &Path,
    definition: Option<&berth_lockfile_schema::EntryDefinition>,
) -> Result<Surface, RuntimeError> {
    let root = PluginRoot::new(plugin, entry)?.exposed_at(PathBuf::from(ROOT_PLACEHOLDER));
    let (manifest, mut warnings) = root.read_manifest()?;
    let crate::components::Components {
        skills,
        commands,
        agents,
        ..
    } = crate::components::load_components(
        &root,
        manifest.format,
        Path::new(DATA_PLACEHOLDER),
        manifest.file,
        definition,
        &mut warnings,
        &|| Ok(()),
    )?;
    let all = files_and_links(root.path())?;
    let rels: Vec<&str> = all.iter().map(|f| f.rel.as_str()).collect();
    let runs = read_runs(&root, definition, &rels)?;
    warnings.extend(runs.warnings);
    warnings.extend(root.take_skipped());
    let mut surface = Surface {
        hooks: runs.hooks,
        mcp_servers: runs.mcp_servers,
        lsp_servers: runs.lsp_servers,
        unmodeled: runs.unmodeled,
        definition: definition.map(|d| {
            let value = serde_json::json!({"strict": d.strict, "components": d.components});
            berth_lockfile_schema::canonical_json(&value).to_string()
        }),
        ..Surface::default()
    };
    let named = named_by_commands(&surface, &all);
    for file in &all {
        add_file(&mut surface, file, &named, &runs.workflows)?;
    }
    for (path, sha) in runs.declared_binaries {
        surface
            .executables
            .entry(path)
            .or_insert_with(|| format!("declared sha256:{sha}"));
    }

    let regular: Vec<FileEntry> = all.into_iter().filter(|f| f.link.is_none()).collect();
    let read = |rel: &str| -> Result<(String, Vec<String>), RuntimeError> {
        let bytes = fs_err::read(root.path().join(rel))?;
        let shell = shell_spans(&String::from_utf8_lossy(&bytes));
        Ok((sha256_hex(&bytes), shell))
    };
    let listed = |tools: &[String]| (!tools.is_empty()).then(|| tools.to_vec());
    for skill in &skills {
        let (file_digest, shell) = read(&skill.source)?;
        let digest = if skill.kind == "agentskills" {
            let dir = skill.source.rsplit_once('/').map_or("", |(dir, _)| dir);
            skill_digest(&regular, dir)?
        } else {
            file_digest
        };
        let component = Component {
            digest,
            tools: skill.allowed_tools.clone(),
            shell,
        };
        surface
            .skills
            .entry(skill.name.clone())
            .or_insert(component);
    }
    for command in &commands {
        let (digest, shell) = read(&command.source)?;
        let component = Component {
            digest,
            tools: listed(&command.allowed_tools),
            shell,
        };
        surface.commands.insert(command.name.clone(), component);
    }
    for agent in &agents {
        // The runtime keeps the first sub-agent of a name.
        if !surface.agents.contains_key(&agent.name) {
            let (digest, shell) = read(&agent.source)?;
            let component = Component {
                digest,
                tools: listed(&agent.tools),
                shell,
            };
            surface.agents.insert(agent.name.clone(), component);
        }
    }
    surface.warnings = warnings;
    Ok(surface)
}

/// The regular files a hook, an MCP server or an LSP server names in its command,
/// arguments or working folder.
fn named_by_commands(surface: &Surface, all: &[FileEntry]) -> BTreeSet<String> {
    let present: BTreeSet<&str> = all
        .iter()
        .filter(|f| f.link.is_none())
        .map(|f| f.rel.as_str())
        .collect();
    let mut named = BTreeSet::new();
    for hook in &surface.hooks {
        for text in std::iter::once(&hook.command).chain(&hook.args) {
            named_paths(text, &present, &mut named);
        }
    }
    for server in surface.mcp_servers.values() {
        for text in server.command.iter().chain(&server.args) {
            named_paths(text, &present, &mut named);
        }
    }
    for server in surface.lsp_servers.values() {
        let args = server.shown.get("args").and_then(Value::as_array);
        let texts = server
            .shown
            .get("command")
            .into_iter()
            .chain(args.into_iter().flatten());
        for text in texts.filter_map(Value::as_str) {
            named_paths(text, &present, &mut named);
        }
    }
    named
}

/// Records `file` in the surface: in `files` unless it is prose (a prose file's running
/// parts in `prose_runs`), in `named_files` when a command names it, in `executables` when
/// it is executable, under `bin/` or a workflow.
fn add_file(
    surface: &mut Surface,
    file: &FileEntry,
    named: &BTreeSet<String>,
    workflows: &[String],
) -> Result<(), RuntimeError> {
    let in_workflows = std::iter::once("workflows")
        .chain(workflows.iter().map(String::as_str))
        .any(|w| file.rel == w || file.rel.strip_prefix(w).is_some_and(|r| r.starts_with('/')));
    let runs = file.executable || file.rel.starts_with("bin/") || in_workflows;
    if let Some(target) = &file.link {
        let shown = format!("-> {target}");
        if runs {
            surface.executables.insert(file.rel.clone(), shown.clone());
        }
        surface.files.insert(file.rel.clone(), shown);
        return Ok(());
    }
    let bytes = fs_err::read(&file.path)?;
    let digest = sha256_hex(&bytes);
    if named.contains(&file.rel) {
        surface.named_files.insert(file.rel.clone(), digest.clone());
    }
    if runs {
        surface.executables.insert(file.rel.clone(), digest.clone());
    }
    if is_prose(&file.rel) && !named.contains(&file.rel) {
        let parts = running_parts(&String::from_utf8_lossy(&bytes));
        if !parts.is_empty() {
            surface.prose_runs.insert(file.rel.clone(), parts);
        }
    } else {
        let mark = if file.executable { " +x" } else { "" };
        surface
            .files
            .insert(file.rel.clone(), format!("{digest}{mark}"));
    }
    Ok(())
}

/// The digest of the files in folder `dir` (`""`: the whole plugin).
fn skill_digest(files: &[FileEntry], dir: &str) -> Result<String, RuntimeError> {
    let inside: Vec<&FileEntry> = files
        .iter()
        .filter(|f| {
            dir.is_empty()
                || f.rel
                    .strip_prefix(dir)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
        .collect();
    Ok(sha256_files(&inside, dir)?)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::fixture::*;
    use super::*;

    fn sha(text: &str) -> String {
        sha256_hex(text.as_bytes())
    }

    fn folder_sha(files: &[(&str, &str)]) -> String {
        let mut all = Vec::new();
        for (rel, content) in files {
            all.extend_from_slice(format!("{rel}\0{}\0{content}", content.len()).as_bytes());
        }
        sha256_hex(&all)
    }

    #[test]
    fn surface_of_a_plugin() {
        let dir = tempfile::tempdir().expect("tempdir");
        fixture(dir.path());
        let surface = surface_of("demo", dir.path(), None).expect("surface");
        let hooks: Vec<(&str, &str, &str, u64, &str)> = surface
            .hooks
            .iter()
            .map(|h| {
                let (e, m, c, s) = (&h.event, &h.matcher, &h.command, &h.source);
                (e.as_str(), m.as_str(), c.as_str(), h.timeout, s.as_str())
            })
            .collect();
        assert_eq!(
            hooks,
            [(
                "pre_tool_use",
                "Bash",
                "${CLAUDE_PLUGIN_ROOT}/scripts/check.sh --strict",
                10,
                "hooks/hooks.json"
            )]
        );
        let local = &surface.mcp_servers["local"];
        assert_eq!(local.transport, "stdio");
        assert_eq!(local.command.as_deref(), Some("node"));
        assert_eq!(
            local.args,
            ["${CLAUDE_PLUGIN_ROOT}/server/index.js", "--port", "1"]
        );
        assert_eq!(local.env_keys, ["A", "TOKEN"]);
        assert_eq!(local.source, ".mcp.json");
        let remote = &surface.mcp_servers["remote"];
        assert_eq!(
            (remote.transport.as_str(), remote.url.as_deref()),
            ("http", Some("https://mcp.example.com/x"))
        );
        assert_eq!(surface.mcp_servers.len(), 2);
        assert_eq!(
            surface.executables,
            BTreeMap::from([
                ("bin/tool".to_owned(), sha("tool\n")),
                ("tools/run.sh".to_owned(), sha("run\n")),
            ])
        );
        assert_eq!(
            surface.named_files,
            BTreeMap::from([
                ("scripts/check.sh".to_owned(), sha(CHECK)),
                ("server/index.js".to_owned(), sha("serve()\n")),
            ])
        );
        // Every file but the two skills' SKILL.md (prose) is covered; the skill's script too.
        assert_eq!(
            surface.files.keys().collect::<Vec<_>>(),
            [
                ".claude-plugin/plugin.json",
                ".mcp.json",
                "bin/tool",
                "hooks/hooks.json",
                "scripts/check.sh",
                "server/index.js",
                "skills/alpha/scripts/helper.py",
                "tools/run.sh",
            ]
        );
        assert_eq!(
            surface.files["tools/run.sh"],
            format!("{} +x", sha("run\n"))
        );
        assert_eq!(
            surface.prose_runs,
            BTreeMap::from([(
                "skills/alpha/SKILL.md".to_owned(),
                vec!["front matter allowed-tools: \"Bash Read\"".to_owned()]
            )])
        );
        assert_eq!(
            surface.skills["alpha"],
            Component {
                digest: folder_sha(&[("SKILL.md", ALPHA), ("scripts/helper.py", HELPER)]),
                tools: Some(vec!["Bash".into(), "Read".into()]),
                shell: vec![],
            }
        );
        assert_eq!(
            surface.skills["beta"].digest,
            folder_sha(&[("SKILL.md", BETA)])
        );
        assert!(surface.unmodeled.is_empty() && surface.warnings.is_empty());
        assert!(surface.has_hooks() && surface.has_stdio_servers() && surface.has_executables());
        assert_eq!(surface.remote_urls(), ["https://mcp.example.com/x"]);
        let text = serde_json::to_string(&surface).expect("json");
        assert!(
            !text.contains("secret") && !text.contains("warnings"),
            "environment values are never shown: {text}"
        );
        assert!(!text.contains(&dir.path().to_string_lossy().into_owned()));
    }

    #[test]
    fn approval_digest_covers_every_file_but_prose_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        fixture(d);
        write(d, "README.md", "# demo\n", 0o644);
        write(
            d,
            "commands/st.md",
            "---\ndescription: s\n---\nStatus.\n",
            0o644,
        );
        let digest = || {
            surface_of("demo", d, None)
                .expect("surface")
                .approval_digest()
        };
        let mut last = digest();
        assert!(
            last.starts_with("sha256:") && last.len() == 7 + 64,
            "{last}"
        );
        let mut expect = |what: &str, same: bool, change: &dyn Fn()| {
            change();
            let now = digest();
            assert_eq!(now == last, same, "{what}");
            last = now;
        };
        expect("skill text", true, &|| {
            write(
                d,
                "skills/alpha/SKILL.md",
                "---\nname: alpha\nallowed-tools: Bash Read\n---\nNew.\n",
                0o644,
            )
        });
        expect("README", true, &|| {
            write(d, "README.md", "# other\n", 0o644)
        });
        expect("command text", true, &|| {
            write(
                d,
                "commands/st.md",
                "---\ndescription: t\n---\nOther.\n",
                0o644,
            )
        });
        expect("a skill's allowed-tools", false, &|| {
            write(
                d,
                "skills/alpha/SKILL.md",
                "---\nname: alpha\nallowed-tools: Bash\n---\nNew.\n",
                0o644,
            )
        });
        expect("a command's shell line", false, &|| {
            write(
                d,
                "commands/st.md",
                "---\ndescription: t\n---\nOther !`curl x | sh`\n",
                0o644,
            )
        });
        expect("a script a hook names", false, &|| {
            write(d, "scripts/check.sh", "#!/bin/sh\nexit 1\n", 0o644)
        });
        expect("a file nothing names", false, &|| {
            write(d, "lib/util.sh", "x\n", 0o644)
        });
        expect("a script beside a skill", false, &|| {
            write(d, "skills/alpha/scripts/helper.py", "print(2)\n", 0o644)
        });
        expect("an exec bit", false, &|| {
            write(d, "lib/util.sh", "x\n", 0o755)
        });
        expect("the manifest", false, &|| {
            write(
                d,
                ".claude-plugin/plugin.json",
                r#"{"name": "demo", "version": "2"}"#,
                0o644,
            )
        });
        expect("an MCP environment value", false, &|| {
            write(
                d,
                ".mcp.json",
                &mcp_json("1").replace("secret", "other"),
                0o644,
            )
        });
        std::os::unix::fs::symlink("scripts/check.sh", d.join("run.sh")).expect("symlink");
        expect("a symlink", false, &|| {});
        fs_err::remove_file(d.join("run.sh")).expect("rm");
        std::os::unix::fs::symlink("lib/util.sh", d.join("run.sh")).expect("symlink");
        expect("a symlink's target", false, &|| {});
        // A prose file a hook runs is covered whole.
        write(
            d,
            "hooks/hooks.json",
            &hooks_json("sh ${CLAUDE_PLUGIN_ROOT}/README.md"),
            0o644,
        );
        expect("the hook", false, &|| {});
        expect("the README it runs", false, &|| {
            write(d, "README.md", "rm -rf /\n", 0o644)
        });
    }

    #[test]
    fn lsp_servers_agents_and_commands() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        write(
            d,
            ".claude-plugin/plugin.json",
            r#"{"name": "demo", "lspServers": "./config/lsp.json"}"#,
            0o644,
        );
        write(
            d,
            "config/lsp.json",
            r#"{"go": {"command": "${CLAUDE_PLUGIN_ROOT}/lsp/gopls", "args": ["serve"], "env": {"K": "secret"}, "b": 1, "a": 2}}"#,
            0o644,
        );
        write(d, "lsp/gopls", "gopls\n", 0o644);
        write(
            d,
            ".lsp.json",
            r#"{"go": {"command": "gopls"}, "bad": 3}"#,
            0o644,
        );
        write(
            d,
            "commands/deploy.md",
            "---\nallowed-tools: [Bash]\n---\nDeploy: !`git push`\n",
            0o644,
        );
        let agent = "---\nname: rev\ndescription: Reviews.\ntools: [Read]\nmcp_servers:\n  db:\n    command: ${CLAUDE_PLUGIN_ROOT}/db.sh\nhooks:\n  Stop:\n    - hooks:\n        - command: echo done\n---\nReview.\n";
        write(d, "agents/rev.md", agent, 0o644);
        write(d, "db.sh", "db\n", 0o644);
        let surface = surface_of("demo", d, None).expect("surface");
        assert_eq!(
            surface.lsp_servers.keys().collect::<Vec<_>>(),
            ["go", "go#2"]
        );
        assert_eq!(
            serde_json::to_string(&surface.lsp_servers["go#2"]).expect("json"),
            r#"{"a":2,"args":["serve"],"b":1,"command":"${CLAUDE_PLUGIN_ROOT}/lsp/gopls","env":{"K":"(set)"}}"#
        );
        assert_eq!(
            surface.named_files.keys().collect::<Vec<_>>(),
            ["db.sh", "lsp/gopls"]
        );
        assert_eq!(surface.commands["deploy"].tools, Some(vec!["Bash".into()]));
        assert_eq!(surface.commands["deploy"].shell, ["!`git push`"]);
        assert_eq!(surface.agents["rev"].tools, Some(vec!["Read".into()]));
        assert_eq!(surface.agents["rev"].digest, sha(agent));
        let server = &surface.mcp_servers["agents/rev.md#db"];
        assert_eq!(
            server.command.as_deref(),
            Some("${CLAUDE_PLUGIN_ROOT}/db.sh")
        );
        assert_eq!(surface.hooks.len(), 1);
        assert_eq!(surface.hooks[0].source, "agents/rev.md");
        assert_eq!(surface.hooks[0].event, "stop");
        assert_eq!(
            surface.unmodeled.len(),
            1,
            "`bad` is not a server: {:?}",
            surface.unmodeled
        );
        assert!(surface.unmodeled[0].what.contains("`bad`"));
        assert!(
            surface
                .warnings
                .iter()
                .any(|w| w.contains("reviewed as `go#2`")),
            "{:?}",
            surface.warnings
        );
    }
}
