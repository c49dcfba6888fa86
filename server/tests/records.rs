//! A conversation's records as the handlers keep them (issue #54), through
//! `app(state).oneshot(request)`: compact and bound to their lock, refused naming the
//! object when one is changed behind the server (and, with a record key, when both are),
//! too large a record refused before anything is done; `/ready`'s fixed reasons.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use berth_server::{AppState, Config, DEFAULT_ALLOWED_HOSTS, RecordKey, SourcePolicy, app};
use berth_store::Store;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    state: AppState,
}

fn config(root: &Path, record_key: Option<&str>) -> Config {
    Config {
        data_dir: berth_server::DataDir::Folder(root.join("data")),
        store: Store::new(root.join("store")),
        api_key: None,
        allowed_host_headers: Vec::new(),
        run_policy: Default::default(),
        policy: SourcePolicy {
            allowed_hosts: DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
            allow_local: true,
            github_url: "https://github.com".into(),
            pins: Vec::new(),
        },
        marketplaces: Vec::new(),
        offline: false,
        fetch_timeout: Duration::from_secs(60),
        jobs: 4,
        home_dir: Some(root.join("home")),
        max_skills: 100,
        index_url: berth_resolver::DEFAULT_INDEX_URL.into(),
        archive_limits: Default::default(),
        substituters: Vec::new(),
        push_to: None,
        drain: Duration::ZERO,
        ref_ttl: Duration::ZERO,
        record_key: record_key.map(|k| RecordKey::new(k).expect("a key")),
        connections: Default::default(),
    }
}

fn fixture(record_key: Option<&str>) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let plugin = root.join("plugins/one/skills");
    std::fs::create_dir_all(&plugin).expect("mkdir");
    std::fs::write(plugin.join("one.md"), "---\ndescription: one\n---\nOne.\n").expect("write");
    let (state, _) = AppState::open(config(&root, record_key)).expect("open");
    Fixture {
        _dir: dir,
        root,
        state,
    }
}

impl Fixture {
    /// The same data folder and store, opened again (a restart).
    fn reopened(&self, record_key: Option<&str>) -> AppState {
        AppState::open(config(&self.root, record_key))
            .expect("open")
            .0
    }

    fn record(&self, id: &str, file: &str) -> PathBuf {
        self.root.join("data/conversations").join(id).join(file)
    }
}

async fn call(state: &AppState, method: &str, uri: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "localhost");
    let body = match body {
        Some(v) => {
            request = request.header("content-type", "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    let response = app(state.clone())
        .oneshot(request.body(body).expect("request"))
        .await
        .expect("response");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

async fn start(f: &Fixture, state: &AppState, metadata: Value) -> String {
    let source = f.root.join("plugins/one").display().to_string();
    let (status, body) = call(
        state,
        "POST",
        "/api/conversations",
        Some(json!({"plugins": [{"source": source}], "metadata": metadata})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().expect("id").to_owned()
}

#[tokio::test]
async fn a_record_is_compact_and_bound_to_its_lock_and_a_swapped_lock_is_refused_naming_it() {
    let f = fixture(None);
    let id = start(&f, &f.state, json!({"ticket": 7, "nested": [[1, 2], [3]]})).await;
    let meta = std::fs::read_to_string(f.record(&id, "meta.json")).expect("meta.json");
    assert!(
        !meta.contains('\n') && !meta.contains(": "),
        "compact: {meta}"
    );
    let record: Value = serde_json::from_str(&meta).expect("JSON");
    assert!(
        record["lock"]
            .as_str()
            .expect("a lock digest")
            .starts_with("sha256-")
    );
    assert!(record.get("mac").is_none(), "no key, no HMAC");

    // The lock changed behind the server: read again, it is refused naming the object.
    let lock = f.record(&id, "plugins.lock");
    let text = std::fs::read_to_string(&lock).expect("lock");
    std::fs::write(&lock, format!("{text}# changed\n")).expect("write");
    let (status, body) = call(
        &f.state,
        "GET",
        &format!("/api/conversations/{id}/lockfile"),
        None,
    )
    .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "data_store_object_refused");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(
        message.contains(&id) && message.contains(&format!("conversations/{id}/plugins.lock")),
        "{message}"
    );
    assert!(
        !message.contains(f.root.to_str().expect("utf-8")),
        "{message}"
    );
    // A restart leaves it out, as any unreadable conversation.
    let restarted = f.reopened(None);
    let (status, _) = call(&restarted, "GET", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn with_a_record_key_a_rewrite_of_both_records_is_refused() {
    const KEY: &str = "sixteen bytes or more";
    let f = fixture(Some(KEY));
    let id = start(&f, &f.state, json!({"owner": "alice"})).await;
    let meta_path = f.record(&id, "meta.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).expect("meta")).expect("JSON");
    assert!(
        record["mac"]
            .as_str()
            .expect("an HMAC")
            .starts_with("hmac-sha256-")
    );
    // The metadata rewritten, the lock's digest kept: only the key tells.
    record["metadata"] = json!({"owner": "mallory"});
    std::fs::write(&meta_path, record.to_string()).expect("write");
    let (status, body) = call(&f.state, "GET", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(status, 502, "{body}");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("meta.json") && message.contains("record key"),
        "{message}"
    );
    // Without the key, the same record reads.
    let keyless = f.reopened(None);
    let (status, body) = call(&keyless, "GET", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["metadata"], json!({"owner": "mallory"}));
}

#[tokio::test]
async fn a_record_over_what_servers_read_is_413_before_any_work() {
    let f = fixture(None);
    let (status, body) = call(
        &f.state,
        "POST",
        "/api/conversations",
        Some(json!({
            "plugins": [{"source": "/nonexistent/never/fetched"}],
            "metadata": "x".repeat(1024 * 1024 - 100),
        })),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "metadata_too_large");
    assert!(
        std::fs::read_dir(f.root.join("data/conversations"))
            .expect("the data folder")
            .next()
            .is_none()
    );
}

#[tokio::test]
async fn ready_says_a_fixed_reason_and_no_path() {
    let f = fixture(None);
    let (status, _) = call(&f.state, "GET", "/ready", None).await;
    assert_eq!(status, 200);
    std::fs::remove_dir_all(f.root.join("data/conversations")).expect("remove");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, body) = call(&f.state, "GET", "/ready", None).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "not_ready");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains("`data_store_unreachable`"), "{message}");
    assert!(
        !message.contains(f.root.to_str().expect("utf-8")),
        "{message}"
    );
}
