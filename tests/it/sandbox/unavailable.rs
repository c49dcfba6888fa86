//! Where no sandbox can be made, nothing is started: berth runs in a user namespace that
//! may make no more of them (`max_user_namespaces` 0), so bubblewrap cannot make its own.
//! The lock records why, `lock` says once how to enable a sandbox, and only
//! `--observe-unsandboxed` starts the servers.

use super::{Lab, text};

/// berth in a user namespace of its own that allows none inside it.
const NO_USER_NAMESPACES: &[&str] = &[
    "unshare",
    "--user",
    "--map-root-user",
    "sh",
    "-c",
    "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"",
    "sh",
];

#[test]
fn without_user_namespaces_nothing_starts_and_the_lock_says_why() {
    let Some(lab) = Lab::as_myself() else {
        return;
    };
    let marks = [lab.path("started-a"), lab.path("started-b")];
    lab.hostile("a", &["touch", &text(&marks[0])]);
    lab.hostile("b", &["touch", &text(&marks[1])]);
    lab.manifest();
    lab.hand_over();
    let run = crate::common::Run::from(
        lab.berth_under(NO_USER_NAMESPACES, &["plugins", "lock"])
            .output()
            .expect("run berth"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for mark in &marks {
        assert!(!mark.exists(), "a server was started: {}", mark.display());
    }
    let unobserved = lab.unobserved();
    assert_eq!(
        unobserved.get("a").map(String::as_str),
        Some("no sandbox here")
    );
    assert_eq!(
        unobserved.get("b").map(String::as_str),
        Some("no sandbox here")
    );
    // Said once for both, with how to make a sandbox and how to go without.
    assert_eq!(
        run.stderr.matches("no sandbox here").count(),
        1,
        "{}",
        run.stderr
    );
    let warning = run
        .stderr
        .lines()
        .find(|l| l.contains("no sandbox here"))
        .unwrap_or_default();
    assert!(
        warning.starts_with("warning: 2 MCP servers were not started, so not observed: no sandbox here: bubblewrap cannot make one")
            && warning.contains("apt-get install bubblewrap")
            && warning.contains("kernel.apparmor_restrict_unprivileged_userns")
            && warning.contains("`--observe-unsandboxed`"),
        "{warning}"
    );

    // Asked for explicitly, the servers run as the user, which is said first.
    std::fs::remove_file(lab.ctx.lock_path()).expect("rm lock");
    let run = crate::common::Run::from(
        lab.berth_under(
            NO_USER_NAMESPACES,
            &["plugins", "lock", "--observe-unsandboxed"],
        )
        .output()
        .expect("run berth"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: `--observe-unsandboxed`: the MCP servers observed now run as you"),
        "{}",
        run.stderr
    );
    for mark in &marks {
        assert!(mark.exists(), "not started: {}", mark.display());
    }
    assert!(lab.unobserved().is_empty(), "{}", lab.ctx.lock_text());
}
