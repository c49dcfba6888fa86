//! Lock if needed, then sync: what `berth plugins lock`, `berth plugins sync` and a server
//! starting a conversation do, written once. The mode says what "if needed" means (the
//! CLI's `plugins lock`, `--locked` and `--frozen`, or none of them); `--offline` is
//! [`Settings::network`], which both steps obey. Where the lock is kept between runs is the
//! caller's, behind [`Lockfile`]. [`lock`] is the first step alone.

use std::convert::Infallible;

use berth_lockfile_schema::{Lock, Manifest, Staleness};
use berth_store::Store;

use super::{LocalRelock, LockOptions, SyncOutcome, Upgrade, lock_plugins, sync_plugins};
use crate::context::{LocalCheck, Reporter, Settings};
use crate::error::EntryError;

/// How [`lock_and_sync`] treats the lock before syncing it.
#[derive(Debug, Clone, Copy)]
pub enum LockMode<'a> {
    /// Lock when the lock is missing or out of date with `manifest`, keeping every pin that
    /// still satisfies its request, and write it (the default; a server given plugins).
    /// Local folders already locked keep their hash, so a changed one is reported by the
    /// sync instead of being locked silently. `manifest_label` names it in messages.
    Update {
        manifest: &'a Manifest,
        manifest_label: &'a str,
    },
    /// Lock afresh whether or not the lock is up to date: every pin checked again (local
    /// folders hashed again) and the pins `upgrade` covers moved. The new lock is handed
    /// to [`Lockfile::write`] even when it comes out the same (`berth plugins lock`).
    Relock {
        manifest: &'a Manifest,
        manifest_label: &'a str,
        upgrade: &'a Upgrade,
    },
    /// The lock must exist and be up to date with `manifest`; it is never written
    /// (`--locked`).
    Locked { manifest: &'a Manifest },
    /// The lock as it is, which must exist; no manifest is read, so local folders are
    /// trusted from the store (`--frozen`; a server given a lockfile).
    Frozen,
}

/// Where the lock lives between runs: the CLI's `plugins.lock`, or [`InMemoryLock`] (a
/// server's request, whose lock the server stores itself).
pub trait Lockfile {
    /// What reading or writing the lock fails with.
    type Error;
    /// Held from reading the lock to writing a new one, so writers of the same lock take
    /// turns: the second finds the lock up to date instead of resolving again.
    type Guard;

    /// Excludes other writers of this lock until the guard is dropped.
    fn guard(&self) -> Result<Self::Guard, Self::Error>;

    /// The lock, or `None` when there is none.
    fn read(&self) -> Result<Option<Lock>, Self::Error>;

    /// The lock about to be replaced. A damaged one may count as absent here, so that
    /// locking again repairs it; by default this is [`Lockfile::read`].
    fn read_to_replace(&self) -> Result<Option<Lock>, Self::Error> {
        self.read()
    }

    /// Keeps `lock`, which replaces `previous`.
    fn write(&self, previous: Option<&Lock>, lock: &Lock) -> Result<(), Self::Error>;
}

/// A lock held in memory only: reading gives it (if any), writing keeps nothing (the
/// caller keeps what [`lock_and_sync`] returns).
#[derive(Debug, Clone, Default)]
pub struct InMemoryLock(pub Option<Lock>);

impl Lockfile for InMemoryLock {
    type Error = Infallible;
    type Guard = ();

    fn guard(&self) -> Result<(), Infallible> {
        Ok(())
    }

    fn read(&self) -> Result<Option<Lock>, Infallible> {
        Ok(self.0.clone())
    }

    fn write(&self, _previous: Option<&Lock>, _lock: &Lock) -> Result<(), Infallible> {
        Ok(())
    }
}

/// What [`lock_and_sync`] did.
#[derive(Debug, Clone)]
pub struct Synced {
    /// The lock whose every entry is now in the store.
    pub lock: Lock,
    /// Whether the lock was used as it was, or made (and written) by this run.
    pub relock: Relock,
    /// What syncing added.
    pub sync: SyncOutcome,
    /// How many plugins locking added to the store first (to read what their servers
    /// run); `sync.added` does not count them again.
    pub stored_by_lock: usize,
}

/// Whether [`lock_and_sync`] made a new lock.
#[derive(Debug, Clone)]
pub enum Relock {
    /// The lock was up to date (or the mode never locks): used as it was.
    Unchanged,
    /// The lock was missing or stale: locked afresh and written ([`Lockfile::write`] was
    /// given the lock it replaces).
    Updated {
        /// How many entries were resolved afresh (the rest kept their pins).
        resolved: usize,
    },
}

/// Why [`lock_and_sync`] failed. The CLI words the first two after the flag given.
#[derive(Debug, thiserror::Error)]
pub enum LockAndSyncError<E> {
    /// There is no lock and the mode needs one (`Locked`, `Frozen`).
    #[error("there is no lock")]
    NoLock,
    /// The lock is out of date with the manifest (`Locked`).
    #[error("the lock is out of date with the manifest")]
    Stale(Vec<Staleness>),
    /// Locking failed: one error per failing entry.
    #[error("could not lock {} plugins", .0.len())]
    Lock(Vec<EntryError>),
    /// Syncing failed: one error per failing entry. A lock made by this run was written
    /// before the sync began.
    #[error("could not sync {} plugins", .0.len())]
    Sync(Vec<EntryError>),
    /// Reading or writing the lock failed.
    #[error("{0}")]
    Lockfile(E),
}

/// The lock [`lock`] settled on.
#[derive(Debug, Clone)]
pub struct Locked {
    /// The lock to sync.
    pub lock: Lock,
    /// Whether it was used as it was, or made (and written) by this run.
    pub relock: Relock,
    /// How many plugins locking added to the store (to read what their servers run).
    pub stored: usize,
}

/// Makes the lock current as `mode` allows (locking and writing it when it is missing or
/// stale in [`LockMode::Update`], always in [`LockMode::Relock`]), then makes every entry
/// of it present in the store, verified. A new lock is written before the sync starts, so
/// a failed sync leaves the lock current; the lockfile's guard is not held during the
/// sync.
pub fn lock_and_sync<F: Lockfile>(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    mode: LockMode<'_>,
    lockfile: &F,
) -> Result<Synced, LockAndSyncError<F::Error>> {
    let Locked {
        lock,
        relock,
        stored,
    } = self::lock(store, settings, reporter, mode, lockfile)?;
    let (manifest, local) = match mode {
        LockMode::Frozen => (None, LocalCheck::TrustStore),
        LockMode::Locked { manifest }
        | LockMode::Update { manifest, .. }
        | LockMode::Relock { manifest, .. } => (Some(manifest), LocalCheck::Rehash),
    };
    let sync = sync_plugins(store, settings, reporter, &lock, manifest, local)
        .map_err(LockAndSyncError::Sync)?;
    Ok(Synced {
        lock,
        relock,
        sync,
        stored_by_lock: stored,
    })
}

/// [`lock_and_sync`]'s first step: the lock as `mode` allows it, written when this run
/// made it. The CLI's `plugins lock` is this step alone.
pub fn lock<F: Lockfile>(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    mode: LockMode<'_>,
    lockfile: &F,
) -> Result<Locked, LockAndSyncError<F::Error>> {
    let read = |lock: Result<Option<Lock>, F::Error>| {
        lock.map_err(LockAndSyncError::Lockfile)?
            .ok_or(LockAndSyncError::NoLock)
    };
    let unchanged = |lock| Locked {
        lock,
        relock: Relock::Unchanged,
        stored: 0,
    };
    match mode {
        LockMode::Frozen => Ok(unchanged(read(lockfile.read())?)),
        LockMode::Locked { manifest } => {
            let lock = read(lockfile.read())?;
            let stale = super::staleness(&lock, manifest, "plugins.toml", settings);
            if !stale.is_empty() {
                return Err(LockAndSyncError::Stale(stale));
            }
            Ok(unchanged(lock))
        }
        LockMode::Update {
            manifest,
            manifest_label,
        } => {
            let options = LockOptions {
                upgrade: Upgrade::Nothing,
                manifest_label: manifest_label.to_owned(),
                local: LocalRelock::Keep,
            };
            relock(
                store,
                settings,
                reporter,
                manifest,
                &options,
                lockfile,
                IfCurrent::UseIt,
            )
        }
        LockMode::Relock {
            manifest,
            manifest_label,
            upgrade,
        } => {
            let options = LockOptions {
                upgrade: upgrade.clone(),
                manifest_label: manifest_label.to_owned(),
                local: LocalRelock::Rehash,
            };
            relock(
                store,
                settings,
                reporter,
                manifest,
                &options,
                lockfile,
                IfCurrent::LockAgain,
            )
        }
    }
}

/// What [`relock`] does with a lock already up to date with the manifest.
#[derive(Clone, Copy, PartialEq, Eq)]
enum IfCurrent {
    /// Use it as it is.
    UseIt,
    /// Lock again all the same.
    LockAgain,
}

/// Locks `manifest` with `options` and writes the lock, all under the lockfile's guard
/// (a lock already up to date is used as it is when `if_current` says so).
fn relock<F: Lockfile>(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    manifest: &Manifest,
    options: &LockOptions,
    lockfile: &F,
    if_current: IfCurrent,
) -> Result<Locked, LockAndSyncError<F::Error>> {
    let _guard = lockfile.guard().map_err(LockAndSyncError::Lockfile)?;
    let previous = lockfile
        .read_to_replace()
        .map_err(LockAndSyncError::Lockfile)?;
    let current = |lock: &Lock| {
        super::staleness(lock, manifest, &options.manifest_label, settings).is_empty()
    };
    let previous = match previous {
        Some(lock) if if_current == IfCurrent::UseIt && current(&lock) => {
            return Ok(Locked {
                lock,
                relock: Relock::Unchanged,
                stored: 0,
            });
        }
        other => other,
    };
    let mut outcome = lock_plugins(
        store,
        settings,
        reporter,
        manifest,
        previous.as_ref(),
        options,
    )
    .map_err(LockAndSyncError::Lock)?;
    let stored = super::pin_payloads(
        store,
        settings,
        reporter,
        Some(manifest),
        &mut outcome.lock,
        previous.as_ref(),
        &options.upgrade,
    )
    .map_err(LockAndSyncError::Lock)?;
    lockfile
        .write(previous.as_ref(), &outcome.lock)
        .map_err(LockAndSyncError::Lockfile)?;
    Ok(Locked {
        lock: outcome.lock,
        relock: Relock::Updated {
            resolved: outcome.resolved,
        },
        stored,
    })
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::path::Path;

    use berth_lockfile_schema::parse_manifest;

    use super::*;
    use berth_transport::extract::ArchiveLimits;

    use crate::context::{Network, SilentReporter};

    /// A lockfile in memory that counts its writes and keeps the lock each one replaced.
    #[derive(Default)]
    struct Recording {
        lock: RefCell<Option<Lock>>,
        writes: Cell<usize>,
        replaced: RefCell<Option<Lock>>,
    }

    impl Lockfile for Recording {
        type Error = Infallible;
        type Guard = ();

        fn guard(&self) -> Result<(), Infallible> {
            Ok(())
        }

        fn read(&self) -> Result<Option<Lock>, Infallible> {
            Ok(self.lock.borrow().clone())
        }

        fn write(&self, previous: Option<&Lock>, lock: &Lock) -> Result<(), Infallible> {
            self.writes.set(self.writes.get() + 1);
            *self.replaced.borrow_mut() = previous.cloned();
            *self.lock.borrow_mut() = Some(lock.clone());
            Ok(())
        }
    }

    fn settings(base_dir: &Path) -> Settings {
        Settings {
            github_url: crate::DEFAULT_GITHUB_URL.to_owned(),
            network: Network::Offline,
            jobs: 2,
            base_dir: base_dir.to_owned(),
            home_dir: None,
            archive_limits: ArchiveLimits::default(),
            index: Ok(berth_transport::registries::PackageIndex::given(
                crate::DEFAULT_INDEX_URL,
            )),
            shared: None,
            cancel: Default::default(),
            policy: None,
            substituters: Vec::new(),
            ref_ttl: std::time::Duration::ZERO,
            npm: Ok(Default::default()),
            payload_finder: None,
            release_age: Default::default(),
            sources: Default::default(),
            pins: Default::default(),
            npm_latest: false,
            signature_reader: None,
            require_registry_signatures: None,
        }
    }

    /// A project folder with local plugins `a` and `b`, and a store beside it.
    fn project() -> (tempfile::TempDir, Store, Settings) {
        let tmp = tempfile::tempdir().expect("tempdir");
        for name in ["a", "b"] {
            let skills = tmp.path().join(name).join("skills");
            std::fs::create_dir_all(&skills).expect("mkdir");
            std::fs::write(skills.join("x.md"), format!("{name}\n")).expect("write");
        }
        let store = Store::new(tmp.path().join("store"));
        let settings = settings(tmp.path());
        (tmp, store, settings)
    }

    fn manifest(sources: &[&str]) -> Manifest {
        let text: String = sources
            .iter()
            .map(|s| format!("[[plugin]]\nsource = \"{s}\"\n\n"))
            .collect();
        parse_manifest("plugins.toml", &text)
            .expect("valid manifest")
            .manifest
    }

    #[test]
    fn locked_and_frozen_need_a_lock_and_write_none() {
        let (_tmp, store, settings) = project();
        let manifest = manifest(&["./a"]);
        for mode in [
            LockMode::Locked {
                manifest: &manifest,
            },
            LockMode::Frozen,
        ] {
            let lockfile = Recording::default();
            let result = lock_and_sync(&store, &settings, &SilentReporter, mode, &lockfile);
            assert!(
                matches!(result, Err(LockAndSyncError::NoLock)),
                "{mode:?}: {result:?}"
            );
            assert_eq!(lockfile.writes.get(), 0);
        }
    }

    #[test]
    fn update_locks_and_writes_before_syncing_then_reuses_the_lock() {
        let (_tmp, store, settings) = project();
        let one = manifest(&["./a"]);
        let update = |manifest| LockMode::Update {
            manifest,
            manifest_label: "plugins.toml",
        };
        let lockfile = Recording::default();
        let first = lock_and_sync(&store, &settings, &SilentReporter, update(&one), &lockfile)
            .expect("locks and syncs");
        assert!(matches!(first.relock, Relock::Updated { resolved: 1 }));
        assert_eq!(*lockfile.replaced.borrow(), None);
        assert_eq!(first.sync.added, 1);
        assert_eq!(lockfile.writes.get(), 1);
        assert_eq!(lockfile.lock.borrow().as_ref(), Some(&first.lock));

        // Up to date: used as it is, nothing written or added.
        let again = lock_and_sync(&store, &settings, &SilentReporter, update(&one), &lockfile)
            .expect("syncs");
        assert!(matches!(again.relock, Relock::Unchanged));
        assert_eq!((again.sync.added, lockfile.writes.get()), (0, 1));

        // A new entry: `Locked` refuses the stale lock, `Update` locks it and keeps `a`'s pin.
        let two = manifest(&["./a", "./b"]);
        let stale = lock_and_sync(
            &store,
            &settings,
            &SilentReporter,
            LockMode::Locked { manifest: &two },
            &lockfile,
        );
        assert!(
            matches!(&stale, Err(LockAndSyncError::Stale(reasons)) if reasons.len() == 1),
            "{stale:?}"
        );
        let grown = lock_and_sync(&store, &settings, &SilentReporter, update(&two), &lockfile)
            .expect("locks the new entry");
        assert!(
            matches!(grown.relock, Relock::Updated { resolved: 1 }),
            "{grown:?}"
        );
        assert_eq!(lockfile.replaced.borrow().as_ref(), Some(&first.lock));
        assert_eq!(grown.lock.plugins[0], first.lock.plugins[0]);
        assert_eq!((grown.sync.added, lockfile.writes.get()), (1, 2));
        // `Frozen` takes the written lock as it is.
        let frozen = lock_and_sync(
            &store,
            &settings,
            &SilentReporter,
            LockMode::Frozen,
            &lockfile,
        )
        .expect("frozen");
        assert_eq!(frozen.lock, grown.lock);
    }
}
