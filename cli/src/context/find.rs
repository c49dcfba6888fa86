//! Where the project is when `--manifest` is not given: found upward, as Cargo finds
//! `Cargo.toml`.

use std::path::PathBuf;

/// The manifest's file name, looked for in the current folder and the folders above it.
pub const MANIFEST_FILE: &str = "plugins.toml";

/// `plugins.toml` in the current folder, else in the nearest folder above it that has one
/// (as Cargo finds `Cargo.toml`), written relative (`../../plugins.toml`) so messages stay
/// short; `plugins.toml` when no folder has one, so what is missing is named where it
/// would go.
pub fn find_manifest() -> PathBuf {
    let here = PathBuf::from(MANIFEST_FILE);
    let Ok(cwd) = std::env::current_dir() else {
        return here;
    };
    cwd.ancestors()
        .enumerate()
        .find(|(_, dir)| dir.join(MANIFEST_FILE).is_file())
        .map_or(here, |(up, _)| {
            let mut path: PathBuf = std::iter::repeat_n("..", up).collect();
            path.push(MANIFEST_FILE);
            path
        })
}
