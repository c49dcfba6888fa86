//! A plugin's capability surface: what it can run (hooks, MCP and LSP servers, executables
//! and the files those name) and what it tells the agent (skills, commands, agents).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::sources::named_paths;
use super::walk::{FileEntry, regular_files, sha256_file, sha256_files, sha256_hex};
use crate::error::RuntimeError;
use crate::hooks::{HookDefinition, HookMatcher};
use crate::lsp::{canonical, insert_unique};
use crate::manifest::Format;
use crate::mcp::{McpServer, agent_servers};
use crate::root::PluginRoot;

pub use super::shape::{
    Component, DATA_PLACEHOLDER, HookEntry, McpEntry, ROOT_PLACEHOLDER, Surface,
};

/// The surface of plugin `plugin` stored at `entry`, read with the runtime's own loaders,
/// so what counts as a hook or an MCP server is exactly what the runtime would load. The
/// loaders see the plugin at [`ROOT_PLACEHOLDER`]: every plugin-root variable reads
/// `${CLAUDE_PLUGIN_ROOT}`, whatever the store's path.
///
/// A `SKILL.md` skill's digest covers every regular file of its folder (the whole plugin
/// for a root `SKILL.md`): SHA-256 over each file's relative path, a NUL, its length in
/// decimal, a NUL and its bytes, in path order. Symlinks are skipped, never followed.
///
/// `definition` is what the plugin's marketplace entry defines of it (the lock's), applied
/// as the set applies it.
pub fn surface_of(
    plugin: &str,
    entry: &Path,
    definition: Option<&berth_lockfile_schema::EntryDefinition>,
) -> Result<Surface, RuntimeError> {
    let root = PluginRoot::new(plugin, entry)?.exposed_at(PathBuf::from(ROOT_PLACEHOLDER));
    let (manifest, mut warnings) = root.read_manifest()?;
    let format = manifest.format;
    let crate::components::Components {
        skills,
        commands,
        hooks,
        servers,
        agents,
        lsp,
    } = crate::components::load_components(
        &root,
        format,
        Path::new(DATA_PLACEHOLDER),
        manifest.file,
        definition,
        &mut warnings,
        &|| Ok(()),
    )?;
    let lsp: BTreeMap<String, Value> = lsp.into_iter().map(|(n, v)| (n, canonical(&v))).collect();
    warnings.extend(root.take_skipped());

    let (hooks_file, mcp_file) = match format {
        Format::ClaudeCode => ("hooks/hooks.json", ".mcp.json"),
        Format::AgentPlugins => ("dev.openhands/hooks/hooks.json", "mcp.json"),
    };
    let mut surface = Surface {
        hooks: hook_entries(&hooks, hooks_file),
        mcp_servers: BTreeMap::new(),
        lsp_servers: lsp,
        executables: BTreeMap::new(),
        named_files: BTreeMap::new(),
        skills: BTreeMap::new(),
        commands: BTreeMap::new(),
        agents: BTreeMap::new(),
        packages: BTreeMap::new(),
        warnings: Vec::new(),
    };
    let mut add_server = |key: &str, server: &McpServer, source: &str, w: &mut Vec<String>| {
        let entry = mcp_entry(server, source);
        insert_unique(&mut surface.mcp_servers, key, entry, source, w, plugin);
    };
    for (name, server) in &servers {
        add_server(name, server, mcp_file, &mut warnings);
    }
    for agent in &agents {
        for (name, server) in agent.mcp_servers.iter().flatten() {
            let key = format!("{}#{name}", agent.source);
            add_server(&key, server, &agent.source, &mut warnings);
        }
    }
    for skill in &skills {
        let Some(tools) = &skill.mcp_tools else {
            continue;
        };
        let source = match skill.source.rsplit_once('/') {
            Some((dir, _)) if skill.kind == "agentskills" => format!("{dir}/.mcp.json"),
            _ => skill.source.clone(),
        };
        match agent_servers(tools, ROOT_PLACEHOLDER) {
            Ok(list) => {
                for (name, server) in &list {
                    add_server(&format!("{source}#{name}"), server, &source, &mut warnings);
                }
            }
            Err(why) => warnings.push(format!(
                "plugin `{plugin}`: `{source}`: the skill's MCP servers cannot be read ({why}); they are not in the surface"
            )),
        }
    }
    for agent in &agents {
        surface.hooks.extend(hook_entries(
            agent.hooks.as_deref().unwrap_or(&[]),
            &agent.source,
        ));
    }
    surface.hooks.sort_by(|a, b| {
        (
            &a.event, &a.matcher, &a.command, &a.kind, &a.source, a.timeout,
        )
            .cmp(&(
                &b.event, &b.matcher, &b.command, &b.kind, &b.source, b.timeout,
            ))
    });

    let files = regular_files(root.path())?;
    let present: BTreeSet<&str> = files.iter().map(|f| f.rel.as_str()).collect();
    let mut named = BTreeSet::new();
    for hook in surface.hooks.iter().filter(|h| h.kind == "command") {
        named_paths(&hook.command, &present, &mut named);
    }
    for server in surface.mcp_servers.values() {
        for text in server.command.iter().chain(&server.args) {
            named_paths(text, &present, &mut named);
        }
    }
    for server in surface.lsp_servers.values() {
        let args = server.get("args").and_then(Value::as_array);
        let texts = server
            .get("command")
            .into_iter()
            .chain(args.into_iter().flatten());
        for text in texts.filter_map(Value::as_str) {
            named_paths(text, &present, &mut named);
        }
    }
    for file in &files {
        if named.contains(&file.rel) {
            surface
                .named_files
                .insert(file.rel.clone(), sha256_file(&file.path)?);
        }
        if file.executable || file.rel.starts_with("bin/") {
            let digest = match surface.named_files.get(&file.rel) {
                Some(digest) => digest.clone(),
                None => sha256_file(&file.path)?,
            };
            surface.executables.insert(file.rel.clone(), digest);
        }
    }

    let read = |rel: &str| -> Result<String, RuntimeError> {
        Ok(sha256_hex(&fs_err::read(root.path().join(rel))?))
    };
    let listed = |tools: &[String]| (!tools.is_empty()).then(|| tools.to_vec());
    for skill in &skills {
        let digest = if skill.kind == "agentskills" {
            let dir = skill.source.rsplit_once('/').map_or("", |(dir, _)| dir);
            skill_digest(&files, dir)?
        } else {
            read(&skill.source)?
        };
        let component = Component {
            digest,
            tools: skill.allowed_tools.clone(),
        };
        surface
            .skills
            .entry(skill.name.clone())
            .or_insert(component);
    }
    for command in &commands {
        let component = Component {
            digest: read(&command.source)?,
            tools: listed(&command.allowed_tools),
        };
        surface.commands.insert(command.name.clone(), component);
    }
    for agent in &agents {
        // The runtime keeps the first sub-agent of a name.
        if !surface.agents.contains_key(&agent.name) {
            let component = Component {
                digest: read(&agent.source)?,
                tools: listed(&agent.tools),
            };
            surface.agents.insert(agent.name.clone(), component);
        }
    }
    surface.warnings = warnings;
    Ok(surface)
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

fn hook_entries(events: &[(&'static str, Vec<HookMatcher>)], source: &str) -> Vec<HookEntry> {
    let entry = |event: &str, matcher: &str, hook: &HookDefinition| HookEntry {
        event: event.to_owned(),
        matcher: matcher.to_owned(),
        kind: hook.kind.clone(),
        command: if hook.kind == "command" {
            hook.command.clone()
        } else {
            hook.prompt
                .clone()
                .or_else(|| hook.system_prompt.clone())
                .unwrap_or_default()
        },
        timeout: hook.timeout,
        source: source.to_owned(),
    };
    events
        .iter()
        .flat_map(|(event, matchers)| {
            matchers
                .iter()
                .flat_map(move |m| m.hooks.iter().map(move |h| entry(event, &m.matcher, h)))
        })
        .collect()
}

fn mcp_entry(server: &McpServer, source: &str) -> McpEntry {
    let mut env_keys: Vec<String> = server.env.keys().cloned().collect();
    env_keys.sort();
    McpEntry {
        transport: server.transport.clone(),
        command: server.command.clone(),
        args: server.args.clone(),
        url: server.url.clone(),
        env_keys,
        cwd: server.cwd.clone(),
        source: source.to_owned(),
    }
}

#[cfg(test)]
mod tests {
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
        let expected = Surface {
            hooks: vec![HookEntry {
                event: "pre_tool_use".into(),
                matcher: "Bash".into(),
                kind: "command".into(),
                command: "${CLAUDE_PLUGIN_ROOT}/scripts/check.sh --strict".into(),
                timeout: 10,
                source: "hooks/hooks.json".into(),
            }],
            mcp_servers: BTreeMap::from([
                (
                    "local".to_owned(),
                    McpEntry {
                        transport: "stdio".into(),
                        command: Some("node".into()),
                        args: vec![
                            "${CLAUDE_PLUGIN_ROOT}/server/index.js".into(),
                            "--port".into(),
                            "1".into(),
                        ],
                        url: None,
                        env_keys: vec!["A".into(), "TOKEN".into()],
                        cwd: None,
                        source: ".mcp.json".into(),
                    },
                ),
                (
                    "remote".to_owned(),
                    McpEntry {
                        transport: "http".into(),
                        command: None,
                        args: vec![],
                        url: Some("https://mcp.example.com/x".into()),
                        env_keys: vec![],
                        cwd: None,
                        source: ".mcp.json".into(),
                    },
                ),
            ]),
            lsp_servers: BTreeMap::new(),
            executables: BTreeMap::from([
                ("bin/tool".to_owned(), sha("tool\n")),
                ("tools/run.sh".to_owned(), sha("run\n")),
            ]),
            named_files: BTreeMap::from([
                ("scripts/check.sh".to_owned(), sha(CHECK)),
                ("server/index.js".to_owned(), sha("serve()\n")),
            ]),
            skills: BTreeMap::from([
                (
                    "alpha".to_owned(),
                    Component {
                        digest: folder_sha(&[("SKILL.md", ALPHA), ("scripts/helper.py", HELPER)]),
                        tools: Some(vec!["Bash".into(), "Read".into()]),
                    },
                ),
                (
                    "beta".to_owned(),
                    Component {
                        digest: folder_sha(&[("SKILL.md", BETA)]),
                        tools: None,
                    },
                ),
            ]),
            commands: BTreeMap::new(),
            agents: BTreeMap::new(),
            packages: BTreeMap::new(),
            warnings: vec![],
        };
        assert_eq!(surface, expected);
        assert!(surface.has_hooks() && surface.has_stdio_servers() && surface.has_executables());
        assert_eq!(surface.remote_urls(), ["https://mcp.example.com/x"]);
        let text = serde_json::to_string(&surface).expect("json");
        assert!(
            !text.contains("secret") && !text.contains("warnings"),
            "{text}"
        );
        assert!(!text.contains(&dir.path().to_string_lossy().into_owned()));
    }

    #[test]
    fn approval_digest_covers_what_runs_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        fixture(dir.path());
        let digest = || {
            surface_of("demo", dir.path(), None)
                .expect("surface")
                .approval_digest()
        };
        let first = digest();
        assert!(
            first.starts_with("sha256:") && first.len() == 7 + 64,
            "{first}"
        );
        write(
            dir.path(),
            "skills/alpha/SKILL.md",
            "---\nname: alpha\n---\nNew.\n",
            0o644,
        );
        assert_eq!(digest(), first, "skill text is not executing");

        write(dir.path(), "scripts/check.sh", "#!/bin/sh\nexit 1\n", 0o644);
        let script_changed = digest();
        assert_ne!(script_changed, first, "a script a hook names");

        let hooks = hooks_json("${CLAUDE_PLUGIN_ROOT}/scripts/check.sh");
        write(dir.path(), "hooks/hooks.json", &hooks, 0o644);
        let hook_changed = digest();
        assert_ne!(hook_changed, script_changed, "a hook's command");

        write(dir.path(), ".mcp.json", &mcp_json("2"), 0o644);
        assert_ne!(digest(), hook_changed, "an MCP server's argument");
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
            r#"{"go": {"command": "${CLAUDE_PLUGIN_ROOT}/lsp/gopls", "args": ["serve"], "b": 1, "a": 2}}"#,
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
            "---\nallowed-tools: [Bash]\n---\nDeploy.\n",
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
            serde_json::to_string(&surface.lsp_servers["go"]).expect("json"),
            r#"{"a":2,"args":["serve"],"b":1,"command":"${CLAUDE_PLUGIN_ROOT}/lsp/gopls"}"#
        );
        assert_eq!(
            surface.named_files.keys().collect::<Vec<_>>(),
            ["db.sh", "lsp/gopls"]
        );
        assert_eq!(surface.commands["deploy"].tools, Some(vec!["Bash".into()]));
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
        assert_eq!(surface.warnings.len(), 2, "{:?}", surface.warnings);
        assert!(
            surface.warnings[0].contains("reviewed as `go#2`"),
            "{:?}",
            surface.warnings
        );
        assert!(
            surface.warnings[1].contains("`bad` ignored"),
            "{:?}",
            surface.warnings
        );
    }
}
