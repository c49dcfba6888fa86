//! See `main.rs`. Policy bypasses (F7–F12): each finding's reproduction run against the
//! binary, refused, with nothing written; and beside it what must still pass, so a
//! refusal for another reason (a broken setup) cannot pass for the fix.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{FileServer, GitRepo, Run, TestContext};

/// A local plugin folder `NAME` under the work folder's `plugins/`.
fn local_plugin(ctx: &TestContext, name: &str) -> std::path::PathBuf {
    let dir = ctx.work.join("plugins").join(name);
    std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\"}}\n"),
    )
    .expect("write plugin.json");
    dir
}

fn write_policy(ctx: &TestContext, text: &str) {
    std::fs::write(ctx.work.join("berth-policy.toml"), text).expect("write policy");
}

/// `plugins lock` fails, says every one of `needles`, and writes no lock.
fn refused(ctx: &TestContext, needles: &[&str]) -> Run {
    let run = ctx.run(&["plugins", "lock"]);
    assert_eq!(run.code, 1, "refused:\n{}", run.stderr);
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "`{needle}` not in:\n{}",
            run.stderr
        );
    }
    assert!(
        !ctx.lock_path().exists(),
        "nothing written:\n{}",
        run.stderr
    );
    run
}

#[test]
fn f7_a_remote_mcp_host_is_the_one_a_whatwg_parser_connects_to() {
    let ctx = TestContext::new();
    let plugin = local_plugin(&ctx, "r");
    ctx.write_manifest("[[plugin]]\nsource = \"./plugins/r\"\n");
    write_policy(
        &ctx,
        "[capabilities]\nmcp_remote_hosts = [\"*.acme.dev\"]\n",
    );
    // Node and Claude Code read `\` as `/` in an https URL: both hosts are `evil.example`.
    for url in [
        r"https://evil.example\.acme.dev/mcp",
        r"https://evil.example\@x.acme.dev/",
        "https://evil.example@x.acme.dev/mcp",
    ] {
        let mcp = serde_json::json!({"mcpServers": {"r": {"type": "http", "url": url}}});
        std::fs::write(plugin.join(".mcp.json"), mcp.to_string()).expect("write .mcp.json");
        refused(
            &ctx,
            &[
                "plugin `r`",
                "is not on a listed host",
                "mcp_remote_hosts",
                url,
            ],
        );
    }
    let mcp = r#"{"mcpServers": {"r": {"type": "http", "url": "https://MCP.acme.dev/mcp"}}}"#;
    std::fs::write(plugin.join(".mcp.json"), mcp).expect("write .mcp.json");
    ctx.ok(&["plugins", "lock"]);
    ctx.ok(&["audit"]);
}

#[test]
fn f8_sources_are_matched_in_canonical_form() {
    let ctx = TestContext::new();
    for name in ["tools", "experimental-x"] {
        let repo = ctx.repo(name);
        repo.write(
            ".claude-plugin/plugin.json",
            &format!("{{\"name\": \"{name}\"}}\n"),
        );
        repo.commit("a plugin");
    }
    // Another repository on this server, where GitHub would have the same one.
    let other = GitRepo::init(&ctx.upstream.join("ACME/Experimental-x.git"), &ctx.home);
    other.write(
        ".claude-plugin/plugin.json",
        "{\"name\": \"experimental-x\"}\n",
    );
    other.commit("another plugin");
    let _server = ctx.serve_github_over_http();
    let g = ctx.github_url();

    write_policy(
        &ctx,
        &format!("[sources]\nallow = [\"{g}/acme/*\", \"github:acme/*\"]\n"),
    );
    for source in [
        format!("{g}/acme/../ACME/Experimental-x.git"),
        format!("{g}/acme/%2e%2e/ACME/Experimental-x.git"),
    ] {
        ctx.write_manifest(&format!("[[plugin]]\nsource = \"{source}\"\n"));
        refused(
            &ctx,
            &[
                // Refused before it is fetched, so before its name is known.
                "berth fetched nothing from it",
                "refused by the policy",
                "which a server resolves to another folder",
            ],
        );
    }
    // What the pattern names passes, in the URL form and in the `github:` form.
    ctx.write_manifest(&format!("[[plugin]]\nsource = \"{g}/acme/tools.git\"\n"));
    ctx.ok(&["plugins", "lock"]);
    std::fs::remove_file(ctx.lock_path()).expect("remove the lock");

    write_policy(&ctx, "[sources]\ndeny = [\"github:acme/experimental-*\"]\n");
    for source in [
        "github:ACME/Experimental-x".to_owned(),
        format!("{g}/acme/experimental-x.git"),
        format!("git+{g}/acme/experimental-x.git/"),
    ] {
        ctx.write_manifest(&format!("[[plugin]]\nsource = \"{source}\"\n"));
        refused(
            &ctx,
            &[
                "sources.deny = \"github:acme/experimental-*\"",
                "denied by the policy",
            ],
        );
    }
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/tools.git\"\n");
    ctx.ok(&["plugins", "lock"]);
}

#[test]
fn f9_a_marketplace_is_allowed_by_its_pinned_source_never_its_alias() {
    let ctx = TestContext::new();
    // A repository names its own marketplace `official`.
    let evil = ctx.work.join("evil-market");
    std::fs::create_dir_all(evil.join(".claude-plugin")).expect("mkdir");
    std::fs::create_dir_all(evil.join("plugins/x/hooks")).expect("mkdir");
    std::fs::write(
        evil.join(".claude-plugin/marketplace.json"),
        r#"{"name":"totally-official","owner":{"name":"o"},"plugins":[{"name":"x","source":"./plugins/x"}]}"#,
    )
    .expect("write catalog");
    std::fs::write(
        evil.join("plugins/x/hooks/hooks.json"),
        r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo evil"}]}]}}"#,
    )
    .expect("write hooks");
    ctx.write_manifest(
        "[[marketplace]]\nname = \"official\"\nsource = \"./evil-market\"\n\n[[plugin]]\nsource = \"x@official\"\n",
    );

    // The finding's policy: a name no longer stands for a marketplace.
    write_policy(
        &ctx,
        "[sources]\nallow = [\"official\", \"github:anthropics/*\"]\n",
    );
    refused(
        &ctx,
        &[
            "berth-policy.toml:2:",
            "`official` is not a source",
            "not by the name a `plugins.toml` gives it",
        ],
    );
    // A glob that the alias (and only the alias) matches lets nothing through.
    write_policy(
        &ctx,
        "[sources]\nallow = [\"*official\", \"github:anthropics/*\"]\n",
    );
    refused(
        &ctx,
        &[
            "`x@official`: its source `./evil-market/plugins/x`",
            "marketplace `official` at `./evil-market`",
            "not in the allow list of",
        ],
    );

    // The organisation's marketplace, under any alias, lets its picks through by its
    // source, wherever its catalog points them.
    let tool = ctx.repo("xtool");
    tool.write(".claude-plugin/plugin.json", "{\"name\": \"xtool\"}\n");
    tool.commit("a plugin");
    let market = GitRepo::init(&ctx.upstream.join("anthropics/market.git"), &ctx.home);
    market.write(
        ".claude-plugin/marketplace.json",
        r#"{"name":"official","owner":{"name":"a"},"plugins":[{"name":"xtool","source":{"source":"github","repo":"acme/xtool"}}]}"#,
    );
    market.commit("catalog");
    write_policy(&ctx, "[sources]\nallow = [\"github:anthropics/*\"]\n");
    ctx.write_manifest(
        "[[marketplace]]\nname = \"corp\"\nsource = \"github:anthropics/market\"\n\n[[plugin]]\nsource = \"xtool@corp\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    ctx.ok(&["audit"]);
}

#[test]
fn f10_extends_over_http_reaches_only_loopback_addresses_after_every_redirect() {
    let ctx = TestContext::new();
    local_plugin(&ctx, "a");
    ctx.write_manifest("[[plugin]]\nsource = \"./plugins/a\"\n");
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::fs::write(served.join("landed-nonloopback"), "").expect("write");
    std::fs::write(
        served.join("org.toml"),
        "[sources]\ndeny = [\"./plugins/*\"]\n",
    )
    .expect("write");
    let server = FileServer::start(&served, None);
    // `0.0.0.0` is not a loopback address, though Linux connects it to this machine: a
    // request that followed the redirect would reach this same server.
    server.redirect(
        "redir",
        &format!("http://0.0.0.0:{}/landed-nonloopback", server.port),
    );
    write_policy(&ctx, &format!("extends = [\"{}\"]\n", server.url("redir")));
    refused(
        &ctx,
        &[
            "it redirects to `http://0.0.0.0:",
            "allowed only to a loopback address",
        ],
    );
    let requests = server.requests();
    assert!(
        requests.iter().all(|r| !r.contains("landed")),
        "the redirect was followed: {requests:?}"
    );
    assert!(
        requests.iter().any(|r| r.starts_with("GET /redir")),
        "{requests:?}"
    );

    // A name that starts like an address is a name: refused as written, before anything
    // is looked up or connected to.
    let entry = "http://127.evil.example.invalid/p.toml";
    write_policy(&ctx, &format!("extends = [\"{entry}\"]\n"));
    let run = refused(
        &ctx,
        &[
            &format!("extends `{entry}`"),
            "allowed only to a loopback address",
        ],
    );
    assert!(!run.stderr.contains("could not read"), "{}", run.stderr);

    // Loopback addresses and `localhost` are read, and their rules apply.
    for url in [
        server.url("org.toml"),
        format!("http://localhost:{}/org.toml", server.port),
    ] {
        write_policy(&ctx, &format!("extends = [\"{url}\"]\n"));
        refused(&ctx, &["sources.deny = \"./plugins/*\"", url.as_str()]);
    }
}

/// `berth ARGS` in the work folder, killed after `limit`: `None` if it had to be.
fn run_within(ctx: &TestContext, args: &[&str], limit: Duration) -> Option<Run> {
    let mut child = ctx
        .berth()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start berth");
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().expect("wait").is_some() {
            return Some(Run::from(child.wait_with_output().expect("output")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn f11_extends_is_a_graph_read_once_and_bounded() {
    let ctx = TestContext::new();
    local_plugin(&ctx, "a");
    ctx.write_manifest("[[plugin]]\nsource = \"./plugins/a\"\n");
    for link in ["d1", "d2", "d3"] {
        std::os::unix::fs::symlink(".", ctx.work.join(link)).expect("link");
    }
    // Three spellings of the next level at every level: 3^14 paths to one last file,
    // whose rule must still apply.
    let levels = 14;
    for i in 0..levels {
        let j = i + 1;
        std::fs::write(
            ctx.work.join(format!("l{i}.toml")),
            format!("extends = [\"d1/l{j}.toml\", \"d2/l{j}.toml\", \"d3/l{j}.toml\"]\n"),
        )
        .expect("write");
    }
    std::fs::write(
        ctx.work.join(format!("l{levels}.toml")),
        "[sources]\ndeny = [\"./plugins/*\"]\n",
    )
    .expect("write");
    write_policy(&ctx, "extends = [\"./l0.toml\"]\n");
    let start = Instant::now();
    let run = run_within(&ctx, &["plugins", "lock"], Duration::from_secs(10))
        .expect("`plugins lock` finishes within 10 s: each policy file is read once");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("sources.deny = \"./plugins/*\"") && run.stderr.contains("l14.toml"),
        "the last level's rule applies: {}",
        run.stderr
    );
    assert!(!ctx.lock_path().exists(), "nothing written");

    // Distinct documents are bounded in number.
    let wide = ctx.work.join("wide");
    std::fs::create_dir_all(&wide).expect("mkdir");
    let parents: Vec<String> = (0..70).map(|i| format!("\"wide/p{i}.toml\"")).collect();
    for i in 0..70 {
        std::fs::write(wide.join(format!("p{i}.toml")), "").expect("write");
    }
    write_policy(&ctx, &format!("extends = [{}]\n", parents.join(", ")));
    refused(&ctx, &["a policy reads at most 64", "merge some of them"]);
}

#[test]
fn f12_diff_from_is_never_an_option_to_git() {
    let ctx = TestContext::new();
    local_plugin(&ctx, "a");
    ctx.write_manifest("[[plugin]]\nsource = \"./plugins/a\"\n");
    ctx.ok(&["plugins", "lock"]);
    let project = GitRepo::init(&ctx.work, &ctx.home);
    project.commit("a lock");
    let target = ctx.root.join("inj");
    std::fs::create_dir_all(ctx.root.join("inj:.")).expect("mkdir");
    let written = Path::new(&format!("{}:./plugins.lock", target.display())).to_owned();

    let from = format!("--from=--output={}", target.display());
    let run = ctx.run(&["plugins", "diff", &from]);
    assert!(!written.exists(), "git wrote `{}`", written.display());
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("a revision never starts with `-`"),
        "{}",
        run.stderr
    );
    // A revision still reads the committed lock.
    ctx.ok(&["plugins", "diff", "--from", "HEAD"]);
}
