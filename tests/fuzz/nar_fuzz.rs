//! Property tests of the NAR serialiser: random trees are written to disk, serialised by
//! `berth_store::nar`, and read back by an independent NAR reader written here from the
//! format's definition (Dolstra's thesis, figure 5.2). The tree read back must equal the
//! tree generated, and the hash must be the sha256 of those bytes. When `nix-store` is on
//! PATH the bytes must also equal `nix-store --dump`'s (in CI, `CI` set, it must be on
//! PATH). `PROPTEST_CASES` runs them longer.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;

use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn cases(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(default),
        failure_persistence: Some(Box::new(crate::REGRESSIONS)),
        ..ProptestConfig::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File { executable: bool, contents: Vec<u8> },
    Symlink(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, Node>),
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    // Bytes that sort differently from git's order (`-`, `.`, `/`-free), non-ASCII and
    // names that differ only in case.
    prop::collection::vec(prop::sample::select(b"aAbB-._0\xc3\xa9z~ ".to_vec()), 1..6)
        .prop_filter("not . or ..", |n| n != b"." && n != b"..")
}

fn leaf() -> impl Strategy<Value = Node> {
    prop_oneof![
        (any::<bool>(), prop::collection::vec(any::<u8>(), 0..40)).prop_map(
            |(executable, contents)| Node::File {
                executable,
                contents
            }
        ),
        // Lengths around the 8-byte padding boundary matter most.
        (any::<bool>(), 0usize..20).prop_map(|(executable, len)| Node::File {
            executable,
            contents: vec![b'x'; len]
        }),
        prop::collection::vec(prop::sample::select(b"ab./-\xc3\xa9".to_vec()), 1..12)
            .prop_map(Node::Symlink),
    ]
}

fn tree() -> impl Strategy<Value = Node> {
    leaf().prop_recursive(4, 40, 6, |inner| {
        prop::collection::btree_map(name(), inner, 0..6).prop_map(Node::Dir)
    })
}

fn root_dir() -> impl Strategy<Value = Node> {
    prop::collection::btree_map(name(), tree(), 0..8).prop_map(Node::Dir)
}

fn materialise(node: &Node, path: &Path) {
    match node {
        Node::File {
            executable,
            contents,
        } => {
            std::fs::write(path, contents).expect("write");
            let mode = if *executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        }
        Node::Symlink(target) => {
            symlink(std::ffi::OsStr::from_bytes(target), path).expect("symlink");
        }
        Node::Dir(entries) => {
            std::fs::create_dir(path).expect("mkdir");
            for (name, child) in entries {
                materialise(child, &path.join(std::ffi::OsStr::from_bytes(name)));
            }
        }
    }
}

/// An independent NAR reader: every string is a little-endian u64 length, the bytes, and
/// zero padding to a multiple of 8; folder entries must be strictly ascending.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).ok_or("length overflow")?;
        let slice = self.bytes.get(self.at..end).ok_or("truncated")?;
        self.at = end;
        Ok(slice)
    }

    fn string(&mut self) -> Result<&'a [u8], String> {
        let len = u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"));
        let len = usize::try_from(len).map_err(|_| "huge length")?;
        let s = self.take(len)?;
        let pad = (8 - len % 8) % 8;
        if self.take(pad)?.iter().any(|&b| b != 0) {
            return Err("non-zero padding".into());
        }
        Ok(s)
    }

    fn expect(&mut self, token: &[u8]) -> Result<(), String> {
        let got = self.string()?;
        if got == token {
            Ok(())
        } else {
            Err(format!(
                "expected {:?}, got {:?} at {}",
                String::from_utf8_lossy(token),
                String::from_utf8_lossy(got),
                self.at
            ))
        }
    }

    fn node(&mut self) -> Result<Node, String> {
        self.expect(b"(")?;
        self.expect(b"type")?;
        let node = match self.string()? {
            b"regular" => {
                let mut tag = self.string()?;
                let executable = tag == b"executable";
                if executable {
                    self.expect(b"")?;
                    tag = self.string()?;
                }
                if tag != b"contents" {
                    return Err("expected contents".into());
                }
                Node::File {
                    executable,
                    contents: self.string()?.to_vec(),
                }
            }
            b"symlink" => {
                self.expect(b"target")?;
                Node::Symlink(self.string()?.to_vec())
            }
            b"directory" => {
                let mut entries = BTreeMap::new();
                let mut last: Option<Vec<u8>> = None;
                loop {
                    match self.string()? {
                        b")" => return Ok(Node::Dir(entries)),
                        b"entry" => {}
                        other => return Err(format!("unexpected {other:?} in a folder")),
                    }
                    self.expect(b"(")?;
                    self.expect(b"name")?;
                    let name = self.string()?.to_vec();
                    if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
                        return Err(format!("bad entry name {name:?}"));
                    }
                    if last.as_ref().is_some_and(|l| *l >= name) {
                        return Err(format!("entry {name:?} out of order"));
                    }
                    self.expect(b"node")?;
                    let child = self.node()?;
                    self.expect(b")")?;
                    last = Some(name.clone());
                    entries.insert(name, child);
                }
            }
            other => return Err(format!("unknown type {other:?}")),
        };
        self.expect(b")")?;
        Ok(node)
    }

    fn archive(bytes: &'a [u8]) -> Result<Node, String> {
        let mut reader = Reader { bytes, at: 0 };
        reader.expect(b"nix-archive-1")?;
        let node = reader.node()?;
        if reader.at != bytes.len() {
            return Err("trailing bytes".into());
        }
        Ok(node)
    }
}

fn dump(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    berth_store::nar::dump(path, &mut out).expect("dump");
    out
}

fn nix_store_dump(path: &Path) -> Option<Vec<u8>> {
    match Command::new("nix-store").arg("--dump").arg(path).output() {
        Ok(out) => {
            assert!(
                out.status.success(),
                "nix-store --dump failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(out.stdout)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            common::require_or_skip("`nix-store`", "apt-get install nix-bin");
            None
        }
        Err(e) => panic!("could not run nix-store: {e}"),
    }
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn a_tree_read_back_from_its_nar_is_the_tree(tree in root_dir()) {
        let scratch = tempfile::tempdir().expect("tempdir");
        let root = scratch.path().join("root");
        materialise(&tree, &root);
        let bytes = dump(&root);
        prop_assert_eq!(Reader::archive(&bytes), Ok(tree));
        let hash = berth_store::hash_path(&root).expect("hash");
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        prop_assert_eq!(hash, berth_lockfile_schema::Sha256Hash::from_bytes(digest));
    }

    #[test]
    fn a_single_file_or_link_is_an_archive_too(node in leaf()) {
        let scratch = tempfile::tempdir().expect("tempdir");
        let path = scratch.path().join("it");
        materialise(&node, &path);
        prop_assert_eq!(Reader::archive(&dump(&path)), Ok(node));
    }

    #[test]
    fn the_reader_rejects_every_truncation(tree in root_dir(), cut in any::<prop::sample::Index>()) {
        // Guards the reader itself: a reader that accepted anything would prove nothing.
        let scratch = tempfile::tempdir().expect("tempdir");
        let root = scratch.path().join("root");
        materialise(&tree, &root);
        let bytes = dump(&root);
        let cut = cut.index(bytes.len());
        prop_assert!(Reader::archive(&bytes[..cut]).is_err());
    }
}

proptest! {
    // One `nix-store` process per case: fewer cases.
    #![proptest_config(cases(24))]

    #[test]
    fn the_bytes_equal_nix_store_dump(tree in root_dir()) {
        let scratch = tempfile::tempdir().expect("tempdir");
        let root = scratch.path().join("root");
        materialise(&tree, &root);
        if let Some(reference) = nix_store_dump(&root) {
            prop_assert!(reference == dump(&root), "berth's NAR differs from nix-store --dump");
        }
    }
}
