//! Git trees read straight from objects: the plugin folder (symlinks followed), its NAR
//! hash, the files the runtime will skip, and the export into staging.

use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use berth_lockfile_schema::Sha256Hash;
use berth_store::{NarWriter, Sha256Sink};
use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;

use crate::error::ResolveError;
use berth_transport::tree_path::{self, Node};

use super::{CacheError, GitDb};

impl GitDb {
    /// The tree of `commit`, or of its `subdir` folder, and that folder's path with every
    /// symlink resolved (`""`: the whole repository). A `subdir` that is, or passes through,
    /// a symlink to a folder of the repository is followed, as the OpenHands SDK follows it.
    pub(crate) fn plugin_tree(
        &self,
        commit: ObjectId,
        subdir: Option<&str>,
    ) -> Result<(ObjectId, String), ResolveError> {
        let cache_error = |e: gix::Error| ResolveError::Cache {
            path: self.path.clone(),
            source: Box::new(CacheError(e)),
        };
        let commit_obj = self.repo.find_commit(commit).map_err(cache_error)?;
        let tree = commit_obj.tree().map_err(cache_error)?;
        let Some(subdir) = subdir else {
            return Ok((tree.id, String::new()));
        };
        let view = GitTree {
            db: self,
            root: tree.id,
        };
        match tree_path::resolve_dir(&view, subdir)? {
            Ok(found) => Ok((found.dir, found.real_path)),
            Err(problem) => Err(ResolveError::RepoPath {
                repo_path: subdir.to_owned(),
                rev: commit.to_string(),
                problem: Box::new(problem),
            }),
        }
    }

    /// A tree of this database as a [`tree_path::Tree`], to follow symlinks in.
    pub(crate) fn tree_view(&self, root: ObjectId) -> GitTree<'_> {
        GitTree { db: self, root }
    }

    /// A regular file at `rel` inside `tree`, or `None`.
    pub(crate) fn read_file(
        &self,
        tree: ObjectId,
        rel: &str,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, ResolveError> {
        let cache_error = |e: gix::Error| ResolveError::Cache {
            path: self.path.clone(),
            source: Box::new(CacheError(e)),
        };
        let tree = self.repo.find_tree(tree).map_err(cache_error)?;
        let Some(entry) = tree.lookup_entry_by_path(rel).map_err(cache_error)? else {
            return Ok(None);
        };
        if !matches!(
            entry.mode().kind(),
            EntryKind::Blob | EntryKind::BlobExecutable
        ) {
            return Ok(None);
        }
        // The size is in the object's header: a huge blob is refused before it is inflated.
        let size = self
            .repo
            .find_header(entry.object_id())
            .map_err(cache_error)?
            .size();
        if size > limit {
            return Err(ResolveError::FileTooLarge {
                file: format!("`{rel}` (git blob {})", entry.object_id()),
                size,
                limit,
            });
        }
        let blob = self
            .repo
            .find_blob(entry.object_id())
            .map_err(cache_error)?;
        Ok(Some(blob.data.clone()))
    }

    /// The NAR hash of a tree, computed from git objects without writing files, with the
    /// submodules left out of it (the export leaves them out too) and the files the
    /// runtime will skip.
    pub(crate) fn nar_hash(&self, tree: ObjectId, rev: ObjectId) -> Result<TreeHash, ResolveError> {
        let mut sink = Sha256Sink::default();
        let (submodules, found) = self.write_nar(tree, rev, &mut sink)?;
        Ok(TreeHash {
            hash: sink.finish(),
            submodules,
            skipped: found.judge(&self.tree_view(tree))?,
        })
    }

    /// [`GitDb::nar_hash`], keeping the NAR itself when it is no larger than `cap` bytes:
    /// the tree is then read from git once, whether it is later stored or not.
    pub(crate) fn nar_hash_keeping(
        &self,
        tree: ObjectId,
        rev: ObjectId,
        cap: usize,
    ) -> Result<(TreeHash, Option<Vec<u8>>), ResolveError> {
        let mut out = Keeping {
            sink: Sha256Sink::default(),
            kept: Some(Vec::new()),
            cap,
        };
        let (submodules, found) = self.write_nar(tree, rev, &mut out)?;
        let hashed = TreeHash {
            hash: out.sink.finish(),
            submodules,
            skipped: found.judge(&self.tree_view(tree))?,
        };
        Ok((hashed, out.kept))
    }

    /// Serialises a tree as a NAR into `out`, noting what the runtime will skip. Returns
    /// the submodules left out, and what the walk found.
    fn write_nar(
        &self,
        tree: ObjectId,
        rev: ObjectId,
        out: &mut dyn Write,
    ) -> Result<(Vec<String>, crate::skipped::Found), ResolveError> {
        let mut found = crate::skipped::Found::default();
        let mut nar = NarWriter::new(BufWriter::with_capacity(64 * 1024, out))?;
        // The path of the entry being written, for the skipped files.
        let mut path: Vec<Vec<u8>> = Vec::new();
        let shown = |path: &[Vec<u8>]| String::from_utf8_lossy(&path.join(&b'/')).into_owned();
        let submodules = self.walk(tree, rev, &[], &mut |event| match event {
            Event::Dir(_) => nar.begin_directory(),
            Event::EndDir => nar.end_directory(),
            Event::Entry(name) => {
                path.push(name.to_vec());
                nar.entry(name)
            }
            Event::EndEntry => {
                path.pop();
                nar.end_entry()
            }
            Event::File {
                executable, data, ..
            } => {
                found.file(&shown(&path), data.len() as u64);
                nar.file(executable, data.len() as u64, &mut &data[..])
            }
            Event::Symlink { target, .. } => {
                found.link(shown(&path), target);
                nar.symlink(target)
            }
        })?;
        nar.finish()?.flush()?;
        Ok((submodules, found))
    }

    /// Writes a tree into `dest` (an empty staging folder): folders, files with their
    /// execute bit, symlinks. Returns the paths of submodules that were skipped.
    pub(crate) fn export(
        &self,
        tree: ObjectId,
        rev: ObjectId,
        dest: &Path,
    ) -> Result<Vec<String>, ResolveError> {
        let mut current = dest.to_owned();
        self.walk(tree, rev, &[], &mut |event| {
            match event {
                Event::Dir(None) | Event::EndEntry => {}
                Event::Dir(Some(_)) => fs_err::create_dir(&current)?,
                Event::Entry(name) => current.push(std::ffi::OsStr::from_bytes(name)),
                Event::EndDir => {}
                Event::File { executable, data } => {
                    // Created with the mode the store gives it (read-only), so committing
                    // the entry has nothing to change on it.
                    use fs_err::os::unix::fs::OpenOptionsExt as _;
                    use std::io::Write as _;
                    fs_err::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(if executable { 0o555 } else { 0o444 })
                        .open(&current)?
                        .write_all(data)?;
                    berth_store::fault::pause_at(berth_store::fault::GIT_EXPORT_MID);
                }
                Event::Symlink { target } => {
                    fs_err::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), &current)?;
                }
            }
            if matches!(event, Event::EndEntry) {
                current.pop();
            }
            Ok(())
        })
    }

    /// The data of object `id`, which must be a `want`: read straight from its loose file
    /// in a repository read in place (see `loose.rs`), else through gix.
    fn object(&self, id: ObjectId, want: gix::objs::Kind) -> Result<Vec<u8>, ResolveError> {
        let cache = |source: Box<dyn std::error::Error + Send + Sync>| ResolveError::Cache {
            path: self.path.clone(),
            source,
        };
        if self.in_place {
            let objects = self.repo.objects.store_ref().path();
            let read = super::loose::read(objects, &id);
            match read.map_err(|e| cache(Box::new(e)))? {
                Some((kind, data)) if kind == want => return Ok(data),
                Some((kind, _)) => {
                    let problem = format!("object {id} is a {kind}, not a {want}");
                    return Err(cache(problem.into()));
                }
                None => {}
            }
        }
        let object = self
            .repo
            .find_object(id)
            .map_err(|e| cache(Box::new(CacheError(e))))?;
        if object.kind != want {
            let problem = format!("object {id} is a {}, not a {want}", object.kind);
            return Err(cache(problem.into()));
        }
        Ok(object.detach().data)
    }

    /// Walks a tree depth-first with entries in NAR order (ascending bytes). Returns the
    /// skipped submodules.
    fn walk(
        &self,
        tree: ObjectId,
        rev: ObjectId,
        prefix: &[u8],
        visit: &mut dyn FnMut(Event<'_>) -> std::io::Result<()>,
    ) -> Result<Vec<String>, ResolveError> {
        let mut skipped = Vec::new();
        let tree_data = self.object(tree, gix::objs::Kind::Tree)?;
        let decoded =
            gix::objs::TreeRef::from_bytes(&tree_data, self.repo.object_hash()).map_err(|e| {
                ResolveError::Cache {
                    path: self.path.clone(),
                    source: Box::new(e),
                }
            })?;
        let mut entries: Vec<(BString, EntryKind, ObjectId)> = decoded
            .entries
            .iter()
            .map(|e| (e.filename.to_owned(), e.mode.kind(), e.oid.to_owned()))
            .collect();
        drop(decoded);
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        visit(Event::Dir(if prefix.is_empty() { None } else { Some(()) }))?;
        for (name, kind, oid) in entries {
            let full = join(prefix, &name);
            if name.is_empty()
                || name.as_bytes() == b"."
                || name.as_bytes() == b".."
                || name.contains(&b'/')
                || name.contains(&0)
            {
                return Err(ResolveError::UnsafeTree {
                    rev: rev.to_string(),
                    path: String::from_utf8_lossy(&full).into_owned(),
                });
            }
            // `git clone` refuses such a tree; berth refuses it before anything is written.
            if berth_store::nar::is_git_name(&name) {
                return Err(ResolveError::GitName {
                    path: String::from_utf8_lossy(&full).into_owned(),
                    rev: rev.to_string(),
                });
            }
            visit(Event::Entry(&name))?;
            if kind == EntryKind::Commit {
                // A submodule becomes an empty folder, as `git archive` and a checkout
                // without submodules leave it (and as Nix's git fetcher hashes it).
                skipped.push(String::from_utf8_lossy(&full).into_owned());
                visit(Event::Dir(Some(())))?;
                visit(Event::EndDir)?;
                visit(Event::EndEntry)?;
                continue;
            }
            match kind {
                EntryKind::Tree => {
                    skipped.extend(self.walk(oid, rev, &full, visit)?);
                }
                EntryKind::Blob | EntryKind::BlobExecutable => {
                    let data = self.object(oid, gix::objs::Kind::Blob)?;
                    visit(Event::File {
                        executable: kind == EntryKind::BlobExecutable,
                        data: &data,
                    })?;
                }
                EntryKind::Link => {
                    let target = self.object(oid, gix::objs::Kind::Blob)?;
                    visit(Event::Symlink { target: &target })?;
                }
                EntryKind::Commit => unreachable!("submodules were handled above"),
            }
            visit(Event::EndEntry)?;
        }
        visit(Event::EndDir)?;
        Ok(skipped)
    }
}

/// Hashes what is written, and keeps it while it stays within `cap` bytes.
struct Keeping {
    sink: Sha256Sink,
    kept: Option<Vec<u8>>,
    cap: usize,
}

impl Write for Keeping {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sink.write_all(buf)?;
        if let Some(kept) = &mut self.kept {
            if kept.len() + buf.len() > self.cap {
                self.kept = None;
            } else {
                kept.extend_from_slice(buf);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A git tree's NAR hash and what hashing it found.
pub(crate) struct TreeHash {
    pub hash: Sha256Hash,
    /// Submodules, hashed as empty folders (berth does not fetch them).
    pub submodules: Vec<String>,
    /// Files the runtime will skip.
    pub skipped: Vec<crate::skipped::Skipped>,
}

/// A git tree seen through [`tree_path::Tree`]: folders are tree ids, symlinks are blobs
/// (mode 120000) whose content is the target.
pub(crate) struct GitTree<'a> {
    db: &'a GitDb,
    root: ObjectId,
}

impl tree_path::Tree for GitTree<'_> {
    type Dir = ObjectId;
    type Error = ResolveError;

    fn root(&self) -> ObjectId {
        self.root
    }

    fn child(&self, dir: &ObjectId, name: &[u8]) -> Result<Node<ObjectId>, ResolveError> {
        let cache_error = |e: gix::Error| ResolveError::Cache {
            path: self.db.path.clone(),
            source: Box::new(CacheError(e)),
        };
        let tree = self.db.repo.find_tree(*dir).map_err(cache_error)?;
        let Some(entry) = tree.find_entry(name) else {
            return Ok(Node::Missing);
        };
        Ok(match entry.mode().kind() {
            EntryKind::Tree => Node::Dir(entry.object_id()),
            EntryKind::Blob | EntryKind::BlobExecutable => Node::File,
            EntryKind::Commit => Node::Submodule,
            EntryKind::Link => {
                let blob = self
                    .db
                    .repo
                    .find_blob(entry.object_id())
                    .map_err(cache_error)?;
                Node::Link(blob.data.clone())
            }
        })
    }
}

enum Event<'a> {
    /// A folder starts; `None` for the root, which already exists when exporting.
    Dir(Option<()>),
    EndDir,
    Entry(&'a [u8]),
    EndEntry,
    File {
        executable: bool,
        data: &'a [u8],
    },
    Symlink {
        target: &'a [u8],
    },
}

fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    let mut full = prefix.to_vec();
    if !full.is_empty() {
        full.push(b'/');
    }
    full.extend_from_slice(name);
    full
}
