//! S5-2, S5-3, S5-4: a conversation's records are written compact, never larger than what
//! every server reads (413 before anything is written otherwise), read back by a second
//! server in a folder and on S3 (moto); `meta.json` records the digest of its lock, so a
//! lock swapped in the bucket is refused by every server, naming the conversation and the
//! object, and with `--record-key` a rewrite of both objects is refused too.

use std::path::Path;

use serde_json::{Value, json};
use sha2::Digest as _;

use super::{error_of, json_of, serve};
use crate::common::moto::{KEY_ID, Moto, SECRET};
use crate::common::{ServeProcess, TestContext};
use crate::fleet_bucket::moto_or_skip;

/// The largest `meta.json` a server reads (`MAX_META_BYTES`, the body limit).
const READ_LIMIT: usize = 1024 * 1024;

/// A server of a fleet on moto's S3: its own store, the shared data and cache.
fn fleet(
    ctx: &TestContext,
    store: &Path,
    moto: &Moto,
    bucket: &str,
    extra: &[&str],
) -> ServeProcess {
    let data = format!("s3://{bucket}/data?endpoint={}", moto.endpoint);
    let cache = format!("s3://{bucket}/cache?endpoint={}", moto.endpoint);
    let mut cmd = ctx.berth();
    cmd.env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .env("BERTH_SUBSTITUTERS", &cache)
        .args(["serve", "--addr", "127.0.0.1:0", "--allow-local-sources"])
        .args(["--data-dir", &data, "--push-to", &cache])
        .arg("--store")
        .arg(store)
        .args(extra);
    ServeProcess::start(cmd)
}

fn id_of(body: &str) -> String {
    json_of(body)["id"].as_str().expect("an id").to_owned()
}

/// A string of `n` characters as `metadata`, and the request carrying it.
fn with_metadata(n: usize) -> Value {
    json!({"plugins": [], "metadata": "m".repeat(n)})
}

/// Starts the largest conversation `server` accepts, whose record is exactly the read
/// limit (a record is `fixed` bytes and its metadata's JSON), then one byte more (413,
/// before anything is written); returns the first one's id and its metadata's length.
fn largest_accepted(server: &ServeProcess, fixed: usize) -> (String, usize) {
    let n = READ_LIMIT - fixed - 2;
    assert!(
        with_metadata(n).to_string().len() <= READ_LIMIT,
        "within the body limit"
    );
    let (status, answer) = server.post(&with_metadata(n));
    assert_eq!(status, 201, "{answer}");
    let id = id_of(&answer);
    let (status, answer) = server.post(&with_metadata(n + 1));
    assert_eq!(
        status, 413,
        "one byte more is refused before it is written: {answer}"
    );
    let (code, message) = error_of(&answer);
    assert_eq!(code, "metadata_too_large", "{answer}");
    assert!(message.contains(&READ_LIMIT.to_string()), "{message}");
    (id, n)
}

/// The bytes of a record that are not its metadata, from a record of `small` characters.
fn fixed_part(record: usize, small: usize) -> usize {
    record - (small + 2)
}

/// `server` reads conversation `id` whole: its metadata is `n` characters.
fn reads_back(server: &ServeProcess, id: &str, n: usize) {
    let (status, body) = server.get(&format!("/api/conversations/{id}"));
    assert_eq!(status, 200, "{}", &body[..body.len().min(300)]);
    assert_eq!(json_of(&body)["metadata"].as_str().map(str::len), Some(n));
}

#[test]
fn s5_2_metadata_is_stored_compact_and_no_larger_than_its_request() {
    let ctx = TestContext::new();
    let data = ctx.root.join("data");
    let server = serve(&ctx, &ctx.store, &data.display().to_string(), &[]);
    // 120 levels of arrays around zeros: pretty-printed, each zero took a line.
    let depth = 120;
    let zeros = vec!["0"; (1024 * 1000 - 2 * depth) / 2].join(",");
    let body = format!(
        "{{\"plugins\":[],\"metadata\":{}{zeros}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/api/conversations", server.base))
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .expect("POST");
    assert_eq!(response.status().as_u16(), 201);
    let id = id_of(&response.text().expect("body"));
    let meta = data.join("conversations").join(&id).join("meta.json");
    let size = std::fs::metadata(&meta).expect("meta.json").len() as usize;
    assert!(
        size <= body.len() + 256,
        "meta.json is {size} bytes for a {} byte request",
        body.len()
    );
    let (status, _) = server.get(&format!("/api/conversations/{id}"));
    assert_eq!(status, 200);
}

#[test]
fn s5_3_the_largest_accepted_record_is_read_back_by_another_server_in_a_folder() {
    let ctx = TestContext::new();
    let data = ctx.root.join("data").display().to_string();
    let first = serve(&ctx, &ctx.store, &data, &[]);
    let (status, body) = first.post(&with_metadata(10));
    assert_eq!(status, 201, "{body}");
    let small = ctx.root.join("data/conversations").join(id_of(&body));
    let small_record = std::fs::metadata(small.join("meta.json"))
        .expect("meta")
        .len();
    let (id, n) = largest_accepted(&first, fixed_part(small_record as usize, 10));
    let record = ctx
        .root
        .join("data/conversations")
        .join(&id)
        .join("meta.json");
    assert_eq!(
        std::fs::metadata(record).expect("meta").len() as usize,
        READ_LIMIT
    );
    first.stop();
    // A folder is one server's: the next one reads it at start.
    let second = serve(&ctx, &ctx.root.join("store-2"), &data, &[]);
    reads_back(&second, &id, n);
}

#[test]
fn s5_3_on_object_storage_what_one_server_writes_every_server_reads() {
    let Some(moto) = moto_or_skip() else {
        return;
    };
    moto.create_bucket("big");
    let ctx = TestContext::new();
    let a = fleet(&ctx, &ctx.root.join("store-a"), &moto, "big", &[]);
    let b = fleet(&ctx, &ctx.root.join("store-b"), &moto, "big", &[]);
    // The report's request: about 200 KB of nested zeros, which pretty-printing made 2 MB.
    let nested = format!("[[[{}]]]", vec!["0"; 200_000].join(","));
    let body = format!("{{\"plugins\":[],\"metadata\":{nested}}}");
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/api/conversations", a.base))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .expect("POST");
    assert_eq!(response.status().as_u16(), 201);
    let nested_id = id_of(&response.text().expect("body"));
    for server in [&a, &b] {
        let (status, detail) = server.get(&format!("/api/conversations/{nested_id}"));
        assert_eq!(status, 200, "{}", &detail[..detail.len().min(300)]);
    }
    // The largest record accepted, read back by B.
    let (status, body) = a.post(&with_metadata(10));
    assert_eq!(status, 201, "{body}");
    let small = moto.get(
        "big",
        &format!("data/conversations/{}/meta.json", id_of(&body)),
    );
    let (id, n) = largest_accepted(&a, fixed_part(small.len(), 10));
    let record = moto.get("big", &format!("data/conversations/{id}/meta.json"));
    assert_eq!(record.len(), READ_LIMIT);
    reads_back(&b, &id, n);
    let (status, listed) = b.get("/api/conversations");
    assert_eq!(status, 200);
    assert!(
        listed.contains(&id) && listed.contains(&nested_id),
        "{listed}"
    );
}

/// `sha256-<base64>` of `text`, as `meta.json` records a lock's digest.
fn digest(text: &str) -> String {
    use base64::Engine as _;
    let bytes = sha2::Sha256::digest(text.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

#[test]
fn s5_4_a_lock_swapped_in_the_bucket_is_refused_by_every_server_and_with_a_key_so_is_a_rewrite_of_both()
 {
    let Some(moto) = moto_or_skip() else {
        return;
    };
    moto.create_bucket("fleet");
    let ctx = TestContext::new();
    for name in ["review", "lint"] {
        let repo = ctx.repo(name);
        repo.copy_fixture(name, "");
        repo.commit("one");
    }
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/lint\"\n");
    ctx.ok(&["plugins", "lock"]);
    let lint_lock = ctx.lock_text();
    let key_file = ctx.root.join("record.key");
    std::fs::write(&key_file, "a fleet secret of enough bytes\n").expect("write the key");
    let keyed = ["--record-key", key_file.to_str().expect("utf-8")];
    for (round, extra) in [("without a key", &[][..]), ("with a key", &keyed[..])] {
        let (store_a, store_b) = (
            ctx.root.join(format!("a {round}")),
            ctx.root.join(format!("b {round}")),
        );
        let a = fleet(&ctx, &store_a, &moto, "fleet", extra);
        let (status, body) = a.post(&json!({"plugins": [{"source": "github:acme/review"}]}));
        assert_eq!(status, 201, "{round}: {body}");
        let id = id_of(&body);
        let (lock_key, meta_key) = (
            format!("data/conversations/{id}/plugins.lock"),
            format!("data/conversations/{id}/meta.json"),
        );
        // The lock alone swapped: A, restarted, and B refuse it, naming it.
        moto.put("fleet", &lock_key, lint_lock.clone().into_bytes());
        a.stop();
        let a = fleet(&ctx, &store_a, &moto, "fleet", extra);
        let b = fleet(&ctx, &store_b, &moto, "fleet", extra);
        for server in [&a, &b] {
            for path in ["", "/plugin_set", "/lockfile"] {
                let (status, body) = server.get(&format!("/api/conversations/{id}{path}"));
                assert_eq!(status, 502, "{round} {path}: {body}");
                let (code, message) = error_of(&body);
                assert_eq!(code, "data_store_object_refused", "{body}");
                assert!(
                    message.contains(&id)
                        && message.contains(&format!("conversations/{id}/plugins.lock")),
                    "{message}"
                );
            }
        }
        // Both rewritten together, as whoever has write access to the bucket can.
        let mut meta: Value = serde_json::from_slice(&moto.get("fleet", &meta_key)).expect("meta");
        meta["metadata"] = json!({"owner": "mallory"});
        meta["lock"] = json!(digest(&lint_lock));
        moto.put("fleet", &meta_key, meta.to_string().into_bytes());
        let c = fleet(
            &ctx,
            &ctx.root.join(format!("c {round}")),
            &moto,
            "fleet",
            extra,
        );
        let (status, body) = c.get(&format!("/api/conversations/{id}/plugin_set"));
        if extra.is_empty() {
            // Documented: without the key, bucket write access can change a conversation.
            assert_eq!(status, 200, "{round}: {body}");
            assert!(body.contains("\"lint\""), "{body}");
        } else {
            assert_eq!(status, 502, "{round}: {body}");
            let message = error_of(&body).1;
            assert!(
                message.contains(&format!("conversations/{id}/meta.json"))
                    && message.contains("record key"),
                "{message}"
            );
        }
        for server in [a, b, c] {
            server.stop();
        }
    }
}
