//! Private sources (issue #4): credentials from `${VAR}`, `~/.netrc`, git credential helpers
//! and (discouraged) the URL itself reach a password-protected `git http-backend` and
//! archive server, and the secret never appears in anything berth writes or prints.

use crate::common;

use std::path::Path;

use common::{FileServer, GitHttpServer, TestContext, fixtures};

const SECRET: &str = "s3cret-T0KEN-9f8e7d";

/// Every file under `dir`, recursively (store entries included).
fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            files(&path, out);
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// Fails if the secret is in `text` or in any file berth wrote (the store, the lockfile).
fn assert_no_secret(ctx: &TestContext, outputs: &[String]) {
    for text in outputs {
        assert!(!text.contains(SECRET), "the secret was printed:\n{text}");
    }
    let mut written = Vec::new();
    files(&ctx.store, &mut written);
    if ctx.lock_path().exists() {
        written.push(ctx.lock_path());
    }
    assert!(written.len() > 3, "the store is real: {written:?}");
    for path in written {
        let bytes = std::fs::read(&path).expect("read");
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "the secret is in {}",
            path.display()
        );
    }
}

fn private_project(ctx: &TestContext) -> (GitHttpServer, FileServer) {
    let repo = ctx.repo("private");
    repo.copy_fixture("review", "");
    repo.commit("private");
    repo.tag("v1");
    let git = GitHttpServer::start(
        &ctx.upstream,
        &ctx.root.join("http.log"),
        &["--user", &format!("alice:{SECRET}")],
    );
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::fs::write(
        served.join("lint.tar.gz"),
        common::tar_gz(&fixtures().join("plugins/lint"), "lint"),
    )
    .expect("write");
    let files = FileServer::start(&served, Some(&format!("alice:{SECRET}")));
    (git, files)
}

/// Runs the whole life cycle with `env` and returns everything berth printed.
fn life_cycle(ctx: &TestContext, env: &[(&str, String)]) -> Vec<String> {
    let mut printed = Vec::new();
    for args in [
        &["-v", "plugins", "lock"][..],
        &["-v", "plugins", "sync"][..],
        &["plugins", "list"][..],
        &["plugins", "list", "--json"][..],
        &["plugins", "show", "--json"][..],
        &["-v", "plugins", "verify", "--json"][..],
    ] {
        let mut cmd = ctx.berth();
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.args(args).output().expect("run");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "{args:?}:\n{stderr}");
        printed.push(stdout);
        printed.push(stderr);
    }
    printed
}

#[test]
fn environment_variables_in_sources() {
    let ctx = TestContext::new();
    let (git, files) = private_project(&ctx);
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"http://alice:${{GIT_TOKEN}}@127.0.0.1:{}/acme/private.git\"\nref = \"v1\"\n\n[[plugin]]\nsource = \"http://alice:${{GIT_TOKEN}}@127.0.0.1:{}/lint.tar.gz\"\n",
        git.port, files.port
    ));
    let printed = life_cycle(&ctx, &[("GIT_TOKEN", SECRET.to_owned())]);
    let lock = ctx.lock_text();
    assert!(
        lock.contains("${GIT_TOKEN}"),
        "the lock keeps the reference:\n{lock}"
    );
    assert_no_secret(&ctx, &printed);
    // Without the variable, the error says which one is missing.
    berth_snapshot!(
        ctx.filters(),
        ctx.berth()
            .env_remove("GIT_TOKEN")
            .env("BERTH_STORE", ctx.root.join("s2"))
            .args(["plugins", "sync"]),
        @r#"
        success: false
        exit_code: 1
        ----- stdout -----

        ----- stderr -----
        error: could not sync 2 plugins: plugin `review`, plugin `lint`
          plugin `review`: environment variable `GIT_TOKEN` used in the source is not set; export it and try again
          plugin `lint`: environment variable `GIT_TOKEN` used in the source is not set; export it and try again
        "#
    );
}

#[test]
fn netrc_and_credential_helpers() {
    let ctx = TestContext::new();
    let (git, files) = private_project(&ctx);
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"http://127.0.0.1:{}/acme/private.git\"\n\n[[plugin]]\nsource = \"http://127.0.0.1:{}/lint.tar.gz\"\n",
        git.port, files.port
    ));
    // Without credentials: a clear failure, no prompt, nothing written.
    let denied = ctx.run(&["plugins", "lock"]);
    assert_eq!(denied.code, 1, "{}", denied.stderr);
    assert!(!ctx.lock_path().exists());
    // ~/.netrc serves both the git server and the archive server.
    std::fs::write(
        ctx.home.join(".netrc"),
        format!("machine 127.0.0.1\n  login alice\n  password {SECRET}\n"),
    )
    .expect("netrc");
    let printed = life_cycle(&ctx, &[]);
    assert_no_secret(&ctx, &printed);
    // A git credential helper alone serves the git server (a fresh store fetches again).
    std::fs::remove_file(ctx.home.join(".netrc")).expect("rm netrc");
    let config = ctx.root.join("gitconfig");
    std::fs::write(
        &config,
        format!("[credential]\n\thelper = \"!f() {{ test \\\"$1\\\" = get && echo username=alice && echo password={SECRET}; }}; f\"\n"),
    )
    .expect("config");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"http://127.0.0.1:{}/acme/private.git\"\n",
        git.port
    ));
    let store = ctx.root.join("helper-store");
    let out = ctx
        .berth()
        .env("GIT_CONFIG_GLOBAL", &config)
        .env("BERTH_STORE", &store)
        .args(["-v", "plugins", "sync"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains(SECRET));
    assert!(!common::list_dir(&store.join("store-v1")).is_empty());
}

#[test]
fn a_literal_credential_is_used_but_never_written_or_printed() {
    let ctx = TestContext::new();
    let (git, _files) = private_project(&ctx);
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"http://alice:{SECRET}@127.0.0.1:{}/acme/private.git\"\n",
        git.port
    ));
    let mut printed = life_cycle(&ctx, &[]);
    assert!(
        printed[1].contains("has a credential written in it") && printed[1].contains("${VAR}"),
        "{}",
        printed[1]
    );
    // A failing fetch's error message does not carry it either.
    let manifest = std::fs::read_to_string(ctx.manifest_path()).expect("read");
    ctx.write_manifest(&format!("{manifest}ref = \"no-such-branch\"\n"));
    let failed = ctx.run(&["-v", "plugins", "lock"]);
    assert_eq!(failed.code, 1);
    assert!(
        failed.errors()[0].contains("no-such-branch"),
        "{}",
        failed.stderr
    );
    printed.push(failed.stdout);
    printed.push(failed.stderr);
    assert_no_secret(&ctx, &printed);
}

#[test]
fn plain_http_credentials_are_not_sent_to_other_machines() {
    let ctx = TestContext::new();
    ctx.write_manifest(
        "[[plugin]]\nsource = \"http://alice:${GIT_TOKEN}@example.invalid/acme/x.git\"\n",
    );
    let run = berth_snapshot!(
        ctx.filters(),
        ctx.berth().env("GIT_TOKEN", SECRET).args(["plugins", "lock"]),
        @r#"
        success: false
        exit_code: 1
        ----- stdout -----

        ----- stderr -----
        error: plugins.toml:2: `http://alice:${GIT_TOKEN}@example.invalid/acme/x.git`: refusing to send credentials over plain http to another machine; use https
        "#
    );
    assert!(!run.stderr.contains(SECRET));
}

#[test]
fn netrc_credentials_never_follow_a_redirect_to_another_host() {
    let ctx = TestContext::new();
    let plugin = ctx.root.join("plugin");
    std::fs::create_dir_all(plugin.join("skills")).expect("mkdir");
    std::fs::write(plugin.join("skills/s.md"), "skill\n").expect("write");
    let first = ctx.root.join("first");
    let second = ctx.root.join("second");
    std::fs::create_dir_all(&first).expect("mkdir");
    std::fs::create_dir_all(&second).expect("mkdir");
    std::fs::write(second.join("p.tar.gz"), common::tar_gz(&plugin, "p")).expect("write");
    let origin = FileServer::start(&first, None);
    let elsewhere = FileServer::start(&second, None);
    // `localhost` is another host than `127.0.0.1` for the client, though it is this machine.
    origin.redirect(
        "p.tar.gz",
        &format!("http://localhost:{}/p.tar.gz", elsewhere.port),
    );
    std::fs::write(
        ctx.home.join(".netrc"),
        "machine 127.0.0.1 login alice password s3cret\n",
    )
    .expect("netrc");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\n",
        origin.url("p.tar.gz")
    ));
    ctx.ok(&["plugins", "lock"]);
    assert_eq!(origin.requests(), ["GET /p.tar.gz auth=true"]);
    assert_eq!(elsewhere.requests(), ["GET /p.tar.gz auth=false"]);
}
