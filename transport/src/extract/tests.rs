//! Unit tests of the extractor: hostile entries, limits, links, sparse files.

use super::*;

fn tar_with(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, kind, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(*kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        // Write the raw name so hostile paths are not rewritten by the builder.
        let name = header.as_old_mut().name.as_mut();
        name[..path.len()].copy_from_slice(path.as_bytes());
        if let Some(link) = link {
            header.set_link_name(link).expect("link name");
        }
        header.set_cksum();
        builder.append(&header, *data).expect("append");
    }
    builder.into_inner().expect("finish")
}

fn unpack(bytes: &[u8]) -> Result<tempfile::TempDir, ExtractError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let archive = dir.path().join("a.tar");
    fs_err::write(&archive, bytes).expect("write");
    let dest = dir.path().join("out");
    fs_err::create_dir(&dest).expect("mkdir");
    extract(
        &archive,
        ArchiveFormat::Tar,
        &dest,
        ArchiveLimits::default(),
    )
    .map(|()| dir)
}

#[test]
fn hostile_entries_are_refused() {
    use tar::EntryType as T;
    for (entries, needle) in [
        (vec![("../evil", T::Regular, &b"x"[..], None)], "`..`"),
        (vec![("/etc/evil", T::Regular, &b"x"[..], None)], "absolute"),
        (
            vec![("link", T::Symlink, &b""[..], Some("../../outside"))],
            "leaves the archive",
        ),
        (
            vec![("link", T::Symlink, &b""[..], Some("/etc/passwd"))],
            "absolute path",
        ),
        (
            vec![
                ("dir/link", T::Symlink, &b""[..], Some("..")),
                ("dir/link/x", T::Regular, &b"x"[..], None),
            ],
            "through a symlink",
        ),
        (
            vec![("hard", T::Link, &b""[..], Some("/etc/passwd"))],
            "hard link",
        ),
        (vec![("dev", T::Char, &b""[..], None)], "special file"),
    ] {
        let err = unpack(&tar_with(&entries)).expect_err(needle);
        assert!(err.to_string().contains(needle), "{needle}: {err}");
    }
}

#[test]
fn gnu_sparse_files_unpack_as_regular_files() {
    // Written by GNU tar itself (`tar -S`), as a plugin author's machine would.
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    fs_err::create_dir(&src).expect("mkdir");
    let file = std::fs::File::create(src.join("sparse.bin")).expect("create");
    file.set_len(1 << 20).expect("grow");
    std::io::Write::write_all(&mut &file, b"head").expect("write");
    drop(file);
    let archive = dir.path().join("a.tar");
    let status = std::process::Command::new("tar")
        .args(["--format=gnu", "-S", "-cf"])
        .arg(&archive)
        .arg("-C")
        .arg(&src)
        .arg("sparse.bin")
        .status()
        .expect("GNU tar runs");
    assert!(status.success());
    let out = unpack(&fs_err::read(&archive).expect("read")).expect("unpacks");
    let bytes = fs_err::read(out.path().join("out/sparse.bin")).expect("read");
    assert_eq!(bytes.len(), 1 << 20);
    assert_eq!(&bytes[..4], b"head");
    assert!(bytes[4..].iter().all(|b| *b == 0));
}

#[test]
fn safe_archives_unpack_with_links_and_modes() {
    use tar::EntryType as T;
    let dir = unpack(&tar_with(&[
        ("top/a.txt", T::Regular, b"hello\n", None),
        ("top/sub/link", T::Symlink, b"", Some("../a.txt")),
        ("top/copy", T::Link, b"", Some("top/a.txt")),
    ]))
    .expect("safe");
    let out = dir.path().join("out/top");
    assert_eq!(
        fs_err::read_to_string(out.join("sub/link")).expect("read"),
        "hello\n"
    );
    assert_eq!(
        fs_err::read_to_string(out.join("copy")).expect("read"),
        "hello\n"
    );
}

#[test]
fn limits_stop_early() {
    use tar::EntryType as T;
    let dir = tempfile::tempdir().expect("tempdir");
    let archive = dir.path().join("a.tar");
    fs_err::write(
        &archive,
        tar_with(&[
            ("a", T::Regular, &[7u8; 3000], None),
            ("b", T::Regular, b"x", None),
        ]),
    )
    .expect("write");
    let small = ArchiveLimits {
        max_bytes: 1000,
        max_entries: 10,
    };
    let err = extract(&archive, ArchiveFormat::Tar, dir.path(), small).expect_err("too big");
    assert!(err.to_string().contains("BERTH_ARCHIVE_MAX_BYTES"), "{err}");
    let out = dir.path().join("o2");
    fs_err::create_dir(&out).expect("mkdir");
    let few = ArchiveLimits {
        max_bytes: 1 << 20,
        max_entries: 1,
    };
    let err = extract(&archive, ArchiveFormat::Tar, &out, few).expect_err("too many");
    assert!(
        err.to_string().contains("BERTH_ARCHIVE_MAX_ENTRIES"),
        "{err}"
    );
}
