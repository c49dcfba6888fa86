//! What the store's integration tests share: the workspace's rule for a tool that is
//! missing (one file, `tests/common/skip.rs`).

#[path = "../../../tests/it/common/skip.rs"]
mod skip;
pub use skip::require_or_skip;
