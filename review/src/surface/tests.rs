//! Surfaces of plugins built in temporary folders.
use std::collections::BTreeMap;

use berth_lockfile_schema::governance::Capability;

use super::super::fixture::{ALPHA, BETA, CHECK, HELPER, fixture, hooks_json, mcp_json, write};
use super::{Component, sha256_hex, surface_of};

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
    assert_eq!(surface.remote_urls(), ["https://mcp.example.com/x"]);
    let text = serde_json::to_string(&surface).expect("json");
    assert!(
        !text.contains("secret") && !text.contains("warnings"),
        "environment values are never shown: {text}"
    );
    assert!(!text.contains(&dir.path().to_string_lossy().into_owned()));
}

#[test]
fn the_files_executables_and_skills_of_a_plugin() {
    let dir = tempfile::tempdir().expect("tempdir");
    fixture(dir.path());
    let surface = surface_of("demo", dir.path(), None).expect("surface");
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
    assert!(
        [
            Capability::Hooks,
            Capability::McpStdio,
            Capability::Executables
        ]
        .into_iter()
        .all(|c| surface.has(c))
    );
}

/// A change to a plugin folder, for [`approval_digest_covers_every_file_but_prose_text`].
enum Change {
    /// Writes a file with these permissions.
    Write(&'static str, String, u32),
    /// Links the first path to the second.
    Link(&'static str, &'static str),
    /// Links the first path, which is a link, to the second instead.
    Relink(&'static str, &'static str),
}

/// Each change of [`approval_digest_covers_every_file_but_prose_text`], in order, whether
/// the digest stays the same after it, and what it is. A prose file a hook runs (the
/// README, once the hook names it) is covered whole.
#[rustfmt::skip]
fn digest_steps() -> Vec<(Change, bool, &'static str)> {
    use Change::{Link, Relink, Write};
    let text = |t: &str| t.to_owned();
    vec![
        // The fixture runs code (hooks, servers): its prose is covered whole.
        (Write("skills/alpha/SKILL.md", text("---\nname: alpha\nallowed-tools: Bash Read\n---\nNew.\n"), 0o644), false, "skill text"),
        (Write("README.md", text("# other\n"), 0o644), false, "README"),
        (Write("commands/st.md", text("---\ndescription: t\n---\nOther.\n"), 0o644), false, "command text"),
        (Write("skills/alpha/SKILL.md", text("---\nname: alpha\nallowed-tools: Bash\n---\nNew.\n"), 0o644), false, "a skill's allowed-tools"),
        (Write("commands/st.md", text("---\ndescription: t\n---\nOther !`curl x | sh`\n"), 0o644), false, "a command's shell line"),
        (Write("scripts/check.sh", text("#!/bin/sh\nexit 1\n"), 0o644), false, "a script a hook names"),
        (Write("lib/util.sh", text("x\n"), 0o644), false, "a file nothing names"),
        (Write("skills/alpha/scripts/helper.py", text("print(2)\n"), 0o644), false, "a script beside a skill"),
        (Write("lib/util.sh", text("x\n"), 0o755), false, "an exec bit"),
        (Write(".claude-plugin/plugin.json", text(r#"{"name": "demo", "version": "2"}"#), 0o644), false, "the manifest"),
        (Write(".mcp.json", mcp_json("1").replace("secret", "other"), 0o644), false, "an MCP environment value"),
        (Link("run.sh", "scripts/check.sh"), false, "a symlink"),
        (Relink("run.sh", "lib/util.sh"), false, "a symlink's target"),
        (Write("hooks/hooks.json", hooks_json("sh ${CLAUDE_PLUGIN_ROOT}/README.md"), 0o644), false, "the hook"),
        (Write("README.md", text("rm -rf /\n"), 0o644), false, "the README it runs"),
    ]
}

#[test]
fn approval_digest_covers_every_file_of_a_plugin_that_runs_code() {
    use Change::{Link, Relink, Write};
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
    for (change, same, what) in digest_steps() {
        match change {
            Write(rel, content, mode) => write(d, rel, &content, mode),
            Link(rel, target) => std::os::unix::fs::symlink(target, d.join(rel)).expect("symlink"),
            Relink(rel, target) => {
                fs_err::remove_file(d.join(rel)).expect("rm");
                std::os::unix::fs::symlink(target, d.join(rel)).expect("symlink");
            }
        }
        let now = digest();
        assert_eq!(now == last, same, "{what}");
        last = now;
    }
}

#[test]
fn a_plugin_that_runs_nothing_keeps_its_prose_text_out_of_its_approval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(
        d,
        ".claude-plugin/plugin.json",
        r#"{"name": "quiet"}"#,
        0o644,
    );
    write(
        d,
        "skills/a/SKILL.md",
        "---\nname: a\ndescription: d\nallowed-tools: Read\n---\nOne.\n",
        0o644,
    );
    write(
        d,
        "commands/c.md",
        "---\ndescription: c\n---\nOne.\n",
        0o644,
    );
    write(d, "README.md", "# quiet\n", 0o644);
    let digest = || {
        let surface = surface_of("quiet", d, None).expect("surface");
        assert!(!surface.runs_code(), "{surface:?}");
        surface.approval_digest()
    };
    let first = digest();
    write(
        d,
        "skills/a/SKILL.md",
        "---\nname: a\ndescription: d\nallowed-tools: Read\n---\nTwo.\n",
        0o644,
    );
    write(
        d,
        "commands/c.md",
        "---\ndescription: c\n---\nTwo.\n",
        0o644,
    );
    write(d, "README.md", "# still quiet\n", 0o644);
    assert_eq!(digest(), first, "prose text");
    write(
        d,
        "skills/a/SKILL.md",
        "---\nname: a\ndescription: d\nallowed-tools: Bash\n---\nTwo.\n",
        0o644,
    );
    assert_ne!(digest(), first, "a granting key");
    // A shell line makes it run code: from then on its prose is covered whole.
    write(
        d,
        "commands/c.md",
        "---\ndescription: c\n---\nTwo: !{date}\n",
        0o644,
    );
    let surface = surface_of("quiet", d, None).expect("surface");
    assert!(surface.runs_code());
    let running = surface.approval_digest();
    write(d, "README.md", "# now covered\n", 0o644);
    assert_ne!(
        surface_of("quiet", d, None)
            .expect("surface")
            .approval_digest(),
        running
    );
}

#[test]
fn a_link_is_covered_as_the_file_it_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(d, ".claude-plugin/plugin.json", r#"{"name": "l"}"#, 0o644);
    write(d, "skills/x/notes.md", "echo one\n", 0o644);
    fs_err::create_dir_all(d.join("scripts")).expect("mkdir");
    std::os::unix::fs::symlink("../skills/x/notes.md", d.join("scripts/run.sh")).expect("symlink");
    std::os::unix::fs::symlink("../../etc/passwd", d.join("scripts/out")).expect("symlink");
    let surface = surface_of("l", d, None).expect("surface");
    assert_eq!(
        surface.files["scripts/run.sh"],
        format!("-> ../skills/x/notes.md sha256:{}", sha("echo one\n"))
    );
    assert_eq!(surface.files["scripts/out"], "-> ../../etc/passwd");
}

/// What the LSP files of `lsp_servers_agents_and_commands` hold that berth cannot model.
fn lsp_unmodeled(surface: &super::Surface) {
    let of = |source: &str| -> Vec<&str> {
        surface
            .unmodeled
            .iter()
            .filter(|u| u.source == source)
            .map(|u| u.what.as_str())
            .collect()
    };
    let in_lsp = of(".lsp.json");
    assert_eq!(
        in_lsp.len(),
        1,
        "`bad` is not a server: {:?}",
        surface.unmodeled
    );
    assert!(in_lsp[0].contains("`bad`"));
    // `a` and `b` are keys no harness is known to read: each counts as every capability.
    let unknown: Vec<&str> = of("config/lsp.json")
        .into_iter()
        .map(|what| what.split(',').next().unwrap_or(""))
        .collect();
    assert_eq!(unknown.len(), 8, "{unknown:?}");
    assert!(
        unknown.contains(&"`a`") && unknown.contains(&"`b`"),
        "{unknown:?}"
    );
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
    lsp_unmodeled(&surface);
    assert!(
        surface
            .warnings
            .iter()
            .any(|w| w.contains("reviewed as `go#2`")),
        "{:?}",
        surface.warnings
    );
}
