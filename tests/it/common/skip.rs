//! The rule for a test whose tool or privilege is missing, shared by every test harness
//! of the workspace (`tests/it/common`, `tests/fuzz` and the store's unit tests).

/// Whether this is a CI run (`CI` set, as CI services and `.ci/run` set it): then a test
/// whose tool or privilege is missing fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Called when a test cannot run because `what` is missing: fails the test in CI (see
/// [`in_ci`]), so a skipped test cannot pass unnoticed there; elsewhere prints
/// `skipped: ...` with `why` (what to install or set) and the caller returns. The line is
/// written to the process's stderr itself, past the test harness's capture (which hides
/// `eprintln!` of a passing test), so a plain `cargo test` shows it on the terminal.
pub fn require_or_skip(what: &str, why: &str) {
    use std::io::Write as _;
    assert!(
        !in_ci(),
        "{what} is missing, and tests cannot skip in CI (`CI` is set): {why}"
    );
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(
        std::io::stderr().lock(),
        "skipped: {test}: {what} is missing; {why}"
    );
}
