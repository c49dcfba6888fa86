//! No build step: `syn` is a build-dependency only so that the proc-macros share one build.
fn main() {}
