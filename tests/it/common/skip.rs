//! The rule for a test whose tool or privilege is missing, shared by every test harness
//! of the workspace (`tests/it/common`, `tests/fuzz` and the store's unit tests).

/// Whether this is a CI run (`CI` set, as CI services and `.ci/run` set it): then a test
/// whose tool or privilege is missing fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Called when a test cannot run because `what` is missing: fails the test in CI (see
/// [`in_ci`]), so a skipped test cannot pass unnoticed there; elsewhere prints
/// `skipped: ...` with `why` (what to install or set) and the caller returns.
pub fn require_or_skip(what: &str, why: &str) {
    assert!(
        !in_ci(),
        "{what} is missing, and tests cannot skip in CI (`CI` is set): {why}"
    );
    eprintln!("skipped: {what} is missing; {why}");
}
