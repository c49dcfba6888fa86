//! Parallel resolution and fetching, shared fetches and progress output (issue #4).

use crate::common;

use common::{GitHttpServer, TestContext, list_dir};

fn twenty_repositories(ctx: &TestContext) {
    let mut manifest = String::new();
    for i in 0..20 {
        let repo = ctx.repo(&format!("p{i:02}"));
        repo.copy_fixture("lint", "");
        repo.write(".plugin/plugin.json", &format!("{{\"name\": \"p{i:02}\"}}"));
        repo.commit("plugin");
        manifest.push_str(&format!("[[plugin]]\nsource = \"github:acme/p{i:02}\"\n\n"));
    }
    ctx.write_manifest(&manifest);
}

#[test]
fn twenty_git_sources_lock_with_several_fetches_at_once() {
    let ctx = TestContext::new();
    twenty_repositories(&ctx);
    for (jobs, expect_parallel) in [(None, true), (Some("1"), false)] {
        let log = ctx.root.join(format!("http-{jobs:?}.log"));
        // Each request takes 100 ms, so requests overlap exactly when fetches run at once.
        let server = GitHttpServer::start(&ctx.upstream, &log, &["--delay-ms", "100"]);
        let _ = std::fs::remove_file(ctx.lock_path());
        let mut args = vec!["plugins", "lock"];
        if let Some(jobs) = jobs {
            args.extend(["--jobs", jobs]);
        }
        let out = ctx
            .berth()
            .env("BERTH_GITHUB_URL", server.url())
            .env("BERTH_STORE", ctx.root.join(format!("store-{jobs:?}")))
            .args(&args)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fetches = server
            .requests()
            .iter()
            .filter(|r| r.contains("git-upload-pack"))
            .count();
        assert!(
            fetches >= 40,
            "every repository was listed and fetched: {fetches}"
        );
        let most = server.max_in_flight();
        if expect_parallel {
            assert!(most >= 3, "several fetches ran at once (at most {most})");
            assert!(most <= 8, "no more than the default 8 jobs (saw {most})");
        } else {
            assert_eq!(most, 1, "`--jobs 1` fetches one at a time");
        }
    }
}

#[test]
fn entries_on_one_repository_share_one_fetch() {
    let ctx = TestContext::new();
    let repo = ctx.repo("mono");
    repo.copy_fixture("lint", "plugins/lint");
    repo.copy_fixture("review", "plugins/review");
    repo.commit("two plugins");
    let mut counts = Vec::new();
    for entries in [1, 2, 4] {
        let manifest: String = [
            "plugins/lint",
            "plugins/review",
            "plugins/lint",
            "plugins/review",
        ][..entries]
            .iter()
            .map(|p| format!("[[plugin]]\nsource = \"github:acme/mono\"\nrepo_path = \"{p}\"\n\n"))
            .collect();
        ctx.write_manifest(&manifest);
        let _ = std::fs::remove_file(ctx.lock_path());
        let log = ctx.root.join(format!("http-{entries}.log"));
        let server = GitHttpServer::start(&ctx.upstream, &log, &[]);
        let out = ctx
            .berth()
            .env("BERTH_GITHUB_URL", server.url())
            .env("BERTH_STORE", ctx.root.join(format!("store-{entries}")))
            .args(["plugins", "sync"])
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        counts.push(server.requests().len());
        let dbs = list_dir(&ctx.root.join(format!("store-{entries}/git-v1/db")));
        assert_eq!(dbs.len(), 1, "one cache for the repository");
    }
    assert_eq!(
        counts[0], counts[1],
        "a second entry adds no request: {counts:?}"
    );
    assert_eq!(
        counts[0], counts[2],
        "four entries, still one listing and one fetch: {counts:?}"
    );
}

#[test]
fn progress_bars_on_a_terminal_plain_lines_elsewhere() {
    let ctx = TestContext::new();
    twenty_repositories(&ctx);
    // Fetched over HTTP: a `file://` repository is read in place, with nothing to fetch.
    let _server = ctx.serve_github_over_http();
    let piped = ctx.run(&["plugins", "lock"]);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(
        !piped.stderr.contains('\x1b'),
        "no escape sequences when stderr is not a terminal"
    );
    assert_eq!(
        piped
            .stderr
            .lines()
            .filter(|l| l.trim_start().starts_with("Fetching"))
            .count(),
        20
    );
    // Under a pseudo-terminal (util-linux `script`), fetches show as live bars.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        common::require_or_skip(
            "`script` (for the terminal half)",
            "install util-linux's `script` (Debian: `bsdutils`)",
        );
        return;
    }
    let _ = std::fs::remove_file(ctx.lock_path());
    let typescript = ctx.root.join("typescript");
    let command = format!(
        "{} --store {} plugins lock",
        common::berth_bin().display(),
        ctx.root.join("tty-store").display()
    );
    let status = std::process::Command::new("script")
        .args(["-qec", &command])
        .arg(&typescript)
        .current_dir(&ctx.work)
        .env("HOME", &ctx.home)
        .env("BERTH_GITHUB_URL", ctx.github_url())
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("script");
    assert!(status.success());
    let text =
        String::from_utf8_lossy(&std::fs::read(&typescript).expect("typescript")).into_owned();
    assert!(
        text.contains("\x1b[2K"),
        "bars redraw in place on a terminal"
    );
    assert!(
        text.contains("Locked"),
        "and the summary line follows:\n{text}"
    );
}
