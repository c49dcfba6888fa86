//! Property tests (proptest) of the library crates' parsers and the code that reads
//! hostile bytes: the lockfile and manifest types, a plugin tree's loading, NAR writing
//! and unpacking (against the real `nix-store`), and archive extraction. They need only
//! the crates' public API, and live in one binary so a fresh clone links them once.
//! `PROPTEST_CASES` runs them longer.
//!
//! Run one with `cargo test -p berth --test fuzz -- nar_unpack_fuzz::` (docs/testing.md).

use proptest::test_runner::FileFailurePersistence;

// The CI rule for a missing tool, shared with the end-to-end tests.
#[path = "../it/common/skip.rs"]
mod common;

mod extract_fuzz;
mod load_fuzz;
mod lockfile_fuzz;
mod nar_fuzz;
mod nar_unpack_fuzz;

/// Where a failing case is kept: in `<module>.proptest-regressions` beside the module's
/// file (proptest's default would be a `proptest-regressions/` folder beside this one).
const REGRESSIONS: FileFailurePersistence =
    FileFailurePersistence::WithSource("proptest-regressions");
