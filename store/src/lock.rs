//! Cross-process locks on files (`flock`), so several berth processes can share one store.

use std::collections::HashSet;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::poison::unpoisoned;

/// An exclusive lock, released when dropped (or when the process dies).
///
/// `flock` does not tell threads of one process apart from other processes, so threads
/// first queue on an in-process lock of the same path: `on_wait` then only fires when
/// another process holds the lock, which is what "waiting for lock" should mean.
#[derive(Debug)]
pub struct FileLock {
    // Field order is drop order: the file (and its flock) closes before the in-process
    // claim is released, so a woken thread never finds the flock still held by us.
    _file: File,
    claim: Claim,
}

/// This process's claim on a lock path, released on drop (also when unwinding).
#[derive(Debug)]
struct Claim(PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        release_in_process(&self.0);
    }
}

/// Paths locked by this process.
static HELD: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
static RELEASED: Condvar = Condvar::new();

fn held() -> MutexGuard<'static, Option<HashSet<PathBuf>>> {
    unpoisoned(HELD.lock())
}

/// Marks `path` as held by this process, waiting while another thread holds it.
fn claim_in_process(path: &Path) -> Claim {
    let mut set = held();
    while set.get_or_insert_with(HashSet::new).contains(path) {
        set = unpoisoned(RELEASED.wait(set));
    }
    set.get_or_insert_with(HashSet::new).insert(path.to_owned());
    Claim(path.to_owned())
}

/// Marks `path` as held unless another thread holds it.
fn try_claim_in_process(path: &Path) -> Option<Claim> {
    held()
        .get_or_insert_with(HashSet::new)
        .insert(path.to_owned())
        .then(|| Claim(path.to_owned()))
}

fn release_in_process(path: &Path) {
    if let Some(set) = held().as_mut() {
        set.remove(path);
    }
    RELEASED.notify_all();
}

impl FileLock {
    /// Takes the exclusive lock on `path`, creating the file. If another process holds it,
    /// calls `on_wait` once (to say "waiting for lock on ...") and blocks.
    pub fn acquire(path: &Path, on_wait: impl FnOnce()) -> std::io::Result<Self> {
        let claim = claim_in_process(path);
        let file = open(path)?;
        Self::lock(file, claim, on_wait)
    }

    /// [`FileLock::acquire`] of a lock file that another process may delete (a staging
    /// folder's, which `Store::clean_tmp` removes once it holds the lock): after locking,
    /// the file must still be the one at `path`, else the lock is taken again on the file
    /// there now. Without this, a process that opened the file just before another one
    /// locked and deleted it would hold a lock on a deleted file, and its folder would look
    /// abandoned to the next `clean_tmp`, which would remove it while in use.
    pub fn acquire_linked(path: &Path, mut on_wait: impl FnMut()) -> std::io::Result<Self> {
        loop {
            let lock = Self::acquire(path, &mut on_wait)?;
            if lock.still_at_path()? {
                return Ok(lock);
            }
        }
    }

    /// Whether the file this lock holds is still the file at its path.
    fn still_at_path(&self) -> std::io::Result<bool> {
        use std::os::unix::fs::MetadataExt as _;
        let held = self._file.metadata()?;
        Ok(match std::fs::metadata(&self.claim.0) {
            Ok(now) => now.dev() == held.dev() && now.ino() == held.ino(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(e),
        })
    }

    /// Takes the exclusive lock on the folder `path` itself (which must exist), writing
    /// nothing into it: every process that locks the same folder, by any path to it, is
    /// excluded. If another process holds it, calls `on_wait` once and blocks.
    pub fn acquire_folder(path: &Path, on_wait: impl FnOnce()) -> std::io::Result<Self> {
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        let claim = claim_in_process(path);
        let file = fs_err::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::DIRECTORY.bits() as i32)
            .open(path)?
            .into_parts()
            .0;
        Self::lock(file, claim, on_wait)
    }

    fn lock(file: File, claim: Claim, on_wait: impl FnOnce()) -> std::io::Result<Self> {
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                on_wait();
                file.lock().map_err(|e| annotate(e, &claim.0))?;
            }
            Err(TryLockError::Error(e)) => return Err(annotate(e, &claim.0)),
        }
        Ok(Self { _file: file, claim })
    }

    /// Takes the lock if it is free, else returns `None` at once.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<Self>> {
        let Some(claim) = try_claim_in_process(path) else {
            return Ok(None);
        };
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { _file: file, claim })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(annotate(e, path)),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.claim.0
    }
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    Ok(fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?
        .into_parts()
        .0)
}

fn annotate(e: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{e} (locking `{}`)", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_linked_lock_is_on_the_file_at_its_path_and_knows_when_it_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("stage.lock");
        let lock = FileLock::acquire_linked(&path, || {}).expect("lock");
        assert!(lock.still_at_path().expect("stat"));
        std::fs::remove_file(&path).expect("unlink");
        assert!(!lock.still_at_path().expect("stat"), "deleted");
        std::fs::write(&path, "").expect("another file");
        assert!(!lock.still_at_path().expect("stat"), "replaced");
        drop(lock);
        // A lock on the file there now, not the deleted one.
        let again = FileLock::acquire_linked(&path, || {}).expect("lock");
        assert!(again.still_at_path().expect("stat"));
    }

    use super::*;

    #[test]
    fn a_held_lock_blocks_others_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("locks/x.lock");
        let held = FileLock::acquire(&path, || panic!("free lock must not wait")).expect("lock");
        assert!(FileLock::try_acquire(&path).expect("try").is_none());
        drop(held);
        assert!(FileLock::try_acquire(&path).expect("try").is_some());
    }

    #[test]
    fn a_folder_is_locked_by_any_path_to_it_and_nothing_is_written_in_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("target");
        fs_err::create_dir(&folder).expect("mkdir");
        std::os::unix::fs::symlink(&folder, dir.path().join("link")).expect("link");
        let held =
            FileLock::acquire_folder(&folder, || panic!("free lock must not wait")).expect("lock");
        // Another open file description of the same folder, as another process would have.
        let other = File::open(dir.path().join("link")).expect("open");
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(held);
        other.try_lock().expect("free once dropped");
        assert_eq!(fs_err::read_dir(&folder).expect("list").count(), 0);
    }

    #[test]
    fn threads_queue_without_reporting_a_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.lock");
        let counter = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let _lock = FileLock::acquire(&path, || {
                        panic!("threads of one process must not report waiting")
                    })
                    .expect("lock");
                    let seen = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    assert_eq!(
                        counter.fetch_sub(1, std::sync::atomic::Ordering::SeqCst),
                        seen + 1
                    );
                });
            }
        });
    }
}

/// A shared hold on a store, taken by everything that adds entries or relies on them
/// (`lock`, `sync`, a server starting a conversation); `gc` takes the same lock exclusively
/// and so never removes an entry a running sync is about to use. Threads of one process
/// share one `flock`: the first opens it, the last closes it.
#[derive(Debug)]
pub struct SharedUse {
    path: PathBuf,
}

/// Open shared holds per lock path in this process, with their counts.
/// `None` for a store this process cannot write and whose lock file does not exist yet
/// (see [`open_shared`]).
static SHARED: Mutex<Option<std::collections::HashMap<PathBuf, Holders>>> = Mutex::new(None);

/// How many holds of one path this process has, and the file whose `flock` they share.
type Holders = (usize, Option<File>);

/// Whether `e` says a file cannot be written there: a read-only file system, or a folder
/// this user may not write (a shared store, a container image's).
pub fn is_read_only(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    )
}

/// The lock file of a shared hold: made when missing; in a store this process cannot
/// write, opened for reading (`flock` needs no write access), or `None` when it does not
/// exist there, as nothing can have been taken from such a store by a `gc` of this user
/// either. Reads of a read-only store are served.
fn open_shared(path: &Path) -> std::io::Result<Option<File>> {
    match open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if is_read_only(&e) => match File::open(path) {
            Ok(file) => Ok(Some(file)),
            Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(_) => Err(e),
        },
        Err(e) => Err(e),
    }
}

impl SharedUse {
    /// Takes a shared hold on `path`; calls `on_wait` if an exclusive holder (a `gc`)
    /// makes it wait.
    pub fn acquire(path: &Path, on_wait: impl FnOnce()) -> std::io::Result<Self> {
        let mut holds = unpoisoned(SHARED.lock());
        let holds = holds.get_or_insert_with(Default::default);
        if let Some((count, _)) = holds.get_mut(path) {
            *count += 1;
        } else {
            let file = open_shared(path)?;
            if let Some(file) = &file {
                match file.try_lock_shared() {
                    Ok(()) => {}
                    Err(TryLockError::WouldBlock) => {
                        on_wait();
                        file.lock_shared().map_err(|e| annotate(e, path))?;
                    }
                    Err(TryLockError::Error(e)) => return Err(annotate(e, path)),
                }
            }
            holds.insert(path.to_owned(), (1, file));
        }
        Ok(Self {
            path: path.to_owned(),
        })
    }

    /// Takes a shared hold on `path` if no exclusive holder has it, else `None` at once.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<Self>> {
        let mut holds = unpoisoned(SHARED.lock());
        let holds = holds.get_or_insert_with(Default::default);
        if let Some((count, _)) = holds.get_mut(path) {
            *count += 1;
        } else {
            let file = open_shared(path)?;
            if let Some(file) = &file {
                match file.try_lock_shared() {
                    Ok(()) => {}
                    Err(TryLockError::WouldBlock) => return Ok(None),
                    Err(TryLockError::Error(e)) => return Err(annotate(e, path)),
                }
            }
            holds.insert(path.to_owned(), (1, file));
        }
        Ok(Some(Self {
            path: path.to_owned(),
        }))
    }
}

impl Drop for SharedUse {
    fn drop(&mut self) {
        let mut holds = unpoisoned(SHARED.lock());
        if let Some(holds) = holds.as_mut()
            && let Some((count, _)) = holds.get_mut(&self.path)
        {
            *count -= 1;
            if *count == 0 {
                holds.remove(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod shared_tests {
    use super::*;

    #[test]
    fn shared_holds_exclude_an_exclusive_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("gc.lock");
        let a = SharedUse::acquire(&path, || panic!("no exclusive holder")).expect("shared");
        let b = SharedUse::acquire(&path, || panic!("shares with itself")).expect("shared");
        // Another process's exclusive attempt is simulated with a fresh descriptor.
        let other = open(&path).expect("open");
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(a);
        assert!(
            matches!(other.try_lock(), Err(TryLockError::WouldBlock)),
            "still held by b"
        );
        drop(b);
        assert!(other.try_lock().is_ok(), "free once every hold is gone");
    }
}
