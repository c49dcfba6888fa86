//! Unpacking archives safely by construction: every entry is checked before anything is
//! written, nothing is ever written through a symlink, and size and entry-count limits stop
//! a bomb early.

mod error;

pub use error::{ExtractError, UnsafeEntry};

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// How much an archive may hold. The defaults stop a zip bomb long before the disk fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Bytes of the download, and bytes of all files unpacked.
    pub max_bytes: u64,
    /// Entries (files, folders and links).
    pub max_entries: u64,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        Self {
            max_bytes: 256 * 1024 * 1024,
            max_entries: 20_000,
        }
    }
}

/// A limit variable that does not hold a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}={value}` is not a size; write a number such as `512M` or `20000`")]
pub struct LimitsError {
    /// The variable.
    pub name: &'static str,
    /// What it holds.
    pub value: String,
}

impl ArchiveLimits {
    /// The limits from `BERTH_ARCHIVE_MAX_BYTES` and `BERTH_ARCHIVE_MAX_ENTRIES` (a number,
    /// optionally with `K`, `M` or `G`), each defaulting when unset. The CLI and the server
    /// read them the same way.
    pub fn from_env() -> Result<Self, LimitsError> {
        let defaults = Self::default();
        Ok(Self {
            max_bytes: size_from_env("BERTH_ARCHIVE_MAX_BYTES")?.unwrap_or(defaults.max_bytes),
            max_entries: size_from_env("BERTH_ARCHIVE_MAX_ENTRIES")?
                .unwrap_or(defaults.max_entries),
        })
    }
}

fn size_from_env(name: &'static str) -> Result<Option<u64>, LimitsError> {
    let Ok(text) = std::env::var(name) else {
        return Ok(None);
    };
    let text = text.trim();
    let (digits, scale) = match text.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&text[..i], 1u64 << 10),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&text[..i], 1 << 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .map(|n| Some(n.saturating_mul(scale)))
        .map_err(|_| LimitsError {
            name,
            value: text.to_owned(),
        })
}

pub use berth_lockfile_schema::ArchiveFormat;

/// Unpacks `archive` (a file of `format`) into the empty folder `dest`.
pub fn extract(
    archive: &Path,
    format: ArchiveFormat,
    dest: &Path,
    limits: ArchiveLimits,
) -> Result<(), ExtractError> {
    let mut out = Extractor {
        root: dest.to_owned(),
        limits,
        entries: 0,
        bytes: 0,
        files: Vec::new(),
    };
    let file = fs_err::File::open(archive)?;
    match format {
        ArchiveFormat::Zip => extract_zip(file, &mut out),
        ArchiveFormat::TarGz => extract_tar(
            flate2::read::GzDecoder::new(std::io::BufReader::new(file)),
            &mut out,
        ),
        ArchiveFormat::Tar => extract_tar(std::io::BufReader::new(file), &mut out),
    }
}

fn extract_tar(reader: impl Read, out: &mut Extractor) -> Result<(), ExtractError> {
    let mut archive = tar::Archive::new(reader);
    let damaged = |e: std::io::Error| damaged_at(None, e);
    for entry in archive.entries().map_err(damaged)? {
        let mut entry = entry.map_err(damaged)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
            || kind.is_gnu_longlink()
        {
            continue;
        }
        out.count(&name)?;
        if kind.is_dir() && is_root(&name) {
            continue; // `./`, as `tar -C dir .` writes it: the folder itself
        }
        let rel = safe_relative(&name)?;
        if kind.is_dir() {
            out.dir(&name, &rel)?;
        } else if kind.is_file() || kind.is_contiguous() || kind.is_gnu_sparse() {
            // A GNU sparse file (`tar -S`) is a regular file whose holes the reader fills.
            let executable = entry.header().mode().map_err(damaged)? & 0o100 != 0;
            let size = entry.size();
            out.file(&name, &rel, executable, size, &mut entry)?;
        } else if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(damaged)?
                .ok_or_else(|| unsafe_entry(&name, UnsafeEntry::SymlinkWithoutTarget))?
                .into_owned();
            out.symlink(&name, &rel, &target)?;
        } else if kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(damaged)?
                .ok_or_else(|| unsafe_entry(&name, UnsafeEntry::HardLinkWithoutTarget))?;
            let target = safe_relative(&target.to_string_lossy())
                .map_err(|_| unsafe_entry(&name, UnsafeEntry::HardLinkOutside))?;
            out.hard_link(&name, &rel, &target)?;
        } else {
            return Err(unsafe_entry(&name, UnsafeEntry::Special));
        }
    }
    Ok(())
}

fn extract_zip(file: fs_err::File, out: &mut Extractor) -> Result<(), ExtractError> {
    let damaged = |e: zip::result::ZipError| damaged_at(None, e);
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(damaged)?;
    if archive.len() as u64 > out.limits.max_entries {
        return Err(ExtractError::TooManyEntries {
            count: archive.len() as u64,
            limit: out.limits.max_entries,
        });
    }
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(damaged)?;
        let name = entry.name().map_err(damaged)?.into_owned();
        out.count(&name)?;
        if entry.is_dir() && is_root(&name) {
            continue;
        }
        let rel = safe_relative(&name)?;
        if entry.is_dir() {
            out.dir(&name, &rel)?;
        } else if entry.is_symlink() {
            let mut target = String::new();
            (&mut entry)
                .take(4096)
                .read_to_string(&mut target)
                .map_err(|e| damaged_at(Some(&name), e))?;
            out.symlink(&name, &rel, Path::new(&target))?;
        } else {
            let mode = entry.unix_mode();
            if let Some(mode) = mode {
                let kind = mode & 0o170000;
                if kind != 0 && kind != 0o100000 {
                    return Err(unsafe_entry(&name, UnsafeEntry::Special));
                }
            }
            let executable = mode.is_some_and(|m| m & 0o100 != 0);
            let size = entry.size();
            out.file(&name, &rel, executable, size, &mut entry)?;
        }
    }
    Ok(())
}

/// `.`, `./` and the like: the archive's own top folder.
fn is_root(name: &str) -> bool {
    Path::new(name)
        .components()
        .all(|c| matches!(c, Component::CurDir))
}

fn unsafe_entry(entry: &str, why: UnsafeEntry) -> ExtractError {
    ExtractError::Unsafe {
        entry: entry.to_owned(),
        why,
    }
}

fn damaged_at(
    entry: Option<&str>,
    source: impl std::error::Error + Send + Sync + 'static,
) -> ExtractError {
    ExtractError::Damaged {
        entry: entry.map(str::to_owned),
        source: Box::new(source),
    }
}

/// The entry's path as plain relative components; absolute paths and `..` are refused.
fn safe_relative(name: &str) -> Result<PathBuf, ExtractError> {
    if name.contains('\0') || name.contains('\\') {
        return Err(unsafe_entry(name, UnsafeEntry::NulOrBackslash));
    }
    let mut out = PathBuf::new();
    for part in Path::new(name).components() {
        match part {
            Component::Normal(p) if berth_store::nar::is_git_name(p.as_encoded_bytes()) => {
                return Err(unsafe_entry(name, UnsafeEntry::GitName));
            }
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(unsafe_entry(name, UnsafeEntry::Absolute));
            }
            Component::ParentDir => return Err(unsafe_entry(name, UnsafeEntry::DotDot)),
        }
    }
    if out.as_os_str().is_empty() {
        return Err(unsafe_entry(name, UnsafeEntry::Empty));
    }
    Ok(out)
}

struct Extractor {
    root: PathBuf,
    limits: ArchiveLimits,
    entries: u64,
    bytes: u64,
    files: Vec<PathBuf>,
}

impl Extractor {
    fn count(&mut self, name: &str) -> Result<(), ExtractError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(ExtractError::EntryLimit {
                limit: self.limits.max_entries,
                at: name.to_owned(),
            });
        }
        Ok(())
    }

    /// Creates the parent folders of `rel`, refusing to pass through a symlink.
    fn parent_of(&self, name: &str, rel: &Path) -> Result<PathBuf, ExtractError> {
        let mut current = self.root.clone();
        if let Some(parent) = rel.parent() {
            for part in parent.components() {
                current.push(part);
                match std::fs::symlink_metadata(&current) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        return Err(unsafe_entry(name, UnsafeEntry::ThroughSymlink));
                    }
                    Ok(meta) if meta.is_dir() => {}
                    Ok(_) => return Err(unsafe_entry(name, UnsafeEntry::InsideFile)),
                    Err(_) => fs_err::create_dir(&current)?,
                }
            }
        }
        Ok(current)
    }

    fn target(&self, name: &str, rel: &Path) -> Result<PathBuf, ExtractError> {
        let parent = self.parent_of(name, rel)?;
        let target = parent.join(rel.file_name().expect("a relative path has a last part"));
        if let Ok(meta) = std::fs::symlink_metadata(&target) {
            if meta.is_dir() && !meta.file_type().is_symlink() {
                return Err(unsafe_entry(name, UnsafeEntry::ReplacesFolder));
            }
            fs_err::remove_file(&target)?;
        }
        Ok(target)
    }

    fn dir(&mut self, name: &str, rel: &Path) -> Result<(), ExtractError> {
        let parent = self.parent_of(name, rel)?;
        let path = parent.join(rel.file_name().expect("a relative path has a last part"));
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() && !meta.file_type().is_symlink() => Ok(()),
            Ok(_) => Err(unsafe_entry(name, UnsafeEntry::FolderOverFile)),
            Err(_) => Ok(fs_err::create_dir(&path)?),
        }
    }

    fn file(
        &mut self,
        name: &str,
        rel: &Path,
        executable: bool,
        declared: u64,
        content: &mut dyn Read,
    ) -> Result<(), ExtractError> {
        let too_big = |limit: u64| ExtractError::SizeLimit {
            limit,
            at: name.to_owned(),
            link_to: None,
        };
        if self.bytes.saturating_add(declared) > self.limits.max_bytes {
            return Err(too_big(self.limits.max_bytes));
        }
        let target = self.target(name, rel)?;
        let mut file = fs_err::File::create(&target)?;
        // The declared size may lie: count what is really written, one byte past the limit.
        let allowance = self.limits.max_bytes - self.bytes;
        let written = std::io::copy(&mut content.take(allowance + 1), &mut file)
            .map_err(|e| damaged_at(Some(name), e))?;
        if written > allowance {
            return Err(too_big(self.limits.max_bytes));
        }
        self.bytes += written;
        let mode = if executable { 0o755 } else { 0o644 };
        fs_err::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
        self.files.push(rel.to_owned());
        Ok(())
    }

    fn symlink(&mut self, name: &str, rel: &Path, target: &Path) -> Result<(), ExtractError> {
        if target.is_absolute() {
            return Err(unsafe_entry(
                name,
                UnsafeEntry::AbsoluteSymlink(target.to_owned()),
            ));
        }
        // Resolve the target lexically from the link's folder: it must stay inside.
        let mut depth: i64 = rel.components().count() as i64 - 1;
        for part in target.components() {
            match part {
                Component::ParentDir => depth -= 1,
                Component::Normal(_) => depth += 1,
                _ => {}
            }
            if depth < 0 {
                return Err(unsafe_entry(
                    name,
                    UnsafeEntry::SymlinkLeaves(target.to_owned()),
                ));
            }
        }
        let path = self.target(name, rel)?;
        fs_err::os::unix::fs::symlink(target, &path)?;
        Ok(())
    }

    fn hard_link(&mut self, name: &str, rel: &Path, target: &Path) -> Result<(), ExtractError> {
        if !self.files.iter().any(|f| f == target) {
            return Err(unsafe_entry(
                name,
                UnsafeEntry::HardLinkNotBefore(target.to_owned()),
            ));
        }
        let source = self.root.join(target);
        // A hard link becomes a copy (a NAR has no hard links), so its bytes count: else a
        // small archive of many links to one large file would unpack far past the limit.
        let size = fs_err::metadata(&source)?.len();
        if self.bytes.saturating_add(size) > self.limits.max_bytes {
            return Err(ExtractError::SizeLimit {
                limit: self.limits.max_bytes,
                at: name.to_owned(),
                link_to: Some(target.to_owned()),
            });
        }
        let path = self.target(name, rel)?;
        fs_err::copy(&source, &path)?;
        self.bytes += size;
        self.files.push(rel.to_owned());
        Ok(())
    }
}

/// A symlink inside `dir` whose target leaves `dir`, if any (checked again after a
/// `repo_path` narrows the plugin to a sub-folder of the archive).
///
/// Each link is followed as the kernel would, one component at a time, so a link that
/// stays inside on paper but passes through another link (`l2 -> d/l1/..` with
/// `d/l1 -> ..`) is caught. A link that dangles part way is judged on its own.
pub fn find_escaping_link(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    fn walk(root: &Path, dir: &Path) -> std::io::Result<Option<PathBuf>> {
        for entry in fs_err::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_symlink() {
                if leaves(root, dir, &fs_err::read_link(&path)?) {
                    return Ok(Some(path.strip_prefix(root).unwrap_or(&path).to_owned()));
                }
            } else if kind.is_dir()
                && let Some(found) = walk(root, &path)?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
    /// Whether `target`, read from folder `from` (canonical, inside `root`), leads out.
    fn leaves(root: &Path, from: &Path, target: &Path) -> bool {
        if target.is_absolute() {
            return true;
        }
        let mut current = from.to_owned();
        for part in target.components() {
            match part {
                Component::ParentDir => {
                    current.pop();
                }
                Component::Normal(name) => current.push(name),
                _ => {}
            }
            if !current.starts_with(root) {
                return true;
            }
            match std::fs::canonicalize(&current) {
                Ok(real) if !real.starts_with(root) => return true,
                Ok(real) => current = real,
                // Dangling from here on (or a loop): nothing further is reached.
                Err(_) => return false,
            }
        }
        false
    }
    let root = fs_err::canonicalize(dir)?;
    walk(&root, &root)
}

#[cfg(test)]
mod tests;
