//! The group commit of a folder's conversations: one thread writes every start waiting,
//! makes the group durable with one `syncfs` and one `fsync` of the folder, then answers
//! each.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use uuid::Uuid;

use super::{LOCK_FILE, LockedText, META_FILE};

/// Group commit of a folder's conversations, on one thread: it takes every start waiting
/// (up to [`MAX_GROUP`]), writes each one's files into its staging folder, makes them all
/// durable with one `syncfs`, renames each into place, makes the renames durable with one
/// `fsync` of the folder, then answers each. One thread creating files in the folder also
/// spares the requests from contending for the folder's lock.
pub(super) struct GroupCommit {
    jobs: std::sync::mpsc::Sender<Job>,
}

/// How many conversations one group commits at most.
const MAX_GROUP: usize = 256;

pub(super) struct Job {
    pub(super) id: Uuid,
    pub(super) lock_text: Arc<LockedText>,
    pub(super) meta_text: Vec<u8>,
    pub(super) done: Done,
}

/// How a job's outcome reaches its request.
pub(super) enum Done {
    Blocking(std::sync::mpsc::SyncSender<std::io::Result<()>>),
    Async(tokio::sync::oneshot::Sender<std::io::Result<()>>),
}

impl Done {
    fn send(self, outcome: std::io::Result<()>) {
        // A request that stopped waiting (its client left) still has its conversation.
        let _ = match self {
            Self::Blocking(tx) => tx.send(outcome).map_err(drop),
            Self::Async(tx) => tx.send(outcome).map_err(drop),
        };
    }
}

fn copy_error(e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), e.to_string())
}

impl GroupCommit {
    pub(super) fn start(root: PathBuf) -> std::io::Result<Self> {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("berth-commit".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut group = vec![first];
                    while group.len() < MAX_GROUP {
                        match rx.try_recv() {
                            Ok(job) => group.push(job),
                            Err(_) => break,
                        }
                    }
                    commit_group(&root, group);
                }
            })?;
        Ok(Self { jobs: tx })
    }

    pub(super) fn submit(&self, job: Job) -> std::io::Result<()> {
        self.jobs
            .send(job)
            .map_err(|_| std::io::Error::other("the commit thread is gone"))
    }
}

fn commit_group(root: &Path, group: Vec<Job>) {
    // Everything relative to the folder's descriptor: one path lookup per group.
    let dir = match open_dir(root) {
        Ok(dir) => dir,
        Err(e) => {
            for job in group {
                job.done.send(Err(copy_error(&e)));
            }
            return;
        }
    };
    // Each job's staging folder, written; a job whose writes failed is answered at once.
    let mut written = Vec::with_capacity(group.len());
    for job in group {
        let tmp = format!(".tmp-{}", job.id);
        match write_staged_at(&dir, &tmp, &job.meta_text, &job.lock_text.text) {
            Ok(()) => written.push((job, tmp)),
            Err(e) => {
                remove_staging(&root.join(&tmp));
                job.done.send(Err(annotate(e, &root.join(&tmp))));
            }
        }
    }
    if written.is_empty() {
        return;
    }
    if let Err(e) = sync_filesystem(&dir) {
        let e = annotate(e, root);
        for (job, tmp) in written {
            remove_staging(&root.join(&tmp));
            job.done.send(Err(copy_error(&e)));
        }
        return;
    }
    let mut renamed = Vec::with_capacity(written.len());
    for (job, tmp) in written {
        match rustix::fs::renameat(&dir, tmp.as_str(), &dir, job.id.to_string().as_str()) {
            Ok(()) => renamed.push(job),
            Err(e) => {
                remove_staging(&root.join(&tmp));
                job.done.send(Err(annotate(e.into(), &root.join(&tmp))));
            }
        }
    }
    let outcome = rustix::fs::fsync(&dir).map_err(|e| annotate(e.into(), root));
    for job in renamed {
        job.done.send(match &outcome {
            Ok(()) => Ok(()),
            // Renamed but maybe not durable: the client is told it failed, and the
            // conversation is taken back.
            Err(e) => {
                let _ = std::fs::remove_dir_all(root.join(job.id.to_string()));
                Err(copy_error(e))
            }
        });
    }
}

fn annotate(e: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("`{}`: {e}", path.display()))
}

fn open_dir(path: &Path) -> std::io::Result<rustix::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        path,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| annotate(e.into(), path))
}

/// Writes a conversation's files into the staging folder `tmp` of `dir`, `meta.json`
/// last; durability is the group commit's.
fn write_staged_at(
    dir: &rustix::fd::OwnedFd,
    tmp: &str,
    meta_text: &[u8],
    lock_text: &str,
) -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Write;
    rustix::fs::mkdirat(dir, tmp, Mode::from_raw_mode(0o755))?;
    let staging = rustix::fs::openat(
        dir,
        tmp,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for (name, bytes) in [(LOCK_FILE, lock_text.as_bytes()), (META_FILE, meta_text)] {
        let fd = rustix::fs::openat(
            &staging,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        std::fs::File::from(fd).write_all(bytes)?;
    }
    Ok(())
}

fn remove_staging(tmp: &Path) {
    if let Err(cleanup) = std::fs::remove_dir_all(tmp)
        && cleanup.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(
            "could not remove the staging folder `{}`: {cleanup}",
            tmp.display()
        );
    }
}

/// Makes every file written on the filesystem of `dir` durable: one `syncfs` on Linux
/// (elsewhere, `sync`, which is the same for every filesystem).
fn sync_filesystem(dir: &rustix::fd::OwnedFd) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::fs::syncfs(dir).map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        rustix::fs::sync();
        Ok(())
    }
}
