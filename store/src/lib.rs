//! berth's content-addressed store: NAR hashing compatible with `nix hash path`, entries
//! named `<nix32 hash>-<name>` that are complete and verified or absent, and the file locks
//! that let several processes share one store.
//!
//! This crate knows nothing of sources or the network: it hashes, stages, verifies, renames
//! and locks. The resolver fills it; the runtime reads it.
//!
//! # Where things are
//!
//! NAR serialisation and hashing, the store (`store/`: staging, commit, and the checked
//! lookups every reader uses in `checked.rs`), stat records (`record/`: the record format
//! and the walks that make it), verdicts (`store/verdicts.rs`: one line a reader concluded
//! from an entry's content, `meta-v1/<entry>.verdict`), pin records (`store/pins.rs`: each
//! pin a caller saw give an entry, `meta-v1/<entry>.pins/<digest>`, the pin an opaque
//! text), hostile-input NAR unpacking, wheels and agent environments' places, roots, gc and
//! verify, `flock` locks (on a lock file, or on a folder itself: `materialize`'s DIR),
//! locking a mutex whose holder panicked (`poison.rs`, for every crate), the test-only
//! fault hook.
//!
//! It uses the schema; it must not know about sources, git or the network.

pub mod fault;
mod gc;
mod lock;
pub mod nar;
pub mod nar_unpack;
mod nix;
mod poison;
mod record;
mod store;
mod views;
mod wheels;

pub use gc::{
    ARCHIVES_DIR, EntryStatus, Freed, Live, ROOTS_DIR, RUN_DIR, Root, disk_usage, format_size,
};
pub use lock::{FileLock, SharedUse, is_read_only};
pub use nar::{Exclude, NarError, NarWriter, Sha256Sink, hash_path, hash_path_excluding};
pub use nar_unpack::{NarUnpackError, UnpackLimits, Unpacked, unpack as unpack_nar};
pub use nix::{NIX_STORE_DIR, nix_store_path};
pub use poison::unpoisoned;
pub use record::{EntryTree, RECORDS_DIR, TreePath};
pub use store::{
    ENTRIES_DIR, GIT_DIR, LOCKS_DIR, Listed, Staging, Store, StoreEntry, StoreError, TMP_DIR,
    copy_tree, default_root, entry_name, pin_digest, remove_tree,
};
pub use views::{PluginView, VIEWS_DIR};
pub use wheels::{ENVS_DIR, WHEELS_DIR, WheelMismatch, hash_file, sha256_file};

#[cfg(test)]
mod tests;
