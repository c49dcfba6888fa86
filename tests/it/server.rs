//! `berth serve` on a real socket (issue #5): conversations restore byte-for-byte after a
//! restart even when upstream moved or vanished; concurrent starts share fetches; refusals.

use crate::common;

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
    // This server's own limit, not an upstream failure: 413, with a code naming the limit.
    assert_eq!(status, 413, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(error["error"]["code"], "archive_over_size_limit", "{body}");
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

/// A `berth serve` whose log (stderr) the test reads.
struct LoggedServer {
    child: std::process::Child,
    base: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl LoggedServer {
    fn start(
        ctx: &TestContext,
        data: &Path,
        args: &[&str],
        env: &[(&str, String)],
    ) -> LoggedServer {
        use std::io::BufRead;
        let mut cmd = ctx.berth();
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("start berth serve");
        let stderr = child.stderr.take().expect("stderr");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (base_tx, base_rx) = std::sync::mpsc::channel();
        let writer = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.split("Listening on ").nth(1) {
                    let _ = base_tx.send(addr.trim().to_owned());
                }
                let mut log = writer.lock().expect("log");
                log.push_str(&line);
                log.push('\n');
            }
        });
        let base = base_rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("berth serve did not start: {}", log.lock().expect("log")));
        LoggedServer { child, base, log }
    }

    fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    /// Waits until the log holds `needle` (requests are logged as they finish).
    fn wait_for_log(&self, needle: &str) -> String {
        for _ in 0..200 {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("`{needle}` never reached the log:\n{}", self.log());
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> (u16, Value) {
        let mut request = Server::client().request(
            method.parse().expect("method"),
            format!("{}{path}", self.base),
        );
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request.send().expect("request");
        let status = response.status().as_u16();
        let text = response.text().expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
        )
    }
}

impl Drop for LoggedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_key_in_a_query_string_never_reaches_the_log() {
    let ctx = TestContext::new();
    let data = ctx.root.join("data");
    let server = LoggedServer::start(&ctx, &data, &[], &[("BERTH_API_KEY", "k3y".into())]);
    // A client that puts its key (or any secret) in the query string.
    for path in [
        "/api/conversations?api_key=SECRET-0451",
        "/api/conversations/00000000-0000-0000-0000-000000000000/plugin_set?token=SECRET-0451&x=1",
        "/health?api_key=SECRET-0451",
    ] {
        let (status, _) = server.request("GET", path, &[("x-session-api-key", "k3y")], None);
        assert!(status == 200 || status == 404, "{path}: {status}");
    }
    let log = server.wait_for_log("/health");
    assert!(
        log.contains("/api/conversations/00000000-0000-0000-0000-000000000000/plugin_set"),
        "the path is logged:\n{log}"
    );
    assert!(log.contains("/api/conversations"), "{log}");
    assert!(
        !log.contains("SECRET"),
        "the query string was logged:\n{log}"
    );
    assert!(!log.contains("api_key"), "{log}");
}

#[test]
fn without_a_key_requests_for_other_hosts_are_421() {
    let ctx = TestContext::new();
    let help = ctx.ok(&["serve", "--help"]);
    assert!(
        help.stdout.contains("--allowed-host-header")
            && help.stdout.contains("BERTH_ALLOWED_HOST_HEADERS"),
        "{}",
        help.stdout
    );
    let data = ctx.root.join("data");
    let server = LoggedServer::start(
        &ctx,
        &data,
        &["--allowed-host-header", "berth.internal"],
        &[],
    );
    let port = server.base.rsplit(':').next().expect("port").to_owned();
    // DNS rebinding: a page at `rebind.example` pointed that name at 127.0.0.1; its
    // browser sends the name it used.
    let rebind = format!("rebind.example:{port}");
    for path in ["/api/conversations", "/health"] {
        let (status, body) = server.request("GET", path, &[("host", &rebind)], None);
        assert_eq!(status, 421, "{path}: {body}");
        assert_eq!(body["error"]["code"], "misdirected_request", "{body}");
    }
    let (status, body) = server.request(
        "POST",
        "/api/conversations",
        &[("host", &rebind)],
        Some(json!({"plugins": [{"source": "github:acme/tools"}]}).to_string()),
    );
    assert_eq!(status, 421, "{body}");
    assert!(list_dir(&data.join("conversations")).is_empty());
    // The bound address (what the client sends by default), loopback names and the
    // allowed name are answered.
    for host in [
        None,
        Some(format!("localhost:{port}")),
        Some(format!("[::1]:{port}")),
        Some(format!("berth.internal:{port}")),
    ] {
        let headers: Vec<(&str, &str)> = host.iter().map(|h| ("host", h.as_str())).collect();
        let (status, body) = server.request("GET", "/api/conversations", &headers, None);
        assert_eq!(status, 200, "{host:?}: {body}");
    }
    drop(server);
    // The same names from the environment; and with an API key, `Host` is not checked.
    let from_env = LoggedServer::start(
        &ctx,
        &data,
        &[],
        &[(
            "BERTH_ALLOWED_HOST_HEADERS",
            "one.internal,two.internal".into(),
        )],
    );
    for (host, expected) in [("two.internal", 200), ("three.internal", 421)] {
        let (status, body) = from_env.request("GET", "/health", &[("host", host)], None);
        assert_eq!(status, expected, "{host}: {body}");
    }
    drop(from_env);
    let keyed = LoggedServer::start(&ctx, &data, &[], &[("BERTH_API_KEY", "k3y".into())]);
    let (status, body) = keyed.request(
        "GET",
        "/api/conversations",
        &[("host", &rebind), ("x-session-api-key", "k3y")],
        None,
    );
    assert_eq!(status, 200, "{body}");
}

/// Mounts a tmpfs of `size` at `dir` (as `tests/it/faults.rs` does); `None` (after
/// [`common::require_or_skip`], which fails in CI) when this machine cannot, which needs
/// root.
fn tmpfs(dir: &Path, size: &str) -> Option<Mount> {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        common::require_or_skip("mounting a tmpfs", "run the tests as root");
    }
    mounted.then(|| Mount(dir.to_owned()))
}

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Fills the file system of `dir` with `dir/filler` until it is full.
fn fill(dir: &Path) -> std::path::PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("create filler");
    let chunk = vec![0xa5u8; 64 * 1024];
    loop {
        if let Err(e) = file.write_all(&chunk).and_then(|()| file.sync_all()) {
            assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
            return path;
        }
    }
}

#[test]
fn a_full_disk_is_507_leaves_no_staging_and_the_next_start_succeeds() {
    let ctx = TestContext::new();
    let Some(_data_disk) = tmpfs(&ctx.root.join("data-disk"), "512k") else {
        return;
    };
    let Some(_store_disk) = tmpfs(&ctx.root.join("store-disk"), "2m") else {
        return;
    };
    let data = ctx.root.join("data-disk/data");
    let store = ctx.root.join("store-disk/store");
    for name in ["one", "two"] {
        copy_tree(
            &fixtures().join("plugins/house-rules"),
            &ctx.work.join(name),
        );
        // Enough bytes that the plugin needs room in the store.
        std::fs::write(ctx.work.join(name).join("data.bin"), vec![7u8; 200 * 1024]).expect("write");
    }
    let source = |name: &str| {
        json!({"plugins": [{"source": ctx.work.join(name).display().to_string()}]}).to_string()
    };
    let server = LoggedServer::start(
        &ctx,
        &data,
        &["--allow-local-sources"],
        &[("BERTH_STORE", store.display().to_string())],
    );
    // What a failed write may leave: a conversation's `.tmp-<id>`, a store staging folder.
    let staging = |dir: &Path| -> Vec<String> {
        list_dir(dir)
            .into_iter()
            .filter(|f| !f.ends_with(".lock"))
            .collect()
    };

    // The data folder's disk is full: the conversation cannot be written.
    let data_filler = fill(&ctx.root.join("data-disk"));
    let (status, body) = server.request("POST", "/api/conversations", &[], Some(source("one")));
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_storage", "{body}");
    assert_eq!(
        staging(&data.join("conversations")),
        Vec::<String>::new(),
        "staging removed at once"
    );
    std::fs::remove_file(data_filler).expect("free the data disk");

    // The store's disk is full: the plugin cannot be stored.
    let store_filler = fill(&ctx.root.join("store-disk"));
    let (status, body) = server.request("POST", "/api/conversations", &[], Some(source("two")));
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_storage", "{body}");
    assert_eq!(
        staging(&store.join("tmp")),
        Vec::<String>::new(),
        "store staging removed"
    );
    assert!(list_dir(&data.join("conversations")).is_empty());
    std::fs::remove_file(store_filler).expect("free the store disk");

    // With space back, the same requests succeed, without a restart.
    let mut ids = Vec::new();
    for name in ["one", "two"] {
        let (status, body) = server.request("POST", "/api/conversations", &[], Some(source(name)));
        assert_eq!(status, 201, "{name}: {body}");
        ids.push(body["id"].as_str().expect("id").to_owned());
    }
    drop(server);
    // And the server starts again with both conversations.
    let again = LoggedServer::start(
        &ctx,
        &data,
        &["--allow-local-sources"],
        &[("BERTH_STORE", store.display().to_string())],
    );
    let (status, body) = again.request("GET", "/api/conversations", &[], None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["conversations"].as_array().expect("list").len(),
        2,
        "{body}"
    );
    for id in ids {
        let (status, body) = again.request(
            "GET",
            &format!("/api/conversations/{id}/plugin_set"),
            &[],
            None,
        );
        assert_eq!(status, 200, "{body}");
    }
}

#[test]
fn a_hostile_skill_costs_the_server_no_more_than_its_size_and_sigterm_stops_it() {
    // The attack: 150,000 levels of YAML flow nesting in a 300 KB SKILL.md, which the YAML
    // parser takes minutes over. The server counts the nesting before parsing, answers at
    // once with the skill skipped, and stops on SIGTERM.
    let ctx = TestContext::new();
    let plugin = ctx.work.join("deep");
    std::fs::create_dir_all(plugin.join("skills/deep")).expect("mkdir");
    std::fs::write(
        plugin.join("skills/deep/SKILL.md"),
        format!(
            "---\nname: deep\ndescription: {}\n---\nbody\n",
            "[".repeat(150_000)
        ),
    )
    .expect("write");
    let data = ctx.root.join("data");
    let server = Server::start(
        &ctx,
        &data,
        &["--allow-local-sources", "--fetch-timeout", "60"],
        &[],
    );
    let source = plugin.display().to_string();
    let (status, body) = server.post(&json!({"plugins": [{"source": source}]}));
    let id = created_id(status, &body);
    let set: Value = serde_json::from_str(&body).expect("JSON");
    let warnings = set["plugin_set"]["warnings"].to_string();
    assert!(
        warnings.contains("skipped skill `skills/deep/SKILL.md`")
            && warnings.contains("over berth's limit of 1024"),
        "{warnings}"
    );
    assert_eq!(set["plugin_set"]["skills"], json!([]), "{body}");
    let (status, _) = server.get(&format!("/api/conversations/{id}/plugin_set"));
    assert_eq!(status, 200);
    server.terminate();
    let exit = server.wait_exit();
    assert!(exit.success(), "{exit:?}");
}
