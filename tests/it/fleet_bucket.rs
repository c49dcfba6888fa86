//! `berth serve` as a fleet: servers on different stores share one bucket on a real S3
//! server (moto, on 127.0.0.1) for their conversations (`--data-dir s3://…`) and their
//! binary cache (`--push-to`, `--substituter`). Any server reads, restores, lists and
//! deletes any conversation; a server killed mid-start leaves nothing half there.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::moto::{KEY_ID, Moto, SECRET};
use common::{ServeProcess, TestContext, all_files, require_or_skip};
use serde_json::{Value, json};

pub(crate) fn moto_or_skip() -> Option<Moto> {
    let moto = Moto::start();
    if moto.is_none() {
        require_or_skip(
            "moto_server",
            "install `moto[server]` from PyPI (or set BERTH_MOTO_SERVER); .ci/run does",
        );
    }
    moto
}

/// One server of the fleet: its own store, the shared data and cache URLs.
fn fleet_server(ctx: &TestContext, store: &Path, data: &str, cache: &str) -> ServeProcess {
    let mut cmd = ctx.berth();
    cmd.env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .env("BERTH_STORE", store)
        .env("BERTH_SUBSTITUTERS", cache)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--data-dir",
            data,
            "--push-to",
            cache,
        ]);
    ServeProcess::start(cmd)
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// Every id `server` lists, following `next_cursor` a page of `limit` at a time.
fn list_all(server: &ServeProcess, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, body) =
            server.get(&format!("/api/conversations?limit={limit}&cursor={cursor}"));
        assert_eq!(status, 200, "{body}");
        let page = json_of(&body);
        let listed = page["conversations"].as_array().expect("conversations");
        assert!(listed.len() <= limit, "{body}");
        ids.extend(
            listed
                .iter()
                .map(|c| c["id"].as_str().expect("id").to_owned()),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => return ids,
        }
    }
}

#[test]
fn a_fleet_shares_conversations_and_plugins_through_one_bucket() {
    let Some(moto) = moto_or_skip() else {
        return;
    };
    moto.create_bucket("fleet");
    let data = format!("s3://fleet/conversations?endpoint={}", moto.endpoint);
    let cache = format!("s3://fleet/cache?endpoint={}", moto.endpoint);
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    let mut responses = String::new();
    let mut logs = String::new();
    let unstore = |set: &str, store: &Path| set.replace(store.to_str().expect("utf-8"), "<store>");

    // Started on A, read on B.
    let (store_a, store_b, store_c) = (
        ctx.root.join("store-a"),
        ctx.root.join("store-b"),
        ctx.root.join("store-c"),
    );
    let a = fleet_server(&ctx, &store_a, &data, &cache);
    let b = fleet_server(&ctx, &store_b, &data, &cache);
    let (status, body) =
        a.post(&json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}], "metadata": {"who": "a"}}));
    assert_eq!(status, 201, "{body}");
    responses.push_str(&body);
    let created = json_of(&body);
    let id = created["id"].as_str().expect("id").to_owned();
    let lockfile = created["lockfile"].as_str().expect("lockfile").to_owned();
    let (_, set_a) = a.get(&format!("/api/conversations/{id}/plugin_set"));
    let (status, lock_b) = b.get(&format!("/api/conversations/{id}/lockfile"));
    assert_eq!(status, 200, "{lock_b}");
    assert_eq!(lock_b, lockfile, "B serves A's lock byte for byte");
    let (status, detail_b) = b.get(&format!("/api/conversations/{id}"));
    assert_eq!(status, 200, "{detail_b}");
    assert_eq!(json_of(&detail_b)["metadata"], json!({"who": "a"}));
    let (status, set_b) = b.get(&format!("/api/conversations/{id}/plugin_set"));
    assert_eq!(status, 200, "{set_b}");
    assert_eq!(unstore(&set_b, &store_b), unstore(&set_a, &store_a));
    logs.push_str(&a.log());
    a.stop();

    // A and its store are gone, and so is upstream: B and a new server C restore it.
    std::fs::remove_dir_all(&store_a).expect("remove A's store");
    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    std::fs::remove_dir_all(&store_b).expect("B's store emptied too");
    let c = fleet_server(&ctx, &store_c, &data, &cache);
    for (server, store) in [(&b, &store_b), (&c, &store_c)] {
        let (status, lock) = server.get(&format!("/api/conversations/{id}/lockfile"));
        assert_eq!(status, 200, "{lock}");
        assert_eq!(lock, lockfile);
        let (status, set) = server.get(&format!("/api/conversations/{id}/plugin_set"));
        assert_eq!(status, 200, "{set}");
        assert_eq!(unstore(&set, store), unstore(&set_a, &store_a));
        responses.push_str(&set);
    }
    // C restored from the cache, checked against the lock as `sync --frozen` checks.
    let verified = ctx
        .berth()
        .env("BERTH_STORE", &store_c)
        .args(["store", "verify"])
        .output()
        .expect("verify");
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );

    // A comes back (a new store); a delete on B is seen by A and by C, which had read it.
    let store_a2 = ctx.root.join("store-a2");
    let a = fleet_server(&ctx, &store_a2, &data, &cache);
    let (status, _) = a.get(&format!("/api/conversations/{id}"));
    assert_eq!(status, 200);
    let (status, body) = b.delete(&format!("/api/conversations/{id}"));
    assert_eq!(status, 204, "{body}");
    for server in [&a, &b, &c] {
        for path in ["", "/lockfile", "/plugin_set"] {
            let (status, body) = server.get(&format!("/api/conversations/{id}{path}"));
            assert_eq!(status, 404, "{path}: {body}");
        }
        assert!(!list_all(server, 1000).contains(&id));
    }
    let (status, _) = c.delete(&format!("/api/conversations/{id}"));
    assert_eq!(status, 404, "deleted once");

    // 200 concurrent starts, split across A and B: all succeed, all listed by C.
    let lock_only = json!({ "lockfile": lockfile }).to_string();
    let started: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..20)
            .map(|worker| {
                let base = if worker % 2 == 0 { &a.base } else { &b.base };
                let body = &lock_only;
                scope.spawn(move || {
                    let client = reqwest::blocking::Client::new();
                    (0..10)
                        .map(|_| {
                            let response = client
                                .post(format!("{base}/api/conversations"))
                                .header("content-type", "application/json")
                                .body(body.clone())
                                .send()
                                .expect("POST");
                            let status = response.status().as_u16();
                            let text = response.text().expect("body");
                            assert_eq!(status, 201, "{text}");
                            json_of(&text)["id"].as_str().expect("id").to_owned()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });
    assert_eq!(started.len(), 200);
    let started: BTreeSet<String> = started.into_iter().collect();
    assert_eq!(started.len(), 200, "200 distinct ids");
    let listed = list_all(&c, 64);
    let listed_set: BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(listed.len(), listed_set.len(), "no id listed twice");
    assert_eq!(listed_set, started);
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted, "listed in id order");
    // A bad page is refused, naming what to give.
    let (status, body) = c.get("/api/conversations?limit=0");
    assert_eq!(status, 400, "{body}");
    let (status, body) = c.get("/api/conversations?cursor=nope");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("next_cursor"), "{body}");

    // The bucket's credentials are in no file, log or response.
    for server in [a, b, c] {
        logs.push_str(&server.log());
        server.stop();
    }
    assert!(
        logs.contains(&id),
        "the servers logged their work (checked for credentials below)"
    );
    for text in [&logs, &responses] {
        assert!(!text.contains(SECRET) && !text.contains(KEY_ID));
    }
    let mut files = Vec::new();
    all_files(&ctx.root, &mut files);
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
        assert!(
            !text.contains(SECRET) && !text.contains(KEY_ID),
            "{}",
            file.display()
        );
    }
    for key in moto.keys("fleet") {
        let text = String::from_utf8_lossy(&moto.get("fleet", &key)).into_owned();
        assert!(!text.contains(SECRET) && !text.contains(KEY_ID), "{key}");
    }
}

/// Starts a fleet server paused at `step` during a start, kills it there with SIGKILL.
fn kill_during_start(ctx: &TestContext, store: &Path, data: &str, cache: &str, step: &str) {
    common::kill_serve_mid_start(
        ctx.berth().env("BERTH_STORE", store).args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--data-dir",
            data,
            "--push-to",
            cache,
        ]),
        step,
        &json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}),
    );
}

#[test]
fn a_server_killed_mid_start_leaves_no_conversation_half_there() {
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    // Folders as object storage (`file://`), so each kill lands at a known step.
    let data_dir = ctx.root.join("bucket/conversations");
    let data = format!("file://{}", data_dir.display());
    let cache_dir = ctx.root.join("bucket/cache");
    let cache = format!("file://{}", cache_dir.display());
    for (round, step) in [
        berth_store::fault::PUSH_BEFORE_NARINFO,
        berth_store::fault::CONVERSATION_BEFORE_META,
    ]
    .into_iter()
    .enumerate()
    {
        let store = ctx.root.join(format!("store-{round}"));
        kill_during_start(&ctx, &store, &data, &cache, step);
        // Whatever the kill left, no server lists a conversation, or finds one.
        let check = ServeProcess::start({
            let mut cmd = ctx.berth();
            cmd.env("BERTH_STORE", ctx.root.join("store-check")).args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--data-dir",
                &data,
            ]);
            cmd
        });
        assert!(list_all(&check, 10).is_empty(), "after a kill at `{step}`");
        let mut files = Vec::new();
        all_files(&data_dir, &mut files);
        for file in &files {
            assert!(
                !file.ends_with("meta.json"),
                "{}: a conversation's metadata with the kill at `{step}`",
                file.display()
            );
        }
        if step == berth_store::fault::CONVERSATION_BEFORE_META {
            // Its plugins were pushed before its lock was written.
            let lock = files
                .iter()
                .find(|f| f.ends_with("plugins.lock"))
                .expect("the lock written before the kill");
            let id = lock
                .parent()
                .and_then(Path::file_name)
                .expect("id")
                .to_string_lossy()
                .into_owned();
            let (status, _) = check.get(&format!("/api/conversations/{id}/lockfile"));
            assert_eq!(status, 404, "a lock without metadata is no conversation");
            // Kept while a start might still be writing its metadata; once it is an hour
            // old, a listing takes it for a leftover and removes it.
            assert!(lock.exists(), "a recent lock is kept");
            let two_hours_ago =
                std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 3600);
            std::fs::File::options()
                .write(true)
                .open(lock)
                .and_then(|f| f.set_modified(two_hours_ago))
                .expect("age the lock");
            assert!(list_all(&check, 10).is_empty());
            assert!(!lock.exists(), "the leftover lock is removed");
            let mut cached = Vec::new();
            all_files(&cache_dir, &mut cached);
            assert!(
                cached
                    .iter()
                    .any(|f| f.extension().is_some_and(|e| e == "narinfo")),
                "{cached:?}"
            );
        }
        check.stop();
    }
    // A server started afterwards starts conversations as ever.
    let server = ServeProcess::start({
        let mut cmd: Command = ctx.berth();
        cmd.env("BERTH_STORE", ctx.root.join("store-after")).args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--data-dir",
            &data,
            "--push-to",
            &cache,
        ]);
        cmd
    });
    let (status, body) =
        server.post(&json!({"plugins": [{"source": "github:acme/review", "ref": "v1"}]}));
    assert_eq!(status, 201, "{body}");
    assert_eq!(list_all(&server, 10).len(), 1);
    server.stop();
}

#[test]
fn objects_planted_in_the_bucket_pass_the_checks_a_request_does() {
    let Some(moto) = moto_or_skip() else {
        return;
    };
    moto.create_bucket("shared");
    let ctx = TestContext::new();
    // A folder on the server's machine, and a lock naming it with its true hash, as
    // someone with write access to the bucket (but not to the server) could write it.
    let secret = ctx.work.join("secret");
    std::fs::create_dir_all(secret.join("skills")).expect("mkdir");
    std::fs::write(secret.join("skills/key.md"), "PRIVATE KEY\n").expect("write");
    ctx.write_manifest(&format!("[[plugin]]\nsource = \"{}\"\n", secret.display()));
    ctx.ok(&["plugins", "lock"]);
    let planted_lock = ctx.lock_text();
    let true_hash = common::lock_field(&planted_lock, 0, "hash").expect("hash");
    let data = format!("s3://shared/data?endpoint={}", moto.endpoint);
    let store = ctx.root.join("server-store");
    let mut cmd = ctx.berth();
    cmd.env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .env("BERTH_STORE", &store)
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir", &data]);
    let server = ServeProcess::start(cmd);
    // One honest conversation, started through the API.
    let (status, body) = server.post(&json!({"plugins": []}));
    assert_eq!(status, 201, "{body}");
    let honest = json_of(&body)["id"].as_str().expect("id").to_owned();

    let plant = |id: &str, meta_id: &str, lock: Vec<u8>| {
        moto.put(
            "shared",
            &format!("data/conversations/{id}/plugins.lock"),
            lock,
        );
        moto.put(
            "shared",
            &format!("data/conversations/{id}/meta.json"),
            json!({"id": meta_id, "created_at": 1, "metadata": null})
                .to_string()
                .into_bytes(),
        );
    };
    // A local path: refused by the source policy, as a posted lock naming it would be.
    let local = "01900000-0000-7000-8000-000000000001";
    plant(local, local, planted_lock.clone().into_bytes());
    // The same with a wrong hash: refused before hashing, so no answer shows the folder's.
    let wrong = "01900000-0000-7000-8000-000000000002";
    plant(
        wrong,
        wrong,
        planted_lock
            .replace(
                &true_hash,
                "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            )
            .into_bytes(),
    );
    // A meta.json whose id is not its key's.
    let misnamed = "01900000-0000-7000-8000-000000000003";
    plant(misnamed, "../../../cache/x", b"version = 1\n".to_vec());
    // A lock object over the size limit (5 MiB).
    let huge = "01900000-0000-7000-8000-000000000004";
    let mut big = b"version = 1\n".to_vec();
    big.extend(std::iter::repeat_n(b'#', 5 << 20));
    plant(huge, huge, big);

    for (id, path) in [
        (local, ""),
        (local, "/plugin_set"),
        (wrong, "/plugin_set"),
        (misnamed, ""),
        (huge, ""),
    ] {
        let (status, body) = server.get(&format!("/api/conversations/{id}{path}"));
        assert_eq!(status, 502, "{id}{path}: {body}");
        assert_eq!(
            json_of(&body)["error"]["code"],
            "data_store_object_refused",
            "{body}"
        );
        assert!(!body.contains(&true_hash), "{body}");
    }
    // The listing skips what it cannot use and lists the rest.
    let (status, body) = server.get("/api/conversations?limit=10");
    assert_eq!(status, 200, "{body}");
    let listed: Vec<String> = json_of(&body)["conversations"]
        .as_array()
        .expect("conversations")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(listed, vec![honest], "{body}");
    let log = server.log();
    assert!(
        log.contains("is refused") && log.contains("does not allow local sources"),
        "{log}"
    );
    assert!(log.contains("over berth's limit of 4194304 bytes"), "{log}");
    assert!(
        log.contains("meta.json` is not a conversation's metadata"),
        "{log}"
    );
    // Nothing of the folder reached the server's store.
    let entries = common::list_dir(&store.join("store-v1"));
    assert!(entries.is_empty(), "{entries:?}");
    server.stop();
}
