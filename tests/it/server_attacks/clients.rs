//! S5-5 to S5-8: slow clients are cut off within the timeouts `berth serve` documents
//! (headers trickled, a body trickled, an idle connection, one kept alive), connections
//! past `--max-connections` wait; a refusal names the policy by its file name only;
//! `/ready` answers a fixed reason, its probe cached; a binary cache that never answers
//! costs seconds and is named in the log.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{error_of, serve};
use crate::common::{ServeProcess, TestContext};

/// The address `server` listens on.
fn addr(server: &ServeProcess) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

fn connect(server: &ServeProcess) -> TcpStream {
    let stream = TcpStream::connect(addr(server)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    stream
}

/// Reads until the server closes the connection (or 20 s pass); what it sent, and when
/// it closed.
fn until_closed(stream: &mut TcpStream) -> (String, Instant) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return (String::from_utf8_lossy(&got).into_owned(), Instant::now()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Sends `byte` every half second from another thread until the connection breaks.
fn trickle(stream: &TcpStream, byte: &'static [u8]) {
    let mut writer = stream.try_clone().expect("clone");
    std::thread::spawn(move || {
        while writer.write_all(byte).is_ok() {
            std::thread::sleep(Duration::from_millis(500));
        }
    });
}

/// `elapsed` is within `limit` (a second of slack for a busy machine), and not well
/// before it.
fn closed_at(what: &str, elapsed: Duration, limit: u64) {
    let limit = Duration::from_secs(limit);
    assert!(
        elapsed + Duration::from_millis(300) >= limit && elapsed <= limit + Duration::from_secs(2),
        "{what}: closed after {elapsed:?}, the limit is {limit:?}"
    );
}

#[test]
fn s5_5_slow_clients_are_closed_within_the_documented_timeouts() {
    let ctx = TestContext::new();
    let data = ctx.root.join("data").display().to_string();
    let server = serve(
        &ctx,
        &ctx.store,
        &data,
        &[
            "--header-timeout",
            "2",
            "--body-timeout",
            "3",
            "--idle-timeout",
            "4",
        ],
    );
    let [idle, headers, body, kept] = std::thread::scope(|scope| {
        let idle = scope.spawn(|| {
            let mut stream = connect(&server);
            let opened = Instant::now();
            let (_, closed) = until_closed(&mut stream);
            closed - opened
        });
        let headers = scope.spawn(|| {
            let mut stream = connect(&server);
            let opened = Instant::now();
            stream
                .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .expect("write");
            trickle(&stream, b"X-Slow: y\r\n");
            let (answer, closed) = until_closed(&mut stream);
            assert!(answer.is_empty(), "{answer}");
            closed - opened
        });
        let body = scope.spawn(|| {
            let mut stream = connect(&server);
            stream
                .write_all(b"POST /api/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"metadata\":\"")
                .expect("write");
            let headers_sent = Instant::now();
            trickle(&stream, b"a");
            let (answer, closed) = until_closed(&mut stream);
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
            assert!(answer.contains("request_timeout"), "{answer}");
            closed - headers_sent
        });
        let kept = scope.spawn(|| {
            let mut stream = connect(&server);
            stream
                .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .expect("write");
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).expect("an answer");
            let answered = Instant::now();
            assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
            let (_, closed) = until_closed(&mut stream);
            closed - answered
        });
        [idle, headers, body, kept].map(|t| t.join().expect("client"))
    });
    closed_at("an idle connection", idle, 4);
    closed_at("headers trickled", headers, 2);
    closed_at("a body trickled", body, 3);
    closed_at("a connection kept alive after an answer", kept, 4);
}

#[test]
fn s5_5_connections_past_the_cap_wait_until_one_closes() {
    let ctx = TestContext::new();
    let data = ctx.root.join("data").display().to_string();
    let server = serve(&ctx, &ctx.store, &data, &["--max-connections", "2"]);
    let first = connect(&server);
    let _second = connect(&server);
    std::thread::sleep(Duration::from_millis(300));
    let mut third = connect(&server);
    third
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("read timeout");
    third
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut buf = [0u8; 1024];
    assert!(
        third.read(&mut buf).is_err(),
        "a third connection is not served yet"
    );
    drop(first);
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    let (answer, _) = until_closed(&mut third);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn s5_6_a_policy_refusal_names_the_policy_by_its_file_name_only() {
    let Some(p) = crate::signed_sources::project() else {
        return;
    };
    let ctx = &p.ctx;
    let plain = p.plugin_repo("plain");
    plain.commit("not signed");
    p.require_signed();
    let policy = ctx.work.join("berth-policy.toml");
    let data = ctx.root.join("data").display().to_string();
    let server = serve(
        ctx,
        &ctx.store,
        &data,
        &["--policy", policy.to_str().expect("utf-8")],
    );
    let (status, body) = server.post(&json!({"plugins": [{"source": "github:acme/plain"}]}));
    assert_eq!(status, 403, "{body}");
    let (code, message) = error_of(&body);
    assert_eq!(code, "policy_denied");
    let root = ctx.root.to_str().expect("utf-8");
    assert!(!body.contains(root), "a server path in {body}");
    for needle in ["`git_signers`", "in `berth-policy.toml`"] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    // The log has the whole path.
    assert!(
        server.log().contains(policy.to_str().expect("utf-8")),
        "{}",
        server.log()
    );
}

#[test]
fn s5_7_ready_answers_a_fixed_reason_and_probes_the_data_store_at_most_every_two_seconds() {
    let ctx = TestContext::new();
    let data = ctx.root.join("data");
    let server = serve(&ctx, &ctx.store, &data.display().to_string(), &[]);
    let (status, body) = server.get("/ready");
    assert_eq!(status, 200, "{body}");
    std::fs::remove_dir_all(data.join("conversations")).expect("take the data folder away");
    let (status, body) = server.get("/ready");
    assert_eq!(status, 200, "the last probe is reused: {body}");
    std::thread::sleep(Duration::from_millis(2200));
    let (status, body) = server.get("/ready");
    assert_eq!(status, 503, "{body}");
    let (code, message) = error_of(&body);
    assert_eq!(code, "not_ready");
    assert!(message.contains("`data_store_unreachable`"), "{message}");
    assert!(!body.contains(ctx.root.to_str().expect("utf-8")), "{body}");
    assert!(
        server.log().contains(data.to_str().expect("utf-8")),
        "the log says where"
    );
}

#[test]
fn s5_8_a_binary_cache_that_never_answers_costs_seconds_and_is_named() {
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\n");
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    // Accepts connections, and never says a word.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let hanging = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let data = ctx.root.join("data").display().to_string();
    let server = serve(
        &ctx,
        &ctx.root.join("server-store"),
        &data,
        &["--substituter", &hanging, "--fetch-timeout", "30"],
    );
    let started = Instant::now();
    let (status, body) = server.post(&json!({ "lockfile": lock }));
    let took = started.elapsed();
    assert_eq!(status, 201, "upstream is tried after the cache: {body}");
    assert!(took < Duration::from_secs(15), "the start took {took:?}");
    let log = server.log();
    assert!(
        log.contains(&hanging) && log.contains("timed out"),
        "the cache is named: {log}"
    );
}
