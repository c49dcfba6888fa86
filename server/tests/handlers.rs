//! Every route and every error status, through `app(state).oneshot(request)` (issue #5).

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_server::{AppState, Config, DEFAULT_ALLOWED_HOSTS, SourcePolicy, app};
use berth_store::Store;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    state: AppState,
}

const KEY: &str = "test-key-123";

fn plugin(root: &Path, name: &str) -> PathBuf {
    let dir = root.join("plugins").join(name);
    std::fs::create_dir_all(dir.join("skills")).expect("mkdir");
    std::fs::write(
        dir.join("skills").join(format!("{name}.md")),
        format!("---\ndescription: {name} skill\n---\nUse {name}.\n"),
    )
    .expect("write");
    dir
}

fn fixture_with(allow_local: bool, timeout: Duration) -> Fixture {
    fixture_configured(allow_local, timeout, Some(KEY), &[])
}

/// A server with no API key, answering the `Host` names `allowed` besides its own.
fn keyless_fixture(allowed: &[&str]) -> Fixture {
    fixture_configured(true, Duration::from_secs(60), None, allowed)
}

fn fixture_configured(
    allow_local: bool,
    timeout: Duration,
    api_key: Option<&str>,
    allowed_host_headers: &[&str],
) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    plugin(&root, "one");
    plugin(&root, "two");
    let config = Config {
        data_dir: berth_server::DataDir::Folder(root.join("data")),
        store: Store::new(root.join("store")),
        api_key: api_key.map(str::to_owned),
        allowed_host_headers: allowed_host_headers
            .iter()
            .map(|h| (*h).to_owned())
            .collect(),
        run_policy: Default::default(),
        policy: SourcePolicy {
            allowed_hosts: DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
            allow_local,
            github_url: "https://github.com".into(),
            pins: Vec::new(),
        },
        marketplaces: Vec::new(),
        offline: false,
        fetch_timeout: timeout,
        jobs: 4,
        home_dir: Some(root.join("home")),
        max_skills: 100,
        index_url: berth_resolver::DEFAULT_INDEX_URL.into(),
        archive_limits: Default::default(),
        substituters: Vec::new(),
        push_to: None,
        drain: Duration::ZERO,
        ref_ttl: Duration::ZERO,
        record_key: None,
        connections: Default::default(),
    };
    let (state, _) = AppState::open(config).expect("open");
    Fixture {
        _dir: dir,
        root,
        state,
    }
}

fn fixture() -> Fixture {
    fixture_with(true, Duration::from_secs(60))
}

async fn call(f: &Fixture, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Vec<u8>) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("x-session-api-key", KEY);
    let body = match body {
        Some(v) => {
            request = request.header("content-type", "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    send(f, request.body(body).expect("request")).await
}

async fn send(f: &Fixture, request: Request<Body>) -> (StatusCode, Vec<u8>) {
    let (status, _, bytes) = send_for_headers(f, request).await;
    (status, bytes)
}

async fn send_for_headers(
    f: &Fixture,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let response = app(f.state.clone())
        .oneshot(request)
        .await
        .expect("response");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    (status, headers, bytes)
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(bytes)))
}

fn error_code(bytes: &[u8]) -> String {
    json_of(bytes)["error"]["code"]
        .as_str()
        .expect("error shape")
        .to_owned()
}

fn conversations_on_disk(f: &Fixture) -> usize {
    std::fs::read_dir(f.root.join("data/conversations")).map_or(0, |d| d.count())
}

fn sources(f: &Fixture, names: &[&str]) -> Value {
    json!(
        names
            .iter()
            .map(|n| json!({"source": f.root.join("plugins").join(n).display().to_string()}))
            .collect::<Vec<_>>()
    )
}

#[tokio::test]
async fn the_whole_life_of_a_conversation() {
    let f = fixture();
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": sources(&f, &["one", "two"]), "metadata": {"ticket": 7}})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let created = json_of(&body);
    let id = created["id"].as_str().expect("id").to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    assert_eq!(created["plugins"][1]["name"], "two");
    assert!(
        created["lockfile"]
            .as_str()
            .expect("lockfile")
            .starts_with("# This file is generated")
    );
    assert_eq!(created["plugin_set"]["skills"][0]["name"], "one");

    let (status, body) = call(&f, "GET", "/api/conversations", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["conversations"][0]["id"], json!(id));
    assert_eq!(
        json_of(&body)["conversations"][0]["plugins"],
        json!(["one", "two"])
    );

    let (status, body) = call(&f, "GET", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["metadata"], json!({"ticket": 7}));

    let (status, lockfile) = call(
        &f,
        "GET",
        &format!("/api/conversations/{id}/lockfile"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        String::from_utf8_lossy(&lockfile),
        created["lockfile"].as_str().expect("text")
    );

    // The plugin set is exactly the runtime's bytes, the ones `plugins show --json` prints.
    let (status, set) = call(
        &f,
        "GET",
        &format!("/api/conversations/{id}/plugin_set"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let lock = berth_lockfile_schema::parse_lock("x", created["lockfile"].as_str().expect("text"))
        .expect("lock");
    let expected = berth_runtime::build_plugin_set(
        &Store::new(f.root.join("store")),
        &lock,
        &Default::default(),
    )
    .expect("set")
    .to_json();
    assert_eq!(String::from_utf8(set.clone()).expect("utf-8"), expected);
    let raw = String::from_utf8(body_of_post(&f).await).expect("utf-8");
    assert!(
        raw.contains(expected.trim_end()),
        "the POST answer embeds the same bytes"
    );

    // From a lockfile, too.
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"lockfile": created["lockfile"]})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&body)
    );

    let (status, _) = call(&f, "DELETE", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for path in ["", "/lockfile", "/plugin_set"] {
        let (status, body) = call(&f, "GET", &format!("/api/conversations/{id}{path}"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(error_code(&body), "not_found");
    }
    let (status, _) = call(&f, "DELETE", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

async fn body_of_post(f: &Fixture) -> Vec<u8> {
    let (status, body) = call(
        f,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": sources(f, &["one", "two"])})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    body
}

#[tokio::test]
async fn health_and_openapi() {
    let f = fixture();
    let (status, body) = send(
        &f,
        Request::get("/health")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "health needs no key");
    assert_eq!(json_of(&body)["status"], "ok");
    let (status, body) = call(&f, "GET", "/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    let doc = json_of(&body);
    for path in [
        "/api/conversations",
        "/api/conversations/{id}",
        "/api/conversations/{id}/lockfile",
        "/api/conversations/{id}/plugin_set",
        "/health",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from the OpenAPI description"
        );
    }
    assert!(
        doc["components"]["schemas"]
            .get("CreateConversation")
            .is_some()
    );
    assert!(
        doc["paths"]["/api/conversations"]["post"]["responses"]
            .get("413")
            .is_some()
    );
}

#[tokio::test]
async fn the_api_key_is_required() {
    let f = fixture();
    for request in [
        Request::get("/api/conversations").body(Body::empty()),
        Request::get("/api/conversations")
            .header("x-session-api-key", "wrong")
            .body(Body::empty()),
        Request::get("/api/conversations")
            .header("authorization", "Bearer wrong")
            .body(Body::empty()),
        Request::get("/openapi.json").body(Body::empty()),
    ] {
        let (status, body) = send(&f, request.expect("request")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error_code(&body), "unauthorized");
    }
    let (status, _) = send(
        &f,
        Request::get("/api/conversations")
            .header("authorization", format!("Bearer {KEY}"))
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let request = Request::post("/api/conversations")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"plugins": sources(&f, &["one"])}).to_string(),
        ));
    let (status, _) = send(&f, request.expect("request")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(conversations_on_disk(&f), 0, "nothing written");
}

#[tokio::test]
async fn bad_requests_are_400_and_write_nothing() {
    let f = fixture();
    let too_many: Vec<Value> = (0..65)
        .map(|_| json!({"source": f.root.join("plugins/one").display().to_string()}))
        .collect();
    for (body, needle) in [
        (
            json!({"plugins": [{"source": "acme/tools"}]}),
            "github:acme/tools",
        ),
        (
            json!({"plugins": [{"source": "github:acme/tools", "repo_path": "../.."}]}),
            "`..`",
        ),
        (
            json!({"plugins": [{"source": "https://github.com/o/r?x=${HOME}"}]}),
            "${VAR}",
        ),
        (
            json!({"lockfile": "version = 1\n[[plugin]]\nname = 3\n"}),
            "lockfile",
        ),
        (json!({"lockfile": "not toml ["}), "lockfile"),
        (json!({}), "either"),
        (
            json!({"plugins": [], "lockfile": "version = 1\n"}),
            "either",
        ),
        (json!({"plugins": too_many}), "at most 64"),
        (
            json!({"plugins": [{"source": "github:o/r", "extra": 1}]}),
            "extra",
        ),
    ] {
        let (status, answer) = call(&f, "POST", "/api/conversations", Some(body.clone())).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            String::from_utf8_lossy(&answer)
        );
        let message = json_of(&answer)["error"]["message"]
            .as_str()
            .expect("message")
            .to_owned();
        assert!(
            message.contains(needle),
            "{body}: `{needle}` not in {message}"
        );
    }
    let request = Request::post("/api/conversations")
        .header("x-session-api-key", KEY)
        .header("content-type", "application/json")
        .body(Body::from("{not json"));
    let (status, answer) = send(&f, request.expect("request")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&answer), "bad_request");
    assert_eq!(conversations_on_disk(&f), 0, "nothing written");
}

#[tokio::test]
async fn policy_refusals_are_403() {
    let strict = fixture_with(false, Duration::from_secs(60));
    for source in [
        "https://evil.example/acme/tools.git".to_owned(),
        "file:///srv/repo".to_owned(),
        strict.root.join("plugins/one").display().to_string(),
        "http://github.com/acme/tools.git".to_owned(),
        "git@github.com:acme/tools.git".to_owned(),
    ] {
        let (status, body) = call(
            &strict,
            "POST",
            "/api/conversations",
            Some(json!({"plugins": [{"source": source}]})),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{source}: {}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(error_code(&body), "forbidden");
    }
    assert_eq!(conversations_on_disk(&strict), 0);
}

#[tokio::test]
async fn unknown_ids_and_routes_are_404() {
    let f = fixture();
    for uri in [
        "/api/conversations/00000000-0000-0000-0000-000000000000",
        "/api/conversations/not-a-uuid",
        "/api/conversations/..%2F..%2Fetc/lockfile",
        "/api/conversations/00000000-0000-0000-0000-000000000000/plugin_set",
        "/nope",
    ] {
        let (status, body) = call(&f, "GET", uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(error_code(&body), "not_found");
    }
}

#[tokio::test]
async fn bodies_over_a_mebibyte_are_413() {
    let f = fixture();
    let huge = json!({"plugins": [], "metadata": {"blob": "x".repeat(2 * 1024 * 1024)}});
    let (status, body) = call(&f, "POST", "/api/conversations", Some(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&body), "too_large");
    assert_eq!(conversations_on_disk(&f), 0);
}

#[tokio::test]
async fn bad_plugins_and_hash_mismatches_are_422() {
    let f = fixture();
    let broken = plugin(&f.root, "broken");
    std::fs::create_dir_all(broken.join(".plugin")).expect("mkdir");
    std::fs::write(broken.join(".plugin/plugin.json"), "{not json").expect("write");
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": [{"source": broken.display().to_string()}]})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(error_code(&body), "invalid_plugin");
    let one = f.root.join("plugins/one").display().to_string();
    let lockfile = format!(
        "version = 1\n\n[[plugin]]\nname = \"one\"\nsource = \"{one}\"\npath = \"{one}\"\nhash = \"sha256-pQpattmS9VmO3ZIQUFn66az8GSmB4IvYhTTCFn6SUmo=\"\n"
    );
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"lockfile": lockfile})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert!(
        json_of(&body)["error"]["message"]
            .as_str()
            .expect("message")
            .contains("hash mismatch")
    );
    assert_eq!(conversations_on_disk(&f), 0);
}

#[tokio::test]
async fn upstream_failures_are_502_and_timeouts_504() {
    let f = fixture_with(true, Duration::from_secs(2));
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": [{"source": "http://127.0.0.1:9/acme/tools.git"}]})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_GATEWAY,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(error_code(&body), "upstream_failed");
    // A server that accepts connections and answers nothing for longer than the timeout
    // (then hangs up, so the abandoned fetch ends and the test runtime can shut down).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let _keep = std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(3));
                drop(stream);
            });
        }
    });
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": [{"source": format!("http://127.0.0.1:{port}/acme/tools.git")}]})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::GATEWAY_TIMEOUT,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(error_code(&body), "upstream_timeout");
    assert_eq!(conversations_on_disk(&f), 0);
}

#[tokio::test]
async fn without_a_key_only_requests_naming_this_server_are_answered() {
    // DNS rebinding: a page at `rebind.example` points that name at 127.0.0.1, and the
    // browser then sends `Host: rebind.example` to this server.
    let f = keyless_fixture(&["berth.internal", "proxy.example:8443"]);
    let body = json!({"plugins": sources(&f, &["one"])}).to_string();
    let post = |host: Option<&str>| {
        let mut request =
            Request::post("/api/conversations").header("content-type", "application/json");
        if let Some(host) = host {
            request = request.header("host", host);
        }
        request.body(Body::from(body.clone())).expect("request")
    };
    for host in [
        Some("rebind.example"),
        Some("rebind.example:8000"),
        Some("localhost.rebind.example"),
        Some("proxy.example:9999"),
        None,
    ] {
        let (status, answer) = send(&f, post(host)).await;
        assert_eq!(
            status,
            StatusCode::MISDIRECTED_REQUEST,
            "{host:?}: {}",
            String::from_utf8_lossy(&answer)
        );
        assert_eq!(error_code(&answer), "misdirected_request");
    }
    for uri in ["/api/conversations", "/health", "/openapi.json", "/nope"] {
        let request = Request::get(uri)
            .header("host", "rebind.example")
            .body(Body::empty())
            .expect("request");
        let (status, answer) = send(&f, request).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{uri}");
        assert_eq!(error_code(&answer), "misdirected_request");
    }
    assert_eq!(conversations_on_disk(&f), 0, "nothing written");
    // The names that mean this machine, and the ones the operator allowed, are answered.
    for host in [
        "localhost",
        "localhost:8000",
        "127.0.0.1:8000",
        "[::1]:8000",
        "berth.internal",
        "Berth.Internal:80",
        "proxy.example:8443",
    ] {
        let (status, answer) = send(&f, post(Some(host))).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{host}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
    // With an API key, the key protects the server and `Host` is not checked.
    let keyed = fixture();
    let request = Request::get("/api/conversations")
        .header("host", "rebind.example")
        .header("x-session-api-key", KEY)
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(&keyed, request).await.0, StatusCode::OK);
}

/// A lockfile of one git plugin whose source and url are `url`, with `git_ref` written
/// as it is (TOML escapes and all).
fn git_lock(url: &str, git_ref: Option<&str>) -> String {
    let git_ref = git_ref.map_or(String::new(), |r| format!("ref = \"{r}\"\n"));
    format!(
        "version = 1\n\n[[plugin]]\nname = \"p\"\nsource = \"{url}\"\n{git_ref}url = \"{url}\"\nrev = \"{}\"\nhash = \"sha256-pQpattmS9VmO3ZIQUFn66az8GSmB4IvYhTTCFn6SUmo=\"\n",
        "0".repeat(40)
    )
}

#[tokio::test]
async fn sources_over_4_kib_are_400_before_any_work() {
    let f = fixture();
    let huge = format!("https://github.com/acme/{}.git", "a".repeat(900_000));
    let huge_ref = "b".repeat(5000);
    for (body, field) in [
        (json!({"plugins": [{"source": huge}]}), "plugins[0].source"),
        (
            json!({"plugins": [{"source": "github:acme/tools"}, {"source": huge}]}),
            "plugins[1].source",
        ),
        (
            json!({"plugins": [{"source": "github:acme/tools", "ref": huge_ref}]}),
            "plugins[0].ref",
        ),
        (
            json!({"plugins": [], "agent": {"source": huge}}),
            "agent.source",
        ),
        (
            json!({"lockfile": git_lock(&format!("https://github.com/acme/{}.git", "a".repeat(400_000)), None)}),
            "lockfile: plugin[0].source",
        ),
    ] {
        let started = std::time::Instant::now();
        let (status, answer) = call(&f, "POST", "/api/conversations", Some(body)).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{field}: {}",
            String::from_utf8_lossy(&answer)
        );
        assert_eq!(error_code(&answer), "bad_request");
        let message = json_of(&answer)["error"]["message"]
            .as_str()
            .expect("message")
            .to_owned();
        assert!(
            message.contains(&format!("`{field}`")) && message.contains("4096"),
            "{message}"
        );
        assert!(message.len() < 300, "the value is not repeated back");
        assert!(started.elapsed() < Duration::from_secs(5), "{field}");
    }
    // Refused before any work: no git cache, no store entry, no conversation.
    assert!(!f.root.join("store/git-v1").exists());
    assert!(!f.root.join("store/store-v1").exists());
    assert_eq!(conversations_on_disk(&f), 0);
    // 4096 bytes is still a source (refused here by the host policy, not by its size).
    let at_limit = format!("https://evil.example/{}", "a".repeat(4096 - 21));
    assert_eq!(at_limit.len(), berth_server::MAX_FIELD_BYTES);
    let (status, answer) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": [{"source": at_limit}]})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

#[tokio::test]
async fn control_and_bidi_characters_in_sources_are_400() {
    let f = fixture();
    let one = f.root.join("plugins/one").display().to_string();
    for c in [
        '\u{1b}', '\0', '\u{7f}', '\u{85}', '\u{9b}', '\u{202a}', '\u{202e}', '\u{2066}',
        '\u{2069}', '\u{200e}', '\u{200f}', '\u{61c}',
    ] {
        let code = format!("U+{:04X}", u32::from(c));
        // The terminal escape `ESC ]` (or a bidi override) would reach logs, messages
        // and the lock.
        for (body, field) in [
            (
                json!({"plugins": [{"source": format!("{one}{c}]0;pwned")}]}),
                "plugins[0].source",
            ),
            (
                json!({"plugins": [{"source": format!("github:acme/{c}tools")}]}),
                "plugins[0].source",
            ),
            (
                json!({"plugins": [{"source": "github:acme/tools", "ref": format!("main{c}")}]}),
                "plugins[0].ref",
            ),
            (
                json!({"plugins": [{"source": "github:acme/tools", "repo_path": format!("a{c}b")}]}),
                "plugins[0].repo_path",
            ),
            (
                json!({"lockfile": git_lock(
                    "https://github.com/acme/tools.git",
                    Some(&format!("main\\u{:04X}", u32::from(c)))
                )}),
                "lockfile: plugin[0].ref",
            ),
        ] {
            let (status, answer) = call(&f, "POST", "/api/conversations", Some(body)).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{code} in {field}: {}",
                String::from_utf8_lossy(&answer)
            );
            let message = json_of(&answer)["error"]["message"]
                .as_str()
                .expect("message")
                .to_owned();
            assert!(
                message.contains(&code) && message.contains(&format!("`{field}`")),
                "{code}: {message}"
            );
            assert!(!message.contains(c), "the character is not repeated back");
        }
    }
    assert_eq!(conversations_on_disk(&f), 0, "nothing written");
    assert!(!f.root.join("store/store-v1").exists());
}

#[tokio::test]
async fn wrong_methods_and_unreadable_ids_answer_in_the_error_shape() {
    let f = fixture();
    for (method, uri, allowed) in [
        ("PUT", "/api/conversations", "GET,HEAD,POST"),
        ("DELETE", "/health", "GET,HEAD"),
        (
            "PATCH",
            "/api/conversations/00000000-0000-0000-0000-000000000000",
            "GET,HEAD,DELETE",
        ),
        ("POST", "/openapi.json", "GET,HEAD"),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header("x-session-api-key", KEY)
            .body(Body::empty())
            .expect("request");
        let (status, headers, answer) = send_for_headers(&f, request).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
        assert_eq!(error_code(&answer), "method_not_allowed", "{method} {uri}");
        let allow = headers
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .replace(' ', "");
        let mut allow: Vec<&str> = allow.split(',').collect();
        let mut expected: Vec<&str> = allowed.split(',').collect();
        allow.sort_unstable();
        expected.sort_unstable();
        assert_eq!(allow, expected, "{method} {uri}");
    }
    // Ids that are not UTF-8 once percent-decoded: the same 404 as any unknown id.
    for (method, uri) in [
        ("GET", "/api/conversations/%FF"),
        ("DELETE", "/api/conversations/%FF"),
        ("GET", "/api/conversations/%C3%28/lockfile"),
        ("GET", "/api/conversations/%80%80/plugin_set"),
    ] {
        let (status, answer) = call(&f, method, uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}");
        assert_eq!(error_code(&answer), "not_found", "{method} {uri}");
    }
}

/// A sent lockfile cannot point a local entry at another folder (issue #17): with local
/// sources on, `path` must be the folder the entry's `source` names; a forged one is 400
/// and nothing is written.
#[tokio::test]
async fn a_lockfile_sending_a_local_entry_elsewhere_is_400() {
    let f = fixture();
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": sources(&f, &["one"])})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let honest = json_of(&body)["lockfile"]
        .as_str()
        .expect("lockfile")
        .to_owned();
    let secret = plugin(&f.root, "secret");
    let forged: String = honest
        .lines()
        .map(|l| {
            if l.starts_with("path = ") {
                format!("path = \"{}\"\n", secret.display())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_ne!(forged, honest);
    let before = conversations_on_disk(&f);
    let (status, body) = call(
        &f,
        "POST",
        "/api/conversations",
        Some(json!({"lockfile": forged})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let message = json_of(&body)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("is not the folder its source"),
        "{message}"
    );
    assert_eq!(conversations_on_disk(&f), before);
}

#[tokio::test]
async fn conversations_list_a_page_at_a_time_in_creation_order() {
    let f = fixture();
    let first = json_of(&body_of_post(&f).await);
    let lockfile = first["lockfile"].as_str().expect("lockfile").to_owned();
    let mut ids = vec![first["id"].as_str().expect("id").to_owned()];
    // The same lockfile again: the quick start (entries checked within the last second,
    // set cached) must answer exactly what the full path answers, but for the id.
    for _ in 0..4 {
        let (status, body) = call(
            &f,
            "POST",
            "/api/conversations",
            Some(json!({ "lockfile": lockfile })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        let mut created = json_of(&body);
        ids.push(created["id"].as_str().expect("id").to_owned());
        created["id"] = first["id"].clone();
        assert_eq!(created, first);
    }
    assert_eq!(conversations_on_disk(&f), 5);
    // Ids are time-ordered: listing in id order lists in creation order.
    let mut pages = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, body) = call(
            &f,
            "GET",
            &format!("/api/conversations?limit=2&cursor={cursor}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let page = json_of(&body);
        let listed: Vec<String> = page["conversations"]
            .as_array()
            .expect("conversations")
            .iter()
            .map(|c| c["id"].as_str().expect("id").to_owned())
            .collect();
        pages.push(listed);
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
    assert_eq!(pages.concat(), ids);
    // Without `limit`, all of them, and no cursor.
    let (_, body) = call(&f, "GET", "/api/conversations", None).await;
    let all = json_of(&body);
    assert_eq!(all["conversations"].as_array().map(Vec::len), Some(5));
    assert_eq!(all["next_cursor"], Value::Null);
    for bad in ["limit=0", "limit=1001", "limit=x", "cursor=nope"] {
        let (status, body) = call(&f, "GET", &format!("/api/conversations?{bad}"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(error_code(&body), "bad_request", "{bad}");
    }
}
