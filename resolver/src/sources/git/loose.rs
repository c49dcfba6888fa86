//! Loose objects of a repository read in place (a `file://` source), each with one
//! `open`, its `read`s and a `close`. gix asks whether a loose object exists (an `lstat`)
//! before it opens it, `fstat`s it, maps it into memory and unmaps it again: on local
//! repositories of loose objects that was a fifth of a cold `lock`. Objects that are not
//! loose (packed ones) are left to gix.

use std::io::Read;
use std::path::Path;

use gix::objs::Kind;
use gix::zlib::{Inflate, Status};

/// The most a zlib stream inflates to, per compressed byte (deflate's limit is 1032:1).
const MAX_INFLATE_RATIO: u64 = 1032;

/// Why a loose object could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LooseError {
    #[error("failed to read loose object `{path}`: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("loose object `{path}` is corrupt: {problem}")]
    Corrupt { path: String, problem: String },
}

/// The object `id` under the objects folder `objects` if it is stored loose there, with
/// its kind; `None` if it is not (it may be packed).
pub(crate) fn read(objects: &Path, id: &gix::oid) -> Result<Option<(Kind, Vec<u8>)>, LooseError> {
    let hex = id.to_hex().to_string();
    let path = objects.join(&hex[..2]).join(&hex[2..]);
    let shown = || path.display().to_string();
    let io = |source| LooseError::Io {
        path: shown(),
        source,
    };
    let mut file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut raw = Vec::with_capacity(16 * 1024);
    // Through `Take`, which asks for no size hint: no `fstat` before the reads.
    (&mut file)
        .take(u64::MAX)
        .read_to_end(&mut raw)
        .map_err(io)?;
    drop(file);
    let corrupt = |problem: String| LooseError::Corrupt {
        path: shown(),
        problem,
    };
    let mut header = [0u8; 64];
    let mut inflate = Inflate::default();
    let (status, consumed_in, consumed_out) = inflate
        .prefix(&raw, &mut header)
        .map_err(|e| corrupt(e.to_string()))?;
    let (kind, size, header_len) = gix::objs::decode::loose_header(&header[..consumed_out])
        .map_err(|e| corrupt(e.to_string()))?;
    // zlib inflates at most about 1032 bytes per byte read: a header that claims more is
    // refused before anything of that size is allocated.
    if size > (raw.len() as u64).saturating_mul(MAX_INFLATE_RATIO) {
        return Err(corrupt(format!(
            "its header says {size} bytes, more than {} compressed bytes can hold",
            raw.len()
        )));
    }
    let size = usize::try_from(size).map_err(|e| corrupt(e.to_string()))?;
    let mut out = Vec::new();
    if status == Status::StreamEnd {
        out.extend_from_slice(&header[header_len..consumed_out]);
    } else {
        inflate
            .rest(
                &raw[consumed_in..],
                &header[..consumed_out],
                header_len,
                &mut out,
                size,
            )
            .map_err(|e| corrupt(e.to_string()))?;
    }
    if out.len() != size {
        return Err(corrupt(format!(
            "its header says {size} bytes, it holds {}",
            out.len()
        )));
    }
    Ok(Some((kind, out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_owned()
    }

    #[test]
    fn loose_objects_read_as_gix_reads_them_and_packed_ones_are_left_to_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        git(repo, &["init", "-q", "-b", "main"]);
        // Larger than the first inflate's buffer, so the rest of the stream is read too.
        let big: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        fs_err::write(repo.join("big.md"), &big).expect("write");
        fs_err::write(repo.join("small.md"), "hi\n").expect("write");
        git(repo, &["add", "-A"]);
        git(
            repo,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "-m",
                "one",
            ],
        );
        let objects = repo.join(".git/objects");
        let opened = gix::open(repo).expect("open");
        let wanted = [
            ("HEAD", Kind::Commit),
            ("HEAD^{tree}", Kind::Tree),
            ("HEAD:big.md", Kind::Blob),
            ("HEAD:small.md", Kind::Blob),
        ];
        for (rev, kind) in wanted {
            let id =
                gix::ObjectId::from_hex(git(repo, &["rev-parse", rev]).as_bytes()).expect("an id");
            let (read_kind, data) = read(&objects, &id).expect("readable").expect("loose");
            let found = opened.find_object(id).expect("gix finds it");
            assert_eq!(
                (read_kind, data.as_slice()),
                (kind, found.data.as_slice()),
                "{rev}"
            );
        }
        let blob = gix::ObjectId::from_hex(git(repo, &["rev-parse", "HEAD:small.md"]).as_bytes())
            .expect("an id");
        // A corrupt loose object is an error naming it, not a missing one.
        let hex = blob.to_string();
        let file = objects.join(&hex[..2]).join(&hex[2..]);
        let saved = fs_err::read(&file).expect("read");
        fs_err::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .expect("chmod");
        fs_err::write(&file, b"not zlib").expect("corrupt");
        let err = read(&objects, &blob).expect_err("corrupt");
        assert!(err.to_string().contains(&hex[2..]), "{err}");
        // A header claiming more than its compressed bytes can hold is refused unread.
        let mut claim = gix::zlib::stream::deflate::Write::new(
            Vec::new(),
            gix::zlib::Compression::new(6).expect("level"),
        );
        std::io::Write::write_all(&mut claim, b"blob 99999999999\0x").expect("deflate");
        std::io::Write::flush(&mut claim).expect("flush");
        fs_err::write(&file, claim.into_inner()).expect("write");
        let err = read(&objects, &blob).expect_err("an impossible size");
        assert!(err.to_string().contains("99999999999"), "{err}");
        fs_err::write(&file, saved).expect("restore");
        // Packed, no loose file is left: gix reads it.
        git(repo, &["gc", "-q", "--prune=now"]);
        assert!(read(&objects, &blob).expect("no error").is_none());
    }
}
