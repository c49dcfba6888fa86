//! `berth serve --marketplace`: conversations ask for plugins of registered marketplaces,
//! and the source policy checks the marketplace and every source its catalog points to.

use crate::common;

use common::market::{market, marketplace_of, plugin};
use common::{GitRepo, TestContext, copy_tree, lock_field};
use serde_json::Value;

/// Runs `berth serve` expecting it to refuse to start; fails the test if it is still
/// running after 60 s.
fn serve_refuses(ctx: &TestContext, args: &[&str]) -> String {
    let mut child = ctx
        .berth()
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(ctx.root.join("refused-data"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start berth serve");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(!status.success(), "berth serve {args:?} started");
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("berth serve {args:?} is running; it should have refused to start");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    stderr
}

fn serve(ctx: &TestContext, data: &str, args: &[&str]) -> common::ServeProcess {
    let mut cmd = ctx.berth();
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(ctx.root.join(data))
        .args(args);
    common::ServeProcess::start(cmd)
}

#[test]
fn the_server_takes_plugins_of_registered_marketplaces_and_checks_where_they_point() {
    let m = market();
    let ctx = &m.ctx;

    // A remote marketplace must pass the policy (here `github:` is a `file://` URL).
    let refused = serve_refuses(ctx, &["--marketplace", "acme=github:acme/market"]);
    assert!(
        refused.contains("--marketplace acme=github:acme/market") && refused.contains("file://"),
        "{refused}"
    );

    // With local sources allowed: picks resolve, and the lock pins both levels.
    let server = serve(
        ctx,
        "data",
        &[
            "--allow-local-sources",
            "--marketplace",
            "acme=github:acme/market#main",
        ],
    );
    let (status, body) = server.post(&serde_json::json!({"plugins": [
        {"source": "rel@acme"}, {"source": "gh@acme"}
    ]}));
    assert_eq!(status, 201, "{body}");
    let id = serde_json::from_str::<Value>(&body).expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, lock) = server.get(&format!("/api/conversations/{id}/lockfile"));
    assert_eq!(status, 200, "{lock}");
    assert_eq!(
        marketplace_of(&lock)["rev"].as_str(),
        Some(m.market.head().as_str())
    );
    assert_eq!(
        lock_field(&lock, 0, "requested").as_deref(),
        Some("rel@acme")
    );
    assert_eq!(lock_field(&lock, 1, "rev"), Some(m.gh_v1.clone()));
    let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": "rel@nope"}]}));
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("no marketplace `nope`") && body.contains("`acme`"),
        "{body}"
    );
    drop(server);

    // An operator's local marketplace serves its own folders, but an entry pointing at
    // another local path or a `file://` repository is refused: a catalog names no path
    // on this machine outside its own folder.
    let here = GitRepo::init(&ctx.root.join("here"), &ctx.home);
    plugin(&here, "plugins/tools", "tools", "the operator's tools");
    let elsewhere = ctx.root.join("elsewhere");
    copy_tree(&here.path.join("plugins/tools"), &elsewhere);
    here.write(
        ".plugin/marketplace.json",
        &serde_json::json!({"name": "here", "plugins": [
            {"name": "tools", "source": "./plugins/tools"},
            {"name": "abs", "source": elsewhere.display().to_string()},
            {"name": "viaurl", "source": {"source": "url", "url": m.urlrepo.url()}}
        ]})
        .to_string(),
    );
    let market_arg = format!("here={}", here.path.display());
    let server = serve(ctx, "data2", &["--marketplace", &market_arg]);
    let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": "tools@here"}]}));
    assert_eq!(status, 201, "{body}");
    for (pick, needle) in [
        ("abs@here", "a path on this machine"),
        ("viaurl@here", "`file://` URL on this machine"),
    ] {
        let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": pick}]}));
        assert_eq!(status, 400, "{pick}: {body}");
        let body: Value = serde_json::from_str(&body).expect("JSON");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(message.contains(needle), "{pick}: {message}");
    }
}

/// `POST /api/conversations/{id}/load_plugin`, the agent server's route: a plugin of a
/// registered marketplace is locked into the conversation's lock (its other pins kept) and
/// shows in `plugin_set`, after a restart too; the agent server's answers for a bad
/// reference, an unknown conversation, marketplace or plugin.
#[test]
fn load_plugin_adds_a_marketplace_plugin_to_a_conversations_lock() {
    let m = market();
    let ctx = &m.ctx;
    let args = [
        "--allow-local-sources",
        "--marketplace",
        "acme=github:acme/market#main",
    ];
    let server = serve(ctx, "data", &args);
    let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": "rel@acme"}]}));
    assert_eq!(status, 201, "{body}");
    let id = serde_json::from_str::<Value>(&body).expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (_, before) = server.get(&format!("/api/conversations/{id}/lockfile"));
    let load = |plugin_ref: &str| {
        server.post_to(
            &format!("/api/conversations/{id}/load_plugin"),
            &serde_json::json!({"plugin_ref": plugin_ref}),
        )
    };
    let (status, body) = load("gh@acme");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON"),
        serde_json::json!({"success": true})
    );
    let (_, after) = server.get(&format!("/api/conversations/{id}/lockfile"));
    assert_eq!(
        lock_field(&after, 0, "rev"),
        lock_field(&before, 0, "rev"),
        "{after}"
    );
    assert_eq!(
        lock_field(&after, 1, "requested").as_deref(),
        Some("gh@acme"),
        "{after}"
    );
    assert_eq!(
        lock_field(&after, 1, "rev"),
        Some(m.gh_v1.clone()),
        "{after}"
    );
    // Loading it again changes nothing.
    assert_eq!(load("gh@acme").0, 200);
    let (_, again) = server.get(&format!("/api/conversations/{id}/lockfile"));
    assert_eq!(again, after);
    for (plugin_ref, status) in [
        ("not a reference", 400),
        ("nope@acme", 404),
        ("rel@nowhere", 404),
    ] {
        let (got, body) = load(plugin_ref);
        assert_eq!(got, status, "{plugin_ref}: {body}");
    }
    let (status, _) = server.post_to(
        "/api/conversations/00000000-0000-7000-8000-000000000000/load_plugin",
        &serde_json::json!({"plugin_ref": "gh@acme"}),
    );
    assert_eq!(status, 404);
    server.stop();

    // Restarted, the conversation has the plugin it loaded.
    let server = serve(ctx, "data", &args);
    let (status, set) = server.get(&format!("/api/conversations/{id}/plugin_set"));
    assert_eq!(status, 200, "{set}");
    let set: Value = serde_json::from_str(&set).expect("JSON");
    let names: Vec<&str> = set["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["rel", "gh"], "{set}");
}
