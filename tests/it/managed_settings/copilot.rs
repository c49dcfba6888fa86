//! `berth materialize copilot DIR --managed-settings /etc/github-copilot/managed-settings.json`,
//! read by the real GitHub Copilot CLI (`BERTH_COPILOT`). Copilot applies the managed
//! marketplace allowlist and `enabledPlugins` to what a session loads (its `plugin list`
//! and `skill list` outside a session do not), so the test starts sessions: offline
//! (`COPILOT_OFFLINE`), on a local model provider (`COPILOT_PROVIDER_BASE_URL`, both
//! documented in `copilot help environment`) that records each request, whose prompt
//! lists the skills the session loaded.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{bwrap_works, etc_copy, lock_hello, text, with_etc};
use crate::common::{TestContext, require_or_skip};
use crate::import_clients::{folder, market_of};

/// A model provider speaking OpenAI's chat completions, answering `done` to every request
/// and keeping each request's body.
struct FakeModel {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl FakeModel {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let kept = requests.clone();
        // Serves until the test process ends.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let body = answer(stream);
                kept.lock().expect("not poisoned").push(body);
            }
        });
        Self { url, requests }
    }

    /// The bodies of the requests since the last call.
    fn take(&self) -> String {
        std::mem::take(&mut *self.requests.lock().expect("not poisoned")).join("\n")
    }
}

/// Reads one request from `stream` and answers it (a stream of one `done` message); its
/// body.
fn answer(mut stream: std::net::TcpStream) -> String {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((key, value)) = line.split_once(':')
            && key.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let chunk = |delta: Value, finish: Value| {
        let chunk = serde_json::json!({"id": "x", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-4o", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let events = chunk(
        serde_json::json!({"role": "assistant", "content": "done"}),
        Value::Null,
    ) + &chunk(serde_json::json!({}), "stop".into())
        + "data: [DONE]\n\n";
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{events}"
    );
    String::from_utf8_lossy(&body).into_owned()
}

/// `copilot ARGS` on home `home`, offline on `model`, run with `etc` bound over `/etc`.
/// Copilot unpacks itself into its cache folder on a first run: the test's cache links the
/// package `.ci/run` unpacked beside its npm install.
fn copilot_with(ctx: &TestContext, bin: &Path, home: &Path, etc: &Path, args: &[&str]) -> Output {
    let model = FakeModel::start();
    copilot_on(ctx, bin, home, etc, &model, args)
}

fn copilot_on(
    ctx: &TestContext,
    bin: &Path,
    home: &Path,
    etc: &Path,
    model: &FakeModel,
    args: &[&str],
) -> Output {
    let cache = ctx.home.join(".cache");
    let unpacked = cache.join("copilot/pkg");
    if !unpacked.exists() {
        let install = bin
            .ancestors()
            .nth(3)
            .expect("DIR/node_modules/.bin/copilot");
        std::fs::create_dir_all(cache.join("copilot")).expect("mkdir");
        std::os::unix::fs::symlink(install.join("xdg-cache/copilot/pkg"), &unpacked).expect("link");
    }
    with_etc(etc, bin)
        .args(args)
        .env("HOME", &ctx.home)
        .env("COPILOT_HOME", home)
        .env("XDG_CACHE_HOME", &cache)
        .env("COPILOT_DISABLE_TELEMETRY", "1")
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_PROVIDER_BASE_URL", &model.url)
        .env("COPILOT_MODEL", "gpt-4o")
        .current_dir(&ctx.work)
        .output()
        .expect("run bwrap")
}

/// Which of the skills `hello-skill` and `bye-skill` a session on home `home` under `etc`
/// offers the model.
fn session_skills(ctx: &TestContext, bin: &Path, home: &Path, etc: &Path) -> Vec<&'static str> {
    let model = FakeModel::start();
    let out = copilot_on(ctx, bin, home, etc, &model, &["-p", "hi"]);
    assert!(out.status.success(), "copilot -p: {}", text(&out));
    let prompt = model.take();
    assert!(prompt.contains("available_skills"), "{prompt}");
    ["bye-skill", "hello-skill"]
        .into_iter()
        .filter(|s| prompt.contains(&format!("<name>{s}</name>")))
        .collect()
}

fn copilot_bin() -> Option<PathBuf> {
    std::env::var_os("BERTH_COPILOT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

#[test]
fn copilot_loads_no_plugin_outside_the_lock_under_managed_settings() {
    let Some(bin) = copilot_bin() else {
        require_or_skip("BERTH_COPILOT", "see .ci/run, which pins it");
        return;
    };
    if !bwrap_works() {
        return;
    }
    let ctx = TestContext::new();
    lock_hello(&ctx);
    // The user's own marketplace, added and installed from before the policy.
    let home = ctx.root.join("copilot");
    std::fs::create_dir_all(&home).expect("mkdir");
    let plain = Path::new("/etc");
    let other = market_of(&ctx, "other", &[("bye", "2.1.0")]);
    for args in [
        ["plugin", "marketplace", "add", folder(&other)].as_slice(),
        &["plugin", "install", "bye@other"],
    ] {
        let out = copilot_with(&ctx, &bin, &home, plain, args);
        assert!(out.status.success(), "copilot {args:?}: {}", text(&out));
    }

    let etc = etc_copy(&ctx);
    let file = etc.join("github-copilot/managed-settings.json");
    let (h, f) = (home.to_str().expect("UTF-8"), file.to_str().expect("UTF-8"));
    let run = ctx.ok(&["materialize", "copilot", h, "--managed-settings", f]);
    assert!(run.stderr.contains("enforced by"), "{}", run.stderr);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("the file")).expect("JSON");
    let source = serde_json::json!({"source": "directory",
        "path": home.join("berth-marketplace").display().to_string()});
    assert_eq!(
        written["strictKnownMarketplaces"],
        serde_json::json!([source])
    );
    assert_eq!(written["extraKnownMarketplaces"]["berth"]["source"], source);
    assert_eq!(
        written["enabledPlugins"],
        serde_json::json!({"hello@berth": true})
    );
    ctx.ok(&[
        "materialize",
        "copilot",
        h,
        "--managed-settings",
        f,
        "--check",
    ]);

    // Without the policy a session loads the user's plugin; with it, only berth's.
    let skills = |etc: &Path| session_skills(&ctx, &bin, &home, etc);
    assert_eq!(skills(plain), ["bye-skill", "hello-skill"]);
    assert_eq!(skills(&etc), ["hello-skill"]);
    // The user disables berth's plugin: the managed `enabledPlugins` enables it all the same.
    let settings = home.join("settings.json");
    let mut user: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("JSON");
    user["enabledPlugins"]["hello@berth"] = false.into();
    std::fs::write(&settings, user.to_string()).expect("write");
    assert_eq!(skills(plain), ["bye-skill"]);
    assert_eq!(skills(&etc), ["hello-skill"]);

    // A marketplace from anywhere else is refused before it is read.
    let third = market_of(&ctx, "third", &[("more", "0.1.0")]);
    let add = copilot_with(
        &ctx,
        &bin,
        &home,
        &etc,
        &["plugin", "marketplace", "add", folder(&third)],
    );
    assert!(!add.status.success(), "{}", text(&add));
    assert!(
        text(&add).contains("Marketplace source blocked by managed policy"),
        "{}",
        text(&add)
    );
}
