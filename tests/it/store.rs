//! `berth store verify` and `berth store gc` (issue #6): roots, what gc keeps and frees,
//! and repairing a corrupt entry.

use crate::common;

use std::path::Path;

use common::{TestContext, list_dir};

/// Repositories p0..p3, each a plugin named after it.
fn repos(ctx: &TestContext) {
    for i in 0..4 {
        let repo = ctx.repo(&format!("p{i}"));
        repo.copy_fixture("lint", "");
        repo.write(".plugin/plugin.json", &format!("{{\"name\": \"p{i}\"}}"));
        repo.commit("plugin");
    }
}

/// A project folder with a manifest of these plugins, locked and synced.
fn project(ctx: &TestContext, dir: &Path, plugins: &[usize]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let manifest: String = plugins
        .iter()
        .map(|i| format!("[[plugin]]\nsource = \"github:acme/p{i}\"\n\n"))
        .collect();
    std::fs::write(dir.join("plugins.toml"), manifest).expect("write");
    let out = ctx
        .berth()
        .current_dir(dir)
        .args(["plugins", "sync"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn entry_of(ctx: &TestContext, plugin: &str) -> Option<String> {
    ctx.store_entries()
        .into_iter()
        .find(|e| e.ends_with(&format!("-{plugin}")))
}

#[test]
fn gc_keeps_what_roots_use_and_forgets_gone_roots() {
    let ctx = TestContext::new();
    repos(&ctx);
    // Over HTTP, so the projects' fetches fill git caches for gc to keep and free.
    let _server = ctx.serve_github_over_http();
    project(&ctx, &ctx.root.join("a"), &[0, 1]);
    project(&ctx, &ctx.root.join("b"), &[1, 2]);
    project(&ctx, &ctx.root.join("c"), &[3]);
    assert_eq!(ctx.store_entries().len(), 4);
    // Showing a set makes its view (links named after the plugins); c's view leads to p3.
    let views = |ctx: &TestContext| -> Vec<String> {
        std::fs::read_dir(ctx.store.join("views-v1"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    ctx.ok_in(&ctx.root.join("a"), &["plugins", "show", "--json"]);
    ctx.ok_in(&ctx.root.join("c"), &["plugins", "show", "--json"]);
    assert_eq!(views(&ctx).len(), 2);
    // Project c is deleted: its lock no longer holds p3.
    std::fs::remove_dir_all(ctx.root.join("c")).expect("rm c");
    let dry = ctx.ok(&["store", "gc", "--dry-run"]);
    assert!(
        dry.stderr.contains("Would remove") && dry.stderr.contains("-p3"),
        "{}",
        dry.stderr
    );
    assert!(entry_of(&ctx, "p3").is_some(), "a dry run removes nothing");
    let gc = ctx.ok(&["store", "gc", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&gc.stdout).expect("JSON");
    let freed: Vec<&str> = report["freed"]
        .as_array()
        .expect("freed")
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    assert!(
        freed
            .iter()
            .any(|p| p.starts_with("store-v1/") && p.ends_with("-p3")),
        "{freed:?}"
    );
    assert!(
        freed.iter().any(|p| p.starts_with("git-v1/db/p3")),
        "p3's git cache goes too: {freed:?}"
    );
    assert!(report["bytes"].as_u64().expect("bytes") > 0);
    assert_eq!(report["roots"], 2);
    assert!(gc.stderr.contains("Forgetting root"), "{}", gc.stderr);
    for kept in ["p0", "p1", "p2"] {
        assert!(entry_of(&ctx, kept).is_some(), "{kept} is used by a root");
    }
    assert!(entry_of(&ctx, "p3").is_none());
    assert!(
        freed.iter().any(|p| p.starts_with("views-v1/")),
        "c's view goes with p3: {freed:?}"
    );
    assert_eq!(views(&ctx).len(), 1, "a's view stays");
    // What remains still syncs offline, and a second gc frees nothing.
    for dir in ["a", "b"] {
        let out = ctx
            .berth()
            .current_dir(ctx.root.join(dir))
            .args(["plugins", "sync", "--frozen", "--offline"])
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let again = ctx.ok(&["store", "gc", "--json"]);
    let again: serde_json::Value = serde_json::from_str(&again.stdout).expect("JSON");
    assert_eq!(again["freed"], serde_json::json!([]));
    // A lockfile moved away stops holding its entries too.
    std::fs::rename(ctx.root.join("b"), ctx.root.join("b-moved")).expect("move b");
    ctx.ok(&["store", "gc"]);
    assert!(
        entry_of(&ctx, "p2").is_none(),
        "b's lock moved: p2 is no longer held"
    );
    assert!(entry_of(&ctx, "p1").is_some(), "a still holds p1");
}

#[test]
fn server_conversations_are_roots() {
    let ctx = TestContext::new();
    repos(&ctx);
    let data = ctx.root.join("data");
    let server = ctx
        .berth()
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-local-sources",
            "--data-dir",
        ])
        .arg(&data)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve");
    let mut child = server;
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let base = loop {
        let line = lines.next().expect("address").expect("line");
        if let Some(addr) = line.split("Listening on ").nth(1) {
            break addr.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let response = reqwest::blocking::Client::new()
        .post(format!("{base}/api/conversations"))
        .header("content-type", "application/json")
        .body(r#"{"plugins": [{"source": "github:acme/p0"}]}"#)
        .send()
        .expect("POST");
    assert_eq!(
        response.status().as_u16(),
        201,
        "{}",
        response.text().unwrap_or_default()
    );
    let _ = child.kill();
    let _ = child.wait();
    project(&ctx, &ctx.root.join("other"), &[1]);
    std::fs::remove_dir_all(ctx.root.join("other")).expect("rm");
    ctx.ok(&["store", "gc"]);
    assert!(entry_of(&ctx, "p0").is_some(), "the conversation holds p0");
    assert!(entry_of(&ctx, "p1").is_none());
}

#[test]
fn verify_finds_and_repairs_a_corrupt_entry() {
    let ctx = TestContext::new();
    repos(&ctx);
    project(&ctx, &ctx.work, &[0, 1]);
    ctx.ok(&["store", "verify"]);
    let entry = ctx
        .store
        .join("store-v1")
        .join(entry_of(&ctx, "p1").expect("p1"));
    let file = entry.join("skills/lint-rules/SKILL.md");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(&file, "tampered\n").expect("tamper");
    let run = ctx.run(&["store", "verify"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(
        errors[0].contains("-p1`") && errors[0].contains("corrupt"),
        "{}",
        errors[0]
    );
    assert!(run.stderr.contains("--repair"), "{}", run.stderr);
    let repaired = ctx.run(&["store", "verify", "--repair", "--json"]);
    assert_eq!(
        repaired.code, 1,
        "a corrupt entry was found, even if repaired"
    );
    let doc: serde_json::Value = serde_json::from_str(&repaired.stdout).expect("JSON");
    assert_eq!(doc["ok"], false);
    assert!(!entry.exists(), "--repair removed it");
    ctx.ok(&["plugins", "sync"]);
    ctx.ok(&["store", "verify"]);
    assert_eq!(list_dir(&ctx.store.join("store-v1")).len(), 2);
}
