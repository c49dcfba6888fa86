//! The server and fleet attacks of issue #54 (`shared/security/server-and-fleet-attacks.md`,
//! S5-1 to S5-8), each as the reproduction that found it and what must happen instead:
//! a posted or synced lock cannot relabel a store entry (`pins.rs`); a conversation's two
//! records are bound, bounded and readable by every server (`records.rs`); slow clients
//! are cut off and the answers name no server path (`clients.rs`); a hanging binary cache
//! costs seconds (`clients.rs`).

mod clients;
mod pins;
mod records;

use std::path::Path;

use serde_json::Value;

use crate::common::{ServeProcess, TestContext};

/// `berth serve` on 127.0.0.1 with `store` and `data`, fetching from the test's own
/// servers (`--allow-local-sources`), with `extra` flags.
fn serve(ctx: &TestContext, store: &Path, data: &str, extra: &[&str]) -> ServeProcess {
    let mut cmd = ctx.berth();
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--allow-local-sources"])
        .args(["--data-dir", data])
        .arg("--store")
        .arg(store)
        .args(extra);
    ServeProcess::start(cmd)
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// An error answer's code and message.
fn error_of(body: &str) -> (String, String) {
    let error = &json_of(body)["error"];
    (
        error["code"].as_str().unwrap_or_default().to_owned(),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// How many conversations `server` lists.
fn listed(server: &ServeProcess) -> usize {
    let (status, body) = server.get("/api/conversations");
    assert_eq!(status, 200, "{body}");
    json_of(&body)["conversations"]
        .as_array()
        .expect("a list")
        .len()
}
