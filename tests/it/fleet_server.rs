//! `berth serve` as one server of a fleet (issue #18): request ids in responses, logs and
//! error bodies; `/ready`; Prometheus metrics; draining on SIGTERM (new requests 503 with
//! `Retry-After`, started ones finish).

use crate::common;

use std::time::Duration;

use common::{GitHttpServer, ServeProcess, TestContext};
use serde_json::{Value, json};

fn serve(ctx: &TestContext, git: &GitHttpServer, args: &[&str]) -> ServeProcess {
    let mut cmd = ctx.berth();
    cmd.env("BERTH_GITHUB_URL", git.url())
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--data-dir",
        ])
        .arg(ctx.root.join("data"))
        .args(args);
    ServeProcess::start(cmd)
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client")
}

fn review_repo(ctx: &TestContext) {
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
}

#[test]
fn request_ids_readiness_and_metrics() {
    let ctx = TestContext::new();
    review_repo(&ctx);
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let server = serve(&ctx, &git, &[]);
    // An error names its request; the id is in the response header too.
    let response = client()
        .get(format!("{}/api/conversations/nope", server.base))
        .send()
        .expect("GET");
    assert_eq!(response.status(), 404);
    let id = response.headers()["x-request-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let body: Value = serde_json::from_str(&response.text().expect("body")).expect("JSON");
    assert_eq!(body["error"]["request_id"], id.as_str());
    assert_eq!(id.len(), 36, "a UUID: {id}");
    // A client's own id is kept.
    let response = client()
        .get(format!("{}/api/conversations/nope", server.base))
        .header("x-request-id", "lb-7f3a")
        .send()
        .expect("GET");
    assert_eq!(response.headers()["x-request-id"], "lb-7f3a");
    let body: Value = serde_json::from_str(&response.text().expect("body")).expect("JSON");
    assert_eq!(body["error"]["request_id"], "lb-7f3a");

    let (status, body) = server.get("/ready");
    assert_eq!(status, 200, "{body}");
    let (status, body) =
        server.post(&json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}));
    assert_eq!(status, 201, "{body}");
    let (status, metrics) = server.get("/metrics");
    assert_eq!(status, 200);
    for line in [
        "berth_http_requests_total{route=\"/api/conversations\",method=\"POST\",status=\"201\"} 1",
        "berth_http_requests_total{route=\"/api/conversations/{id}\",method=\"GET\",status=\"404\"} 2",
        "berth_http_requests_total{route=\"/ready\",method=\"GET\",status=\"200\"} 1",
        "berth_http_request_duration_seconds_count{route=\"/api/conversations\"} 1",
        "berth_plugins_fetched_total 1",
        "berth_cache_hits_total 0",
        "berth_store_entries 1",
        "berth_conversations 1",
    ] {
        assert!(metrics.contains(line), "missing `{line}` in:\n{metrics}");
    }
    server.stop();
}

#[test]
fn metrics_take_no_label_a_client_chose() {
    let ctx = TestContext::new();
    review_repo(&ctx);
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let server = serve(&ctx, &git, &[]);
    // The attack: many requests, each with its own long made-up method.
    for i in 0..300 {
        let method = reqwest::Method::from_bytes(format!("X{i:04}{}", "M".repeat(4000)).as_bytes())
            .expect("a method token");
        let response = client()
            .request(method, format!("{}/api/conversations", server.base))
            .send()
            .expect("send");
        assert!(response.status().is_client_error(), "{}", response.status());
    }
    let (status, metrics) = server.get("/metrics");
    assert_eq!(status, 200);
    assert!(!metrics.contains("X0000"), "a client's method is no label");
    assert!(
        metrics.contains("berth_http_requests_total{route=\"/api/conversations\",method=\"other\",status=\"405\"} 300"),
        "{metrics}"
    );
    assert!(metrics.len() < 16 * 1024, "{} bytes", metrics.len());
    server.stop();
}

#[test]
fn sigterm_drains_new_requests_and_finishes_started_ones() {
    let ctx = TestContext::new();
    review_repo(&ctx);
    // Each git request takes 400 ms, so a start is still running when SIGTERM comes.
    let git = GitHttpServer::start(
        &ctx.upstream,
        &ctx.root.join("http.log"),
        &["--delay-ms", "400"],
    );
    let server = serve(&ctx, &git, &["--drain-secs", "3"]);
    let base = server.base.clone();
    let started = std::thread::spawn(move || {
        let response = client()
            .post(format!("{base}/api/conversations"))
            .header("content-type", "application/json")
            .body(json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}).to_string())
            .send()
            .expect("POST");
        (response.status().as_u16(), response.text().expect("body"))
    });
    // Wait until the start reached upstream, then ask the server to stop.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while git.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the start never reached upstream"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.terminate();
    std::thread::sleep(Duration::from_millis(200));
    let (status, body) = server.get("/ready");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("draining"), "{body}");
    let response = client()
        .get(format!("{}/api/conversations", server.base))
        .send()
        .expect("GET while draining");
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: Value = serde_json::from_str(&response.text().expect("body")).expect("JSON");
    assert_eq!(body["error"]["code"], "draining");
    let (status, _) = server.get("/health");
    assert_eq!(status, 200, "alive while draining");
    let (status, body) = started.join().expect("the started request");
    assert_eq!(status, 201, "a start begun before SIGTERM finishes: {body}");
    let exit = server.wait_exit();
    assert!(exit.success(), "{exit:?}");
    // The conversation it finished is kept.
    let conversations = std::fs::read_dir(ctx.root.join("data/conversations"))
        .expect("conversations")
        .count();
    assert_eq!(conversations, 1);
}

#[test]
fn ref_ttl_reuses_a_recent_resolution_and_the_lock_records_it() {
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    let first = review.commit("one");
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let start = |server: &ServeProcess| -> String {
        let (status, body) =
            server.post(&json!({"plugins": [{"source": "github:acme/review", "ref": "main"}]}));
        assert_eq!(status, 201, "{body}");
        let created: Value = serde_json::from_str(&body).expect("JSON");
        common::lock_field(created["lockfile"].as_str().expect("lock"), 0, "rev").expect("rev")
    };
    let server = serve(&ctx, &git, &["--ref-ttl", "60"]);
    assert_eq!(start(&server), first);
    review.write(
        "skills/code-review/SKILL.md",
        "---\nname: moved\n---\nmoved\n",
    );
    let second = review.commit("two");
    let asked = git.requests().len();
    // Within the TTL the branch is not asked again: the lock records what was used.
    assert_eq!(start(&server), first);
    assert_eq!(git.requests().len(), asked, "no request to upstream");
    server.stop();
    // Without a TTL every start resolves the branch afresh.
    let plain = serve(&ctx, &git, &[]);
    assert_eq!(start(&plain), second);
    plain.stop();
}
