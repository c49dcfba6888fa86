//! A record's text: the `lstat` fields of an entry's paths, one line per path in NAR
//! order, how a record is read back and compared with the paths, and the walks that make
//! one. The store's side (where records live, when they are checked) is in `mod.rs`.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::{EntryTree, TreePath};

/// The first line of every record; a record that does not start with it is ignored (and
/// replaced once its entry is re-hashed).
pub(super) const HEADER: &[u8] = b"berth stat record v1\n";

/// What a record says about one path: the fields of its `lstat`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    mode: u32,
    size: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stat {
    pub(crate) fn of_metadata(meta: &std::fs::Metadata) -> Self {
        Self {
            mode: meta.mode(),
            size: meta.size(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    // The field types of `struct stat` differ between architectures; every value fits.
    #[allow(clippy::unnecessary_cast)]
    fn of_rustix(st: &rustix::fs::Stat) -> Self {
        Self {
            mode: st.st_mode as u32,
            size: st.st_size as u64,
            ino: st.st_ino as u64,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }

    /// One record line: `<mode> <size> <inode> <mtime> <ctime> <path>`, mode in octal with
    /// the file type bits, times as `seconds.nanoseconds`, the path relative to the entry
    /// (`.` for the entry itself) with `\` and newline escaped.
    pub(crate) fn write_line(&self, path: &[u8], out: &mut Vec<u8>) {
        let _ = write!(
            out,
            "{:o} {} {} {}.{:09} {}.{:09} ",
            self.mode, self.size, self.ino, self.mtime.0, self.mtime.1, self.ctime.0, self.ctime.1,
        );
        for &byte in path {
            match byte {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                _ => out.push(byte),
            }
        }
        out.push(b'\n');
    }

    /// Reads a line back (without its newline): the stat and the path, unescaped into
    /// `path`. `None` if the line is not one `write_line` writes. Hand-rolled, since a
    /// check parses every line of every record it reads.
    pub(crate) fn parse_line(line: &[u8], path: &mut Vec<u8>) -> Option<Self> {
        let mut rest = line;
        let mode = u32::try_from(parse_number(&mut rest, 8, b' ')?).ok()?;
        let size = parse_number(&mut rest, 10, b' ')?;
        let ino = parse_number(&mut rest, 10, b' ')?;
        let mtime = (
            parse_signed(&mut rest, b'.')?,
            parse_signed(&mut rest, b' ')?,
        );
        let ctime = (
            parse_signed(&mut rest, b'.')?,
            parse_signed(&mut rest, b' ')?,
        );
        // The path, copied a run at a time between escapes (most paths have none).
        path.clear();
        while let Some(at) = rest.iter().position(|&b| b == b'\\') {
            path.extend_from_slice(&rest[..at]);
            path.push(match rest.get(at + 1)? {
                b'\\' => b'\\',
                b'n' => b'\n',
                _ => return None,
            });
            rest = &rest[at + 2..];
        }
        path.extend_from_slice(rest);
        Some(Self {
            mode,
            size,
            ino,
            mtime,
            ctime,
        })
    }
}

/// The number in `radix` (8 or 10) at the start of `text`, up to `end`, which is skipped
/// too. `None` if there is no digit before `end`, a byte before it is not a digit, `end`
/// never comes or the number does not fit in 64 bits.
pub(super) fn parse_number(text: &mut &[u8], radix: u8, end: u8) -> Option<u64> {
    // Up to 19 decimal or 21 octal digits cannot overflow a u64, so the common case needs
    // no overflow check per digit (a check parses every line of every record it reads).
    let unchecked = if radix == 8 { 21 } else { 19 };
    let mut value: u64 = 0;
    let mut len = 0;
    loop {
        let byte = *text.get(len)?;
        if byte == end {
            break;
        }
        let digit = byte.wrapping_sub(b'0');
        if digit >= radix {
            return None;
        }
        value = if len < unchecked {
            value * u64::from(radix) + u64::from(digit)
        } else {
            value
                .checked_mul(u64::from(radix))?
                .checked_add(u64::from(digit))?
        };
        len += 1;
    }
    if len == 0 {
        return None;
    }
    *text = &text[len + 1..];
    Some(value)
}

/// A decimal number that may start with `-` (a time before 1970), up to `end`.
pub(super) fn parse_signed(text: &mut &[u8], end: u8) -> Option<i64> {
    match text.strip_prefix(b"-") {
        Some(rest) => {
            *text = rest;
            i64::try_from(parse_number(text, 10, end)?).ok().map(|v| -v)
        }
        None => i64::try_from(parse_number(text, 10, end)?).ok(),
    }
}

/// The record at `path`, if it can be read. `std::fs::read` would ask for the size first
/// (a `statx` and an `lseek` more per entry); records are small, so this reads until the
/// end into a buffer of their usual size, which `Take` fills without zeroing it first.
pub(crate) fn read_record(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut record = Vec::with_capacity(8 << 10);
    file.take(u64::MAX).read_to_end(&mut record).ok()?;
    Some(record)
}

/// Calls `each` with every line of `record` (its path and stat) in order while it returns
/// `true`; `false` if a line is not one [`Stat::write_line`] writes, the record is cut
/// short or has no header, or `each` said stop.
fn each_line(record: &[u8], mut each: impl FnMut(&[u8], &Stat) -> bool) -> bool {
    let Some(mut rest) = record.strip_prefix(HEADER) else {
        return false;
    };
    let mut path = Vec::new();
    while !rest.is_empty() {
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return false; // a record cut short
        };
        let Some(recorded) = Stat::parse_line(&rest[..end], &mut path) else {
            return false;
        };
        rest = &rest[end + 1..];
        if !each(&path, &recorded) {
            return false;
        }
    }
    true
}

fn tree_path(path: &[u8], recorded: &Stat) -> TreePath {
    TreePath {
        path: path.to_vec(),
        mode: recorded.mode,
        size: recorded.size,
        mtime: recorded.mtime,
    }
}

/// Whether the entry at `root` is exactly as `record` says: every listed path is there
/// with the same stat. One `lstat` per path, relative to the entry's folder. With `tree`,
/// the paths checked are added to it (complete only when this returns `true`).
pub(crate) fn matches_record(root: &Path, record: &[u8], mut tree: Option<&mut EntryTree>) -> bool {
    let Ok(dir) = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let mut seen_root = false;
    let matched = each_line(record, |path, recorded| {
        let now = if path == b"." {
            seen_root = true;
            rustix::fs::fstat(&dir)
        } else {
            rustix::fs::statat(&dir, path, AtFlags::SYMLINK_NOFOLLOW)
        };
        if now.map_or(true, |st| Stat::of_rustix(&st) != *recorded) {
            return false;
        }
        if let Some(tree) = tree.as_deref_mut() {
            tree.paths.push(tree_path(path, recorded));
        }
        true
    });
    // Without the entry's own line, a file added at its top would go unseen.
    matched && seen_root
}

/// The paths `record` lists, read from it alone (nothing on disk is asked): for an entry
/// this process has just added, whose record it has just taken.
pub(crate) fn tree_of_record(record: &[u8]) -> Option<EntryTree> {
    let mut tree = EntryTree::default();
    each_line(record, |path, recorded| {
        tree.paths.push(tree_path(path, recorded));
        true
    })
    .then_some(tree)
}

/// The record of the entry at `root` as it is now: its own line first, taken before it is
/// listed, then its contents.
pub(crate) fn stat_walk(root: &Path) -> std::io::Result<Vec<u8>> {
    let mut out = HEADER.to_vec();
    Stat::of_metadata(&fs_err::symlink_metadata(root)?).write_line(b".", &mut out);
    // The lines of every path under `root`, in NAR order (names sorted bytewise, a
    // folder before its contents), each folder's taken before it is listed.
    walk_dir(root, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// The record of an entry just renamed into place: `contents` (the sealing walk's lines of
/// the staged tree, taken before it was hashed) after the entry's own line, taken now, once the
/// entry has its final mode. `None` if its top-level names are no longer `names`: then
/// something changed it while it was being hashed, and without a record it is re-hashed
/// before its first use.
pub(crate) fn committed_record(
    root: &Path,
    names: &[OsString],
    contents: &[u8],
) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = HEADER.to_vec();
    Stat::of_metadata(&fs_err::symlink_metadata(root)?).write_line(b".", &mut out);
    // Listed after its line was taken: a name added after this changes its ctime.
    let mut now: Vec<OsString> = fs_err::read_dir(root)?
        .map(|child| child.map(|c| c.file_name()))
        .collect::<Result<_, _>>()?;
    now.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    if now != names {
        return Ok(None);
    }
    out.extend_from_slice(contents);
    Ok(Some(out))
}

pub(super) fn walk_dir(
    dir: &Path,
    rel: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> std::io::Result<Vec<OsString>> {
    let mut children = Vec::new();
    for child in fs_err::read_dir(dir)? {
        let child = child?;
        // `DirEntry::metadata` is an `lstat` relative to the open folder.
        let meta = child.metadata()?;
        children.push((child.file_name(), meta));
    }
    children.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut names = Vec::with_capacity(children.len());
    for (name, meta) in children {
        let len = rel.len();
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name.as_bytes());
        Stat::of_metadata(&meta).write_line(rel, out);
        if meta.is_dir() {
            walk_dir(&dir.join(&name), rel, out)?;
        }
        rel.truncate(len);
        names.push(name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::{Stat, parse_number, parse_signed};

    fn number(text: &str, radix: u8) -> Option<u64> {
        parse_number(&mut text.as_bytes(), radix, b' ')
    }

    #[test]
    fn numbers_are_read_exactly_or_not_at_all() {
        assert_eq!(number("0 ", 10), Some(0));
        assert_eq!(number("100644 ", 8), Some(0o100644));
        assert_eq!(number("18446744073709551615 ", 10), Some(u64::MAX));
        assert_eq!(number("0000000000000000000000042 ", 10), Some(42));
        assert_eq!(number("18446744073709551616 ", 10), None, "one over");
        assert_eq!(number("99999999999999999999 ", 10), None);
        assert_eq!(number("1777777777777777777777 ", 8), Some(u64::MAX));
        assert_eq!(number("2000000000000000000000 ", 8), None, "one over");
        for bad in [" ", "", "12", "1x ", "-1 ", "+1 ", "1.5 "] {
            assert_eq!(number(bad, 10), None, "{bad:?}");
        }
        assert_eq!(number("8 ", 8), None, "not an octal digit");
        let mut rest: &[u8] = b"-12.000000001 ";
        assert_eq!(parse_signed(&mut rest, b'.'), Some(-12));
        assert_eq!(parse_signed(&mut rest, b' '), Some(1));
        assert!(rest.is_empty());
    }

    #[test]
    fn lines_round_trip_and_bad_escapes_are_refused() {
        let stat = Stat {
            mode: 0o120777,
            size: 7,
            ino: 1 << 40,
            mtime: (-5, 999_999_999),
            ctime: (1_700_000_000, 0),
        };
        for path in [&b"."[..], b"a/b c", b"\\", b"x\n\\\\y\\", b""] {
            let mut line = Vec::new();
            stat.write_line(path, &mut line);
            let mut back = Vec::new();
            let parsed = Stat::parse_line(&line[..line.len() - 1], &mut back);
            assert_eq!(parsed.as_ref(), Some(&stat), "{path:?}");
            assert_eq!(back, path);
        }
        let mut back = Vec::new();
        for bad in [
            &b"644 1 1 1.0 1.0 a\\"[..],
            b"644 1 1 1.0 1.0 a\\t",
            b"644 1 1 1.0 1.0",
        ] {
            assert_eq!(Stat::parse_line(bad, &mut back), None, "{bad:?}");
        }
    }
}
