//! Every route and every error status, through `app(state).oneshot(request)` (issue #5).

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_server::{AppState, Config, DEFAULT_ALLOWED_HOSTS, Policy, app};
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
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    plugin(&root, "one");
    plugin(&root, "two");
    let config = Config {
        data_dir: root.join("data"),
        store: Store::new(root.join("store")),
        api_key: Some(KEY.into()),
        policy: Policy {
            allowed_hosts: DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
            allow_local,
            github_url: "https://github.com".into(),
        },
        offline: false,
        fetch_timeout: timeout,
        jobs: 4,
        home_dir: Some(root.join("home")),
        max_skills: 100,
        index_url: berth_resolver::DEFAULT_INDEX_URL.into(),
        archive_limits: Default::default(),
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
    let response = app(f.state.clone())
        .oneshot(request)
        .await
        .expect("response");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    (status, bytes)
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
