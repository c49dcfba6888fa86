//! The store's roots and what they keep alive, for `berth store gc`. A root is a lockfile
//! (a project's `plugins.lock`, registered by the CLI) or a `berth serve` data folder
//! (registered by [`crate::AppState::open`]), which keeps every conversation's lock. This
//! crate owns the data folder's layout, so reading it is here; it only reads files, and
//! needs no running server.

use std::path::{Path, PathBuf};

use berth_lockfile_schema::{Lock, LockError, parse_lock};
use berth_store::{Live, Root, Store, StoreError};
use uuid::Uuid;

use crate::conversations::{CONVERSATIONS_DIR, LOCK_FILE};

/// What the store's roots keep.
#[derive(Debug, Default)]
pub struct LiveRoots {
    /// Every entry, git cache, archive, wheel and agent environment a root's lock uses.
    pub live: Live,
    /// How many roots were read.
    pub roots: usize,
    /// Roots whose lockfile or data folder is gone: they keep nothing, and the caller may
    /// forget them ([`Store::remove_root`]).
    pub gone: Vec<Root>,
}

/// Why the roots could not be read. Nothing may be collected then: an unreadable root
/// might keep anything.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// Listing the roots failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A root that is a file is not a lockfile berth can read.
    #[error(
        "root `{}` is not a readable lockfile; fix it, or remove the link `{}` to stop it holding anything",
        .target.display(),
        .link.display()
    )]
    Lockfile {
        target: PathBuf,
        link: PathBuf,
        #[source]
        source: Box<ReadError>,
    },
    /// A conversation's lock in a data folder is unreadable.
    #[error("conversation lock `{}`", .path.display())]
    Conversation {
        path: PathBuf,
        #[source]
        source: Box<ReadError>,
    },
    /// A data folder's conversations could not be listed.
    #[error("could not list the conversations in `{}`", .path.display())]
    DataDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why one lockfile could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read (the message names it).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// It is not a valid lock.
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// Reads every root of `store` into the set of things `gc` must keep. Call it under the
/// store's exclusive lock ([`Store::gc_lock`]), so no writer adds a root meanwhile.
pub fn live_roots(store: &Store) -> Result<LiveRoots, RootError> {
    let mut out = LiveRoots::default();
    for root in store.roots()? {
        if !root.target.exists() {
            out.gone.push(root);
            continue;
        }
        out.roots += 1;
        if root.target.is_dir() {
            for lock in conversation_locks(&root.target)? {
                berth_resolver::mark_live(&mut out.live, &lock);
            }
        } else {
            let lock = read_lock(&root.target).map_err(|source| RootError::Lockfile {
                target: root.target.clone(),
                link: root.link.clone(),
                source: Box::new(source),
            })?;
            berth_resolver::mark_live(&mut out.live, &lock);
        }
    }
    mark_live_envs(store, &mut out.live);
    Ok(out)
}

/// The locks of the conversations stored under a `berth serve` data folder. Folders that
/// are not conversations (a creation or deletion in progress, or left by a crash) hold
/// nothing, and neither does a conversation deleted while this reads.
pub fn conversation_locks(data_dir: &Path) -> Result<Vec<Lock>, RootError> {
    let dir = data_dir.join(CONVERSATIONS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(RootError::DataDir { path: dir, source }),
    };
    let mut locks = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| RootError::DataDir {
            path: dir.clone(),
            source,
        })?;
        if Uuid::parse_str(&entry.file_name().to_string_lossy()).is_err() {
            continue;
        }
        let path = entry.path().join(LOCK_FILE);
        match read_lock(&path) {
            Ok(lock) => locks.push(lock),
            Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(RootError::Conversation {
                    path,
                    source: Box::new(source),
                });
            }
        }
    }
    Ok(locks)
}

fn read_lock(path: &Path) -> Result<Lock, ReadError> {
    let text = fs_err::read_to_string(path)?;
    Ok(parse_lock(&path.display().to_string(), &text)?)
}

/// Marks the agent environments (`envs-v1/`) to keep, once every live lock is marked: an
/// environment stays while every wheel it was built from (listed in its marker) is live,
/// since some live lock can still use it (its name also digests the interpreter, which
/// gc cannot see).
fn mark_live_envs(store: &Store, live: &mut Live) {
    let Ok(entries) = std::fs::read_dir(store.root().join(berth_store::ENVS_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let marker = entry.path().join(berth_runtime::agent_env::ENV_MARKER);
        let wheels: Option<Vec<String>> = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| serde_json::from_value(v["wheels"].clone()).ok());
        if let Some(wheels) = wheels
            && !wheels.is_empty()
            && wheels.iter().all(|w| live.wheels.contains(w))
        {
            live.envs
                .insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        CONVERSATIONS_DIR, LOCK_FILE, Path, Store, Uuid, conversation_locks, live_roots, parse_lock,
    };

    const LOCK: &str = "version = 1\n\n[[plugin]]\nname = \"p\"\nsource = \"./p\"\npath = \"./p\"\nhash = \"sha256-AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\"\n";

    fn conversation(data: &Path, name: &str, lock: &str) {
        let dir = data.join(CONVERSATIONS_DIR).join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(LOCK_FILE), lock).expect("write");
    }

    #[test]
    fn a_data_folder_keeps_its_conversations_and_nothing_in_progress() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Store::new(tmp.path().join("store"));
        let data = tmp.path().join("data");
        let id = Uuid::new_v4();
        conversation(&data, &id.to_string(), LOCK);
        // A creation or deletion in flight (or left by a crash), however broken, is no
        // conversation.
        conversation(&data, &format!(".tmp-{}", Uuid::new_v4()), "not a lock");
        conversation(&data, &format!(".trash-{}", Uuid::new_v4()), "not a lock");
        store.register_root(&data).expect("register");
        let roots = live_roots(&store).expect("readable");
        assert_eq!(roots.roots, 1);
        assert!(roots.gone.is_empty());
        let lock = parse_lock("lock", LOCK).expect("lock");
        let entry = format!("{}-p", lock.plugins[0].hash.to_nix32());
        assert_eq!(roots.live.entries.iter().collect::<Vec<_>>(), [&entry]);
    }

    #[test]
    fn a_broken_conversation_lock_stops_gc_and_names_the_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data = tmp.path().join("data");
        conversation(
            &data,
            &Uuid::new_v4().to_string(),
            "version = 1\n[[plugin]\n",
        );
        let error = conversation_locks(&data).expect_err("broken");
        assert!(
            error.to_string().starts_with("conversation lock `")
                && error.to_string().contains(LOCK_FILE),
            "{error}"
        );
    }

    #[test]
    fn a_root_that_is_gone_is_reported_and_one_that_is_not_a_lock_is_an_error() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Store::new(tmp.path().join("store"));
        let lockfile = tmp.path().join("plugins.lock");
        std::fs::write(&lockfile, LOCK).expect("write");
        store.register_root(&lockfile).expect("register");
        let gone = tmp.path().join("gone").join("plugins.lock");
        std::fs::create_dir_all(gone.parent().expect("parent")).expect("mkdir");
        std::fs::write(&gone, LOCK).expect("write");
        store.register_root(&gone).expect("register");
        std::fs::remove_dir_all(tmp.path().join("gone")).expect("rm");
        let roots = live_roots(&store).expect("readable");
        assert_eq!((roots.roots, roots.gone.len()), (1, 1));
        assert_eq!(roots.live.entries.len(), 1);
        std::fs::write(&lockfile, "not a lock").expect("write");
        let error = live_roots(&store).expect_err("unreadable root");
        assert!(
            error.to_string().contains("is not a readable lockfile"),
            "{error}"
        );
    }
}
