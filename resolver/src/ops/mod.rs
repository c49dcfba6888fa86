//! The operations over a manifest: `lock` (with its dependency settling), `sync`,
//! `verify`, reading a policy and what it extends, the lock-then-sync workflow the CLI and the server share, and what a lock
//! keeps alive for `gc`. They loop over entries and reach a source kind only through
//! [`crate::sources`].

mod age;
mod dependencies;
mod live;
mod lock;
mod objects;
mod pin;
mod policy;
mod sync;
mod verify;
mod workflow;

pub use age::staleness;
pub use live::mark_live;
pub use lock::{LocalRelock, LockOptions, LockOutcome, Upgrade, lock_plugins};
pub use objects::{ObjectsOutcome, git_objects};
pub use pin::{StoredQuietly, pin_payloads};
pub use policy::{PolicyLoadError, load_policy};
pub use sync::{SyncOutcome, sync_plugins};
pub use verify::{VerifyOutcome, VerifyStatus, verify_agent, verify_payloads, verify_plugins};
pub use workflow::{
    InMemoryLock, LockAndSyncError, LockMode, Locked, Lockfile, Relock, Synced, lock, lock_and_sync,
};
