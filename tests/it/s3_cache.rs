//! A binary cache on a real S3-compatible server (moto's standalone server from PyPI,
//! `moto[server]`, on 127.0.0.1; `.ci/run` installs it and sets `BERTH_MOTO_SERVER`):
//! server A's plugins are pushed, server B with an empty store and upstream gone restores
//! the conversation from the bucket byte for byte, an object altered in the bucket is
//! refused for the next substituter, and the credentials appear in no file or output.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::moto::{KEY_ID, Moto, SECRET};
use common::{ServeProcess, TestContext, all_files, require_or_skip};
use serde_json::{Value, json};

/// `berth` with the S3 credentials in its environment, as an operator gives them.
fn with_aws(mut cmd: Command) -> Command {
    cmd.env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1");
    cmd
}

fn serve(ctx: &TestContext, store: &Path, data: &Path, substituters: &str) -> ServeProcess {
    serve_with(ctx, store, data, substituters, &[])
}

fn serve_with(
    ctx: &TestContext,
    store: &Path,
    data: &Path,
    substituters: &str,
    args: &[&str],
) -> ServeProcess {
    let mut cmd = with_aws(ctx.berth());
    cmd.env("BERTH_STORE", store)
        .env("BERTH_SUBSTITUTERS", substituters)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--data-dir",
        ])
        .arg(data)
        .args(args);
    ServeProcess::start(cmd)
}

#[test]
fn a_fleet_restores_from_s3_with_upstream_gone() {
    let Some(moto) = Moto::start() else {
        require_or_skip(
            "moto_server",
            "install `moto[server]` from PyPI (or set BERTH_MOTO_SERVER); .ci/run does",
        );
        return;
    };
    moto.create_bucket("fleet-cache");
    let cache = format!("s3://fleet-cache/berth?endpoint={}", moto.endpoint);
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    let mut output = String::new();

    // Server A starts a conversation from upstream; its plugins are pushed to the bucket.
    let (store_a, data_a) = (ctx.root.join("store-a"), ctx.root.join("data-a"));
    let a = serve(&ctx, &store_a, &data_a, "");
    let (status, body) =
        a.post(&json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}));
    assert_eq!(status, 201, "{body}");
    let created: Value = serde_json::from_str(&body).expect("JSON");
    let lockfile = created["lockfile"].as_str().expect("lockfile").to_owned();
    let id = created["id"].as_str().expect("id").to_owned();
    let (_, set_a) = a.get(&format!("/api/conversations/{id}/plugin_set"));
    a.stop();
    let lock_path = data_a.join("conversations").join(&id).join("plugins.lock");
    let pushed = with_aws(ctx.berth())
        .env("BERTH_STORE", &store_a)
        .args(["store", "push", &cache, "--lockfile"])
        .arg(&lock_path)
        .output()
        .expect("push");
    output.push_str(&String::from_utf8_lossy(&pushed.stderr));
    assert!(pushed.status.success(), "{output}");
    // The NAR, its narinfo, `nix-cache-info`, and where store A saw the plugin come from
    // (so a server without upstream takes the lock's pin).
    let keys = moto.keys("fleet-cache");
    assert_eq!(keys.len(), 4, "{keys:?}");
    assert!(
        keys.iter().any(|k| k.starts_with("berth/pins/")),
        "{keys:?}"
    );
    assert!(keys.iter().all(|k| k.starts_with("berth/")), "{keys:?}");

    // Upstream is gone. Server B, empty store, restores the conversation from the bucket.
    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    let (store_b, data_b) = (ctx.root.join("store-b"), ctx.root.join("data-b"));
    let b = serve(&ctx, &store_b, &data_b, &cache);
    let (status, body) = b.post(&json!({"lockfile": lockfile}));
    assert_eq!(status, 201, "{body}");
    let id_b = serde_json::from_str::<Value>(&body).expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (_, set_b) = b.get(&format!("/api/conversations/{id_b}/plugin_set"));
    b.stop();
    assert_eq!(
        set_b.replace(store_b.to_str().expect("utf-8"), "<store>"),
        set_a.replace(store_a.to_str().expect("utf-8"), "<store>"),
        "the same plugin set, but for where each store is"
    );
    let entries = |store: &Path| -> Vec<PathBuf> {
        let mut e: Vec<PathBuf> = std::fs::read_dir(store.join("store-v1"))
            .expect("entries")
            .map(|d| d.expect("entry").path())
            .collect();
        e.sort();
        e
    };
    let (ea, eb) = (entries(&store_a), entries(&store_b));
    assert_eq!(ea.len(), 1);
    assert_eq!(ea[0].file_name(), eb[0].file_name());
    let mut files_a = Vec::new();
    all_files(&ea[0], &mut files_a);
    assert!(!files_a.is_empty());
    for file in files_a {
        let twin = eb[0].join(file.strip_prefix(&ea[0]).expect("inside"));
        assert_eq!(
            std::fs::read(&file).expect("a"),
            std::fs::read(&twin).expect("b"),
            "{}",
            twin.display()
        );
    }

    // An object altered in the bucket: refused, and the next substituter is used.
    let nar_key = keys.iter().find(|k| k.contains("/nar/")).expect("a NAR");
    let mut nar = moto.get("fleet-cache", nar_key);
    let middle = nar.len() / 2;
    nar[middle] ^= 0xff;
    moto.put("fleet-cache", nar_key, nar);
    let good = ctx.root.join("good-cache");
    let pushed = with_aws(ctx.berth())
        .env("BERTH_STORE", &store_a)
        .args([
            "store",
            "push",
            &format!("file://{}", good.display()),
            "--lockfile",
        ])
        .arg(&lock_path)
        .output()
        .expect("push");
    assert!(pushed.status.success());
    std::fs::write(ctx.root.join("c.lock"), &lockfile).expect("write");
    let store_c = ctx.root.join("store-c");
    let synced = with_aws(ctx.berth())
        .env("BERTH_STORE", &store_c)
        .env(
            "BERTH_SUBSTITUTERS",
            format!("{cache} file://{}", good.display()),
        )
        .args(["plugins", "--lockfile"])
        .arg(ctx.root.join("c.lock"))
        .args(["sync", "--frozen"])
        .output()
        .expect("sync");
    let stderr = String::from_utf8_lossy(&synced.stderr).into_owned();
    output.push_str(&stderr);
    assert!(synced.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("cache `{cache}`")), "{stderr}");
    assert!(
        stderr.contains("Substituted review from file://"),
        "{stderr}"
    );

    // The credentials are in no file berth wrote and in nothing it printed.
    let mut files = Vec::new();
    all_files(&ctx.root, &mut files);
    for file in files {
        let bytes = std::fs::read(&file).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(SECRET) && !text.contains(KEY_ID),
            "a credential in {}",
            file.display()
        );
    }
    assert!(
        !output.contains(SECRET) && !output.contains(KEY_ID),
        "{output}"
    );
    // Nor does any object in the bucket.
    for key in moto.keys("fleet-cache") {
        let body = moto.get("fleet-cache", &key);
        let text = String::from_utf8_lossy(&body);
        assert!(!text.contains(SECRET) && !text.contains(KEY_ID), "{key}");
    }
}

#[test]
fn a_server_pushes_what_it_fetched_before_answering() {
    let Some(moto) = Moto::start() else {
        require_or_skip(
            "moto_server",
            "install `moto[server]` from PyPI (or set BERTH_MOTO_SERVER); .ci/run does",
        );
        return;
    };
    moto.create_bucket("fleet");
    let cache = format!("s3://fleet/cache?endpoint={}", moto.endpoint);
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    let (store_a, data_a) = (ctx.root.join("store-a"), ctx.root.join("data-a"));
    let a = serve_with(&ctx, &store_a, &data_a, &cache, &["--push-to", &cache]);
    let (status, body) =
        a.post(&json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}));
    assert_eq!(status, 201, "{body}");
    // Pushed before the answer: the bucket has the plugin's narinfo now.
    let keys = moto.keys("fleet");
    assert!(keys.iter().any(|k| k.ends_with(".narinfo")), "{keys:?}");
    let created: Value = serde_json::from_str(&body).expect("JSON");
    let lockfile = created["lockfile"].as_str().expect("lockfile").to_owned();
    a.stop();
    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    let (store_b, data_b) = (ctx.root.join("store-b"), ctx.root.join("data-b"));
    let b = serve(&ctx, &store_b, &data_b, &cache);
    let (status, body) = b.post(&json!({"lockfile": lockfile}));
    assert_eq!(status, 201, "{body}");
    b.stop();
    // A cache that cannot be written fails the start, naming the plugin.
    let (store_c, data_c) = (ctx.root.join("store-c"), ctx.root.join("data-c"));
    let missing = format!("s3://no-such-bucket/x?endpoint={}", moto.endpoint);
    let c = serve_with(&ctx, &store_c, &data_c, &cache, &["--push-to", &missing]);
    let (status, body) = c.post(&json!({"lockfile": lockfile}));
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("plugin `review`"), "{body}");
    assert!(!body.contains(SECRET) && !body.contains(KEY_ID), "{body}");
    c.stop();
}

#[test]
fn a_server_killed_while_pushing_leaves_no_conversation_without_its_plugins_cached() {
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    // A file cache, so the kill lands at a known step (`push-before-narinfo`).
    let cache = ctx.root.join("cache");
    let cache_url = format!("file://{}", cache.display());
    let data = ctx.root.join("data");
    common::kill_serve_mid_start(
        ctx.berth()
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--allow-local-sources",
                "--push-to",
                &cache_url,
                "--data-dir",
            ])
            .arg(&data),
        berth_store::fault::PUSH_BEFORE_NARINFO,
        &json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}),
    );
    let conversations: Vec<String> = std::fs::read_dir(data.join("conversations"))
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with(".tmp-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(conversations.is_empty(), "{conversations:?}");
    let mut files = Vec::new();
    all_files(&cache, &mut files);
    assert!(
        files
            .iter()
            .all(|f| f.extension().is_none_or(|e| e != "narinfo")),
        "{files:?}"
    );
    // Restarted, the server answers the start, and the fleet cache has what it names.
    let server = serve_with(&ctx, &ctx.store, &data, "", &["--push-to", &cache_url]);
    let (status, body) =
        server.post(&json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}));
    assert_eq!(status, 201, "{body}");
    let (_, listed) = server.get("/api/conversations");
    let listed: Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(listed["conversations"].as_array().expect("list").len(), 1);
    server.stop();
    let mut files = Vec::new();
    all_files(&cache, &mut files);
    assert!(
        files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "narinfo")),
        "{files:?}"
    );
}
