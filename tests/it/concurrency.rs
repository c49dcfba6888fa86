//! Concurrency (issue #6): several processes on one store, and a server starting
//! conversations while a CLI sync and gc run. No corruption, each artifact fetched once.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::{GitHttpServer, TestContext, list_dir};

fn repos(ctx: &TestContext, count: usize) {
    for i in 0..count {
        let repo = ctx.repo(&format!("c{i}"));
        repo.copy_fixture("lint", "");
        repo.write(".plugin/plugin.json", &format!("{{\"name\": \"c{i}\"}}"));
        for j in 0..20 {
            repo.write(&format!("docs/{j}.md"), &format!("{i}/{j}\n"));
        }
        repo.commit("plugin");
    }
}

fn project(ctx: &TestContext, name: &str, plugins: &[usize]) -> std::path::PathBuf {
    let dir = ctx.root.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let manifest: String = plugins
        .iter()
        .map(|i| format!("[[plugin]]\nsource = \"github:acme/c{i}\"\n\n"))
        .collect();
    std::fs::write(dir.join("plugins.toml"), manifest).expect("write");
    dir
}

fn assert_verified(ctx: &TestContext) {
    let verify = ctx.run(&["store", "verify"]);
    assert_eq!(verify.code, 0, "{}", verify.stderr);
}

fn fetches_per_repo(git: &GitHttpServer) -> Vec<(String, usize)> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for path in git.fetches() {
        *counts.entry(path).or_default() += 1;
    }
    counts.into_iter().collect()
}

#[test]
fn eight_processes_sync_overlapping_locks_into_one_store() {
    let ctx = TestContext::new();
    repos(&ctx, 6);
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);
    let dirs: Vec<_> = (0..8)
        .map(|k| project(&ctx, &format!("p{k}"), &[k % 6, (k + 1) % 6, (k + 2) % 6]))
        .collect();
    let children: Vec<_> = dirs
        .iter()
        .map(|dir| {
            ctx.berth()
                .current_dir(dir)
                .env("BERTH_GITHUB_URL", git.url())
                .args(["plugins", "sync"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let counts = fetches_per_repo(&git);
    assert_eq!(counts.len(), 6, "{counts:?}");
    assert!(
        counts.iter().all(|(_, n)| *n == 1),
        "each repository fetched once: {counts:?}"
    );
    assert_eq!(list_dir(&ctx.store.join("store-v1")).len(), 6);
    assert_verified(&ctx);
}

#[test]
fn a_server_starting_conversations_while_a_sync_and_gcs_run() {
    let ctx = TestContext::new();
    repos(&ctx, 6);
    let git = GitHttpServer::start(
        &ctx.upstream,
        &ctx.root.join("http.log"),
        &["--delay-ms", "20"],
    );
    // Something for gc to collect while it races: an abandoned project's entries.
    let abandoned = project(&ctx, "abandoned", &[5]);
    let out = ctx
        .berth()
        .current_dir(&abandoned)
        .env("BERTH_GITHUB_URL", git.url())
        .args(["plugins", "sync"])
        .output()
        .expect("run");
    assert!(out.status.success());
    std::fs::remove_dir_all(&abandoned).expect("abandon");
    let before = git.fetches().len();

    let data = ctx.root.join("data");
    let mut server = ctx
        .berth()
        .env("BERTH_GITHUB_URL", git.url())
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--jobs",
            "2",
            "--data-dir",
        ])
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
    let base = loop {
        let line = lines.next().expect("address").expect("line");
        if let Some(addr) = line.split("Listening on ").nth(1) {
            break addr.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let cli_project = project(&ctx, "cli", &[0, 2, 4]);
    let (statuses, ids, cli, gcs) = std::thread::scope(|scope| {
        let posts: Vec<_> = (0..40)
            .map(|i| {
                let base = base.clone();
                scope.spawn(move || {
                    let plugins: Vec<String> = [i % 5, (i + 2) % 5]
                        .iter()
                        .map(|p| format!("{{\"source\": \"github:acme/c{p}\"}}"))
                        .collect();
                    let response = reqwest::blocking::Client::new()
                        .post(format!("{base}/api/conversations"))
                        .header("content-type", "application/json")
                        .body(format!("{{\"plugins\": [{}]}}", plugins.join(",")))
                        .send()
                        .expect("POST");
                    let status = response.status().as_u16();
                    let body: serde_json::Value =
                        serde_json::from_str(&response.text().expect("text")).expect("JSON");
                    (status, body["id"].as_str().unwrap_or_default().to_owned())
                })
            })
            .collect();
        let cli = scope.spawn(|| {
            ctx.berth()
                .current_dir(&cli_project)
                .env("BERTH_GITHUB_URL", git.url())
                .args(["plugins", "sync"])
                .output()
                .expect("sync")
        });
        let gcs = scope.spawn(|| {
            (0..5)
                .map(|_| ctx.berth().args(["store", "gc"]).output().expect("gc"))
                .collect::<Vec<_>>()
        });
        let results: Vec<(u16, String)> =
            posts.into_iter().map(|p| p.join().expect("post")).collect();
        let statuses: Vec<u16> = results.iter().map(|r| r.0).collect();
        let ids: Vec<String> = results.into_iter().map(|r| r.1).collect();
        (
            statuses,
            ids,
            cli.join().expect("cli"),
            gcs.join().expect("gcs"),
        )
    });
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    for gc in &gcs {
        assert!(
            gc.status.success(),
            "{}",
            String::from_utf8_lossy(&gc.stderr)
        );
    }
    // Every conversation still has its plugin set: gc removed nothing they use.
    for id in &ids {
        let response = reqwest::blocking::get(format!("{base}/api/conversations/{id}/plugin_set"))
            .expect("GET");
        assert_eq!(response.status().as_u16(), 200, "{id}");
    }
    let _ = server.kill();
    let _ = server.wait();
    let during: Vec<String> = git.fetches()[before..].to_vec();
    let mut unique = during.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        during.len(),
        unique.len(),
        "each repository fetched once while racing: {during:?}"
    );
    assert!(
        list_dir(&ctx.store.join("store-v1"))
            .iter()
            .all(|e| !e.ends_with("-c5")),
        "the abandoned entry was collected"
    );
    assert_verified(&ctx);
}
