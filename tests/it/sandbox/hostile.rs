//! Hostile servers, each answering `initialize` and `tools/list` correctly while it tries
//! one thing (fixtures/mcp/hostile_server.py): every attempt fails or is cut, the lock
//! still records what each answered (or why not), the store verifies afterwards, and
//! nothing the servers made exists outside their scratch.

use std::time::{Duration, Instant};

use super::{As, Lab, text};

/// Whether `outcome` (an error's name) is one of `names`.
fn one_of(outcome: &str, names: &[&str]) -> bool {
    names.contains(&outcome)
}

fn every_attempt_fails(who: As) {
    let Some(lab) = Lab::new(who) else {
        return;
    };
    let key = lab.ctx.home.join(".ssh/id_ed25519");
    std::fs::create_dir_all(key.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----\n").expect("plant the key");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("address").port().to_string();
    let mark = lab.path("survivor");
    lab.hostile("write-store", &["write-store"]);
    lab.hostile("read-home", &["read-home", &text(&key)]);
    lab.hostile("connect-local", &["connect-local", &port]);
    lab.hostile("connect-public", &["connect-public"]);
    lab.hostile("setsid", &["setsid", &text(&mark)]);
    lab.hostile("allocate", &["allocate"]);
    lab.hostile("endless-line", &["endless-line"]);
    lab.hostile("fork-bomb", &["fork-bomb"]);
    let other = lab.plugin("other");
    std::fs::write(other.join("README.md"), "another plugin's entry\n").expect("write");
    lab.manifest();
    lab.hand_over();

    let started = Instant::now();
    let locked = lab.lock();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let found = lab.outcomes();
    let said = |mode: &str| found.get(mode).cloned().unwrap_or_default();
    // Its own entry is read-only, and no other entry is there to see.
    let store = said("write-store");
    assert!(
        [
            "own EROFS; others seen 0; others written 0",
            "own EACCES; others seen 0; others written 0"
        ]
        .contains(&store.as_str()),
        "{found:?}\n{}",
        locked.stderr
    );
    let home = said("read-home");
    assert!(
        ["read ENOENT; write ENOENT", "read EACCES; write EACCES"].contains(&home.as_str()),
        "{found:?}\n{}",
        locked.stderr
    );
    assert!(
        one_of(
            &said("connect-local"),
            &["ECONNREFUSED", "EACCES", "ENETUNREACH"]
        ),
        "{found:?}"
    );
    assert!(
        listener
            .accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener on the host's loopback was reached"
    );
    // Refused at once inside (no route, or Landlock), never tried on the host's network.
    assert!(
        one_of(&said("connect-public"), &["ENETUNREACH", "EACCES", "EPERM"]),
        "{found:?}"
    );
    assert_eq!(said("allocate"), "MemoryError", "{found:?}");
    assert_eq!(said("setsid"), "ok spawned", "{found:?}");
    match who {
        As::User => assert!(said("fork-bomb").starts_with("blocked after"), "{found:?}"),
        // Root is not held to RLIMIT_NPROC: what holds it is the end of its PID namespace.
        As::Root => assert!(!said("fork-bomb").is_empty(), "{found:?}"),
    }
    let unobserved = lab.unobserved();
    assert_eq!(
        unobserved.get("endless-line").map(String::as_str),
        Some("it wrote a line longer than 8 MiB"),
        "{unobserved:?}"
    );
    assert_eq!(
        unobserved.len(),
        1,
        "{unobserved:?}\n{}",
        lab.ctx.lock_text()
    );

    // Nothing they started runs on, nothing they wrote is outside their scratch.
    let left = lab.survivors(5);
    assert!(left.is_empty(), "still running: {left:?}");
    lab.store_verifies();
    lab.no_file_named("pwned");
    lab.no_file_named(".bashrc-pwned");
    std::thread::sleep(Duration::from_secs(6).saturating_sub(started.elapsed()));
    assert!(
        !mark.exists(),
        "a child of `setsid` outlived the observation"
    );
}

#[test]
fn every_attempt_fails_as_root() {
    every_attempt_fails(As::Root);
}

#[test]
fn every_attempt_fails_as_an_ordinary_user() {
    every_attempt_fails(As::User);
}
