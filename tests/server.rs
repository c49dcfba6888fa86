//! `berth serve` on a real socket (issue #5): conversations restore byte-for-byte after a
//! restart even when upstream moved or vanished; concurrent starts share fetches; refusals.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{GitHttpServer, ServeProcess, TestContext, copy_tree, fixtures, list_dir};
use serde_json::{Value, json};

/// A running `berth serve` on a free port with this context's store.
struct Server;

impl Server {
    fn start(
        ctx: &TestContext,
        data: &Path,
        args: &[&str],
        env: &[(&str, String)],
    ) -> ServeProcess {
        let mut cmd = ctx.berth();
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .args(args);
        ServeProcess::start(cmd)
    }

    fn client() -> reqwest::blocking::Client {
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .expect("client")
    }
}

fn created_id(status: u16, body: &str) -> String {
    assert_eq!(status, 201, "{body}");
    serde_json::from_str::<Value>(body).expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

#[test]
fn conversations_restore_byte_for_byte_after_upstream_moves_and_vanishes() {
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    let lint = ctx.repo("lint");
    lint.copy_fixture("lint", "");
    lint.commit("lint");
    copy_tree(
        &fixtures().join("plugins/house-rules"),
        &ctx.work.join("house-rules"),
    );
    // A lockfile made by the CLI, for the second way to start a conversation.
    ctx.write_manifest(
        "[[plugin]]\nsource = \"./house-rules\"\n\n[[plugin]]\nsource = \"github:acme/lint\"\n",
    );
    ctx.ok(&["plugins", "lock"]);
    let lockfile = ctx.lock_text().replace(
        "./house-rules",
        &ctx.work.join("house-rules").display().to_string(),
    );
    let data = ctx.root.join("data");
    let server = Server::start(&ctx, &data, &["--allow-local-sources"], &[]);
    let (status, body) = server.post(&json!({"plugins": [
        {"source": "github:acme/review", "ref": "v1"},
        {"source": "github:acme/lint"}
    ], "metadata": {"user": "ada"}}));
    let first = created_id(status, &body);
    let (status, body) = server.post(&json!({"lockfile": lockfile}));
    let second = created_id(status, &body);
    let before: Vec<String> = [&first, &second]
        .iter()
        .map(|id| {
            let (status, set) = server.get(&format!("/api/conversations/{id}/plugin_set"));
            assert_eq!(status, 200, "{set}");
            set
        })
        .collect();
    let (_, lock_before) = server.get(&format!("/api/conversations/{first}/lockfile"));
    server.stop();

    // Upstream moves the tag and loses a repository entirely.
    review.write("later.md", "later\n");
    review.commit("two");
    review.git(&["tag", "-f", "v1"]);
    std::fs::remove_dir_all(&lint.path).expect("delete the lint repository");

    let offline = Server::start(&ctx, &data, &["--offline", "--allow-local-sources"], &[]);
    for (id, expected) in [&first, &second].iter().zip(&before) {
        let (status, set) = offline.get(&format!("/api/conversations/{id}/plugin_set"));
        assert_eq!(status, 200, "{set}");
        assert_eq!(
            &set, expected,
            "conversation {id} answers byte-for-byte as before"
        );
    }
    let (_, lock_after) = offline.get(&format!("/api/conversations/{first}/lockfile"));
    assert_eq!(lock_after, lock_before);
    let (_, listed) = offline.get("/api/conversations");
    let listed: Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(listed["conversations"].as_array().expect("list").len(), 2);
    let (_, detail) = offline.get(&format!("/api/conversations/{first}"));
    assert_eq!(
        serde_json::from_str::<Value>(&detail).expect("JSON")["metadata"],
        json!({"user": "ada"})
    );
    offline.stop();

    // Online, a store entry that went missing is fetched again at exactly the locked commit.
    let review_entry = list_dir(&ctx.store.join("store-v1"))
        .into_iter()
        .find(|e| e.ends_with("-review"))
        .expect("review entry");
    berth_store::remove_tree(&ctx.store.join("store-v1").join(&review_entry))
        .expect("remove entry");
    let online = Server::start(&ctx, &data, &["--allow-local-sources"], &[]);
    let (status, set) = online.get(&format!("/api/conversations/{first}/plugin_set"));
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        set, before[0],
        "refetched at the locked commit, not the moved tag"
    );
    online.stop();
}

#[test]
fn two_hundred_concurrent_starts_fetch_each_plugin_once() {
    let ctx = TestContext::new();
    for i in 0..10 {
        let repo = ctx.repo(&format!("p{i}"));
        repo.copy_fixture("lint", "");
        repo.write(".plugin/plugin.json", &format!("{{\"name\": \"p{i}\"}}"));
        repo.commit("plugin");
    }
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let data = ctx.root.join("data");
    let server = Server::start(
        &ctx,
        &data,
        &["--allow-local-sources", "--jobs", "3"],
        &[("BERTH_GITHUB_URL", git.url())],
    );
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..200)
            .map(|i| {
                let server = &server;
                scope.spawn(move || {
                    let plugins: Vec<Value> = [i % 10, (i + 3) % 10, (i + 7) % 10]
                        .iter()
                        .map(|p| json!({"source": format!("github:acme/p{p}")}))
                        .collect();
                    server.post(&json!({"plugins": plugins})).0
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    assert!(
        statuses.iter().all(|s| *s == 201),
        "every start answered 201: {statuses:?}"
    );
    let (_, listed) = server.get("/api/conversations");
    assert_eq!(
        serde_json::from_str::<Value>(&listed).expect("JSON")["conversations"]
            .as_array()
            .expect("list")
            .len(),
        200
    );
    let mut fetches = git.fetches();
    fetches.sort();
    let expected: Vec<String> = (0..10)
        .map(|i| format!("/acme/p{i}.git/git-upload-pack"))
        .collect();
    assert_eq!(
        fetches, expected,
        "each plugin's repository served exactly one pack"
    );
    // The store verifies: every entry hashes to its name.
    let entries = list_dir(&ctx.store.join("store-v1"));
    assert_eq!(entries.len(), 10);
    for entry in entries {
        let actual =
            berth_store::hash_path(&ctx.store.join("store-v1").join(&entry)).expect("hash");
        assert!(entry.starts_with(&actual.to_nix32()), "{entry} is intact");
    }
    server.stop();
}

#[test]
fn refusals_on_a_real_socket_write_nothing() {
    let ctx = TestContext::new();
    let data = ctx.root.join("data");
    let server = Server::start(&ctx, &data, &[], &[("BERTH_API_KEY", "k3y".into())]);
    let client = Server::client();
    let post = |key: Option<&str>, body: String| {
        let mut request = client
            .post(format!("{}/api/conversations", server.base))
            .header("content-type", "application/json");
        if let Some(key) = key {
            request = request.header("x-session-api-key", key);
        }
        let response = request.body(body).send().expect("POST");
        let status = response.status().as_u16();
        let body: Value =
            serde_json::from_str(&response.text().expect("text")).expect("error JSON");
        (
            status,
            body["error"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    let ok_body = json!({"plugins": [{"source": "github:acme/tools"}]}).to_string();
    assert_eq!(
        post(None, ok_body.clone()),
        (401, "unauthorized".to_owned())
    );
    assert_eq!(post(Some("wrong"), ok_body).0, 401);
    assert_eq!(
        post(
            Some("k3y"),
            json!({"plugins": [{"source": "github:acme/tools", "repo_path": "../.."}]}).to_string()
        )
        .0,
        400
    );
    assert_eq!(
        post(
            Some("k3y"),
            json!({"plugins": [{"source": "file:///etc"}]}).to_string()
        )
        .0,
        403
    );
    let huge = json!({"plugins": [], "metadata": "x".repeat(2 * 1024 * 1024)}).to_string();
    assert_eq!(post(Some("k3y"), huge), (413, "too_large".to_owned()));
    assert!(
        list_dir(&data.join("conversations")).is_empty(),
        "nothing written"
    );
    let (status, _) = server.get("/health");
    assert_eq!(status, 200, "health needs no key");
    server.stop();
}

/// A plugin folder with `kib` KiB of bytes that do not compress, as a `.tar.gz` in `dir`.
fn noisy_archive(dir: &Path, name: &str, kib: usize) {
    let plugin = dir.join("src").join(name);
    std::fs::create_dir_all(plugin.join("skills/big")).expect("mkdir");
    std::fs::write(
        plugin.join("skills/big/SKILL.md"),
        "---\ndescription: big\n---\nBig.\n",
    )
    .expect("write");
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..kib * 1024)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect();
    std::fs::write(plugin.join("noise.bin"), noise).expect("write");
    std::fs::write(
        dir.join(format!("{name}.tar.gz")),
        common::tar_gz(&plugin, name),
    )
    .expect("write archive");
}

#[test]
fn a_request_past_its_deadline_stops_fetching_and_stores_nothing() {
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    noisy_archive(&served, "slow", 60);
    let files = common::FileServer::start(&served, None);
    // 60 KiB at 1 KiB per 50 ms: about 3 s, past the 1 s deadline.
    files.slow("slow.tar.gz");
    let data = ctx.root.join("data");
    let server = Server::start(
        &ctx,
        &data,
        &["--allow-local-sources", "--fetch-timeout", "1"],
        &[],
    );
    let started = std::time::Instant::now();
    let (status, body) = server.post(&json!({"plugins": [{"source": files.url("slow.tar.gz")}]}));
    assert_eq!(status, 504, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "answered at the deadline"
    );
    // The download stops: berth hangs up instead of reading the rest.
    let hung_up = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        files.requests().iter().any(|r| r == "HANGUP /slow.tar.gz")
    });
    assert!(hung_up, "{:?}", files.requests());
    // Past the time the whole download would have taken, nothing was stored.
    std::thread::sleep(Duration::from_millis(3500).saturating_sub(started.elapsed()));
    assert!(
        !files.requests().iter().any(|r| r == "SENT /slow.tar.gz"),
        "{:?}",
        files.requests()
    );
    let (_, listed) = server.get("/api/conversations");
    assert_eq!(
        serde_json::from_str::<Value>(&listed).expect("JSON")["conversations"],
        json!([])
    );
    assert!(list_dir(&data.join("conversations")).is_empty());
    assert!(ctx.store_entries().is_empty(), "{:?}", ctx.store_entries());
    server.stop();
}

#[test]
fn the_server_honours_the_archive_size_limit() {
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    noisy_archive(&served, "big", 64);
    let files = common::FileServer::start(&served, None);
    let data = ctx.root.join("data");
    let server = Server::start(
        &ctx,
        &data,
        &["--allow-local-sources"],
        &[("BERTH_ARCHIVE_MAX_BYTES", "16K".into())],
    );
    let (status, body) = server.post(&json!({"plugins": [{"source": files.url("big.tar.gz")}]}));
    assert!(status == 422 || status == 502, "{status} {body}");
    assert!(body.contains("BERTH_ARCHIVE_MAX_BYTES"), "{body}");
    assert!(list_dir(&data.join("conversations")).is_empty());
    assert!(ctx.store_entries().is_empty());
    // The same archive is accepted by a server with the default limit.
    let roomy_data = ctx.root.join("roomy");
    let roomy = Server::start(&ctx, &roomy_data, &["--allow-local-sources"], &[]);
    let (status, body) = roomy.post(&json!({"plugins": [{"source": files.url("big.tar.gz")}]}));
    assert_eq!(status, 201, "{body}");
    server.stop();
    roomy.stop();
}

#[test]
fn a_git_fetch_past_its_deadline_is_not_made() {
    // Each request to the git server takes 700 ms: listing the refs already passes the
    // 1 s deadline, so berth must not go on to fetch the pack.
    let ctx = TestContext::new();
    let repo = ctx.repo("slow");
    repo.copy_fixture("lint", "");
    repo.commit("plugin");
    let git = GitHttpServer::start(
        &ctx.upstream,
        &ctx.root.join("http.log"),
        &["--delay-ms", "700"],
    );
    let data = ctx.root.join("data");
    let server = Server::start(
        &ctx,
        &data,
        &["--allow-local-sources", "--fetch-timeout", "1"],
        &[("BERTH_GITHUB_URL", git.url())],
    );
    let (status, body) = server.post(&json!({"plugins": [{"source": "github:acme/slow"}]}));
    assert_eq!(status, 504, "{body}");
    // Long enough for the listing to end and a fetch to have been made and stored.
    std::thread::sleep(Duration::from_secs(3));
    assert!(git.fetches().is_empty(), "{:?}", git.requests());
    assert!(list_dir(&data.join("conversations")).is_empty());
    assert!(ctx.store_entries().is_empty());
    server.stop();
}

#[test]
fn redirects_must_stay_within_the_source_policy() {
    // Local sources are on, so plain http to this machine is allowed, and https only to
    // the default hosts: a redirect to any other https host is refused before berth
    // connects to it, for an archive and for git over http.
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    noisy_archive(&served, "real", 1);
    let files = common::FileServer::start(&served, None);
    files.redirect("moved.tar.gz", &files.url("real.tar.gz"));
    // The refused target is on this machine too (127.0.0.9, nothing listening), so even
    // a berth that followed the redirect would send nothing off the machine.
    files.redirect("away.tar.gz", "https://127.0.0.9:9/x.tar.gz");
    files.redirect(
        "acme/tools.git/info/refs?service=git-upload-pack",
        "https://127.0.0.9:9/acme/tools.git/info/refs?service=git-upload-pack",
    );
    let data = ctx.root.join("data");
    let server = Server::start(&ctx, &data, &["--allow-local-sources"], &[]);
    for source in [files.url("away.tar.gz"), files.url("acme/tools.git")] {
        let (status, body) = server.post(&json!({"plugins": [{"source": source}]}));
        assert_eq!(status, 403, "{source}: {body}");
        assert!(body.contains("127.0.0.9"), "{body}");
    }
    assert!(list_dir(&data.join("conversations")).is_empty());
    assert!(ctx.store_entries().is_empty());
    // A redirect the policy allows is followed.
    let (status, body) = server.post(&json!({"plugins": [{"source": files.url("moved.tar.gz")}]}));
    assert_eq!(status, 201, "{body}");
    server.stop();
}

#[test]
fn a_backslash_cannot_smuggle_a_host_past_the_policy() {
    // `\` ends the authority for the HTTP client, so the host is `127.0.0.9` (this
    // machine, nothing listening: a berth that let it through sends nothing off it).
    let ctx = TestContext::new();
    let data = ctx.root.join("data");
    let server = Server::start(&ctx, &data, &[], &[]);
    for source in [
        "https://127.0.0.9:9\\@github.com/x.tar.gz",
        "https://127.0.0.9:9\\@github.com/acme/tools.git",
    ] {
        let (status, body) = server.post(&json!({"plugins": [{"source": source}]}));
        assert_eq!(status, 403, "{source}: {body}");
        assert!(body.contains("127.0.0.9"), "{body}");
    }
    assert!(list_dir(&data.join("conversations")).is_empty());
    server.stop();
}
