use super::*;

fn line(text: &str) -> Result<Option<RunnerCall>, String> {
    let mut words = text.split_whitespace().map(str::to_owned);
    let command = words.next().expect("a command");
    parse_runner(&command, &words.collect::<Vec<_>>())
}

fn call(text: &str) -> RunnerCall {
    line(text)
        .expect("lockable")
        .unwrap_or_else(|| panic!("{text} is a runner line"))
}

/// Runner lines seen in real plugins: (line, package, requirement, program, args).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
    &'static [&'static str],
);

const REAL_WORLD_LINES: &[Case] = &[
    (
        "npx -y firebase-tools@latest mcp",
        "firebase-tools",
        "latest",
        None,
        &["mcp"],
    ),
    (
        "npx @playwright/mcp@latest",
        "@playwright/mcp",
        "latest",
        None,
        &[],
    ),
    (
        "npx -y @modelcontextprotocol/server-filesystem /tmp/work",
        "@modelcontextprotocol/server-filesystem",
        "latest",
        None,
        &["/tmp/work"],
    ),
    (
        "npx -y @modelcontextprotocol/server-github",
        "@modelcontextprotocol/server-github",
        "latest",
        None,
        &[],
    ),
    (
        "npx protect-mcp@0.7.4 evaluate",
        "protect-mcp",
        "0.7.4",
        None,
        &["evaluate"],
    ),
    ("npx -y fake-mcp@^1", "fake-mcp", "^1", None, &[]),
    (
        "npm exec -y -- @scope/pkg@1.2.3 --port 1",
        "@scope/pkg",
        "1.2.3",
        None,
        &["--port", "1"],
    ),
    (
        "bunx @upstash/context7-mcp",
        "@upstash/context7-mcp",
        "latest",
        None,
        &[],
    ),
    ("pnpm dlx tsx@4 server.ts", "tsx", "4", None, &["server.ts"]),
    (
        "npx -p @acme/tools acme-mcp --x",
        "@acme/tools",
        "latest",
        Some("acme-mcp"),
        &["--x"],
    ),
    ("uvx mcp-server-fetch", "mcp-server-fetch", "", None, &[]),
    (
        "uvx mcp-server-git --repository .",
        "mcp-server-git",
        "",
        None,
        &["--repository", "."],
    ),
    (
        "uvx mcp-server-time@0.6.2",
        "mcp-server-time",
        "==0.6.2",
        None,
        &[],
    ),
    (
        "uvx --from awslabs.core-mcp-server@latest awslabs.core-mcp-server",
        "awslabs-core-mcp-server",
        "",
        Some("awslabs.core-mcp-server"),
        &[],
    ),
    (
        "uv tool run mcp-server-sqlite==0.6.2 --db-path x.db",
        "mcp-server-sqlite",
        "==0.6.2",
        None,
        &["--db-path", "x.db"],
    ),
    (
        "pipx run --spec Black>=24 black .",
        "black",
        ">=24",
        Some("black"),
        &["."],
    ),
    (
        "/usr/local/bin/uvx Mcp_Server.Fetch",
        "mcp-server-fetch",
        "",
        None,
        &[],
    ),
];

#[test]
fn real_world_runner_lines_are_read() {
    for (text, package, requirement, program, args) in REAL_WORLD_LINES {
        let got = call(text);
        assert_eq!(got.package, *package, "{text}");
        assert_eq!(got.requirement, *requirement, "{text}");
        assert_eq!(got.program.as_deref(), *program, "{text}");
        assert_eq!(
            got.args,
            args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(),
            "{text}"
        );
    }
    assert_eq!(call("uvx mcp-server-fetch").ecosystem, Ecosystem::Python);
    assert_eq!(call("npm exec -y -- x").runner, "npm exec");
    assert!(call("npx -y fake-mcp@^1").floats());
    assert!(!call("npx protect-mcp@0.7.4 evaluate").floats());
    assert!(call("uvx mcp-server-fetch").floats());
    assert!(!call("uvx mcp-server-time@0.6.2").floats());
}

#[test]
fn only_plain_hook_commands_are_split() {
    assert_eq!(
        plain_words("npx protect-mcp@0.7.4 evaluate --strict"),
        Some(vec![
            "npx".into(),
            "protect-mcp@0.7.4".into(),
            "evaluate".into(),
            "--strict".into()
        ])
    );
    for shell in [
        "npx x | tee log",
        "npx x > out",
        "npx \"$X\"",
        "${CLAUDE_PLUGIN_ROOT}/run.sh",
        "npx x && echo done",
        "FOO=1 npx x",
        "",
    ] {
        assert_eq!(plain_words(shell), None, "{shell}");
    }
}

#[test]
fn plain_programs_are_not_runners_and_unknown_forms_are_refused_with_a_reason() {
    for text in [
        "node server.js",
        "python -m server",
        "npm run start",
        "uv run server.py",
        "docker run x",
    ] {
        assert_eq!(line(text), Ok(None), "{text}");
    }
    for (text, why) in [
        ("npx github:acme/tool", "not a package of the registry"),
        ("npx ./local", "not a package of the registry"),
        ("npx --registry http://x pkg", "`--registry`"),
        ("npx -y", "names no package"),
        ("uvx git+https://github.com/a/b", "URL"),
        ("uvx --with extra pkg", "`--with`"),
        ("uvx pkg[cli]", "extras"),
        ("npx pkg@npm:other@1", "not a package of the registry"),
    ] {
        let err = line(text).expect_err(text);
        assert!(err.contains(why), "{text}: {err}");
    }
}
