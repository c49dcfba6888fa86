//! A server's output is bounded and its processes end with the observation: an endless
//! line (P4-8) and a child in a session of its own (P4-9), reproduced.

use std::time::{Duration, Instant};

use super::{Lab, text};

/// P4-8: one line that never ends. berth reads no more of it than the line limit, so it
/// finishes under a 1 GiB data limit (`prlimit`) where reading the whole line would grow
/// its memory by hundreds of megabytes a second, and at once rather than at the time
/// bound; the lock says why the server was not observed.
#[test]
fn an_endless_line_is_cut_and_memory_stays_bounded() {
    let Some(lab) = Lab::as_myself() else {
        return;
    };
    lab.hostile("endless", &["endless-line"]);
    lab.manifest();
    lab.hand_over();
    let started = Instant::now();
    let run = crate::common::Run::from(
        lab.berth_under(
            &["prlimit", "--data=1073741824", "--"],
            &["plugins", "lock"],
        )
        .env("BERTH_OBSERVE_TIMEOUT", "20")
        .output()
        .expect("run berth"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "it ran until the time bound: {:?}",
        started.elapsed()
    );
    assert!(
        run.stderr.contains(
            "MCP server `endless` of plugin `endless` was not observed: it wrote a line longer than 8 MiB"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(
        lab.unobserved().get("endless").map(String::as_str),
        Some("it wrote a line longer than 8 MiB")
    );
    assert!(lab.survivors(5).is_empty());
}

/// P4-9: a server's child that calls `setsid` leaves the server's process group; it ends
/// with the observation all the same (its whole PID namespace is killed), and the file it
/// would have written 5 s later never appears.
#[test]
fn a_child_in_a_session_of_its_own_ends_with_the_observation() {
    let Some(lab) = Lab::as_myself() else {
        return;
    };
    let mark = lab.path("survivor");
    lab.hostile("detached", &["setsid", &text(&mark)]);
    lab.manifest();
    lab.hand_over();
    let started = Instant::now();
    let run = lab.lock();
    assert!(
        run.stderr
            .contains("Observed MCP server `detached` of `detached`: 1 tool"),
        "{}",
        run.stderr
    );
    let left = lab.survivors(3);
    assert!(left.is_empty(), "outlived the observation: {left:?}");
    std::thread::sleep(Duration::from_secs(7).saturating_sub(started.elapsed()));
    assert!(!mark.exists(), "the child wrote `{}`", mark.display());
}
