//! Property tests of the NAR unpacker, which reads what a binary cache serves (hostile
//! input). NARs are built here from a tree model by an independent writer: random trees
//! unpack to the same tree and hash; random damage never panics, never writes outside the
//! destination, and whatever is accepted hashes to what was read; hand-made hostile NARs
//! are refused for the right reason. `PROPTEST_CASES` runs them longer.

use std::collections::BTreeMap;
use std::path::Path;

use berth_store::{UnpackLimits, hash_path, unpack_nar};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn cases(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(default),
        ..ProptestConfig::default()
    }
}

#[derive(Debug, Clone)]
enum Node {
    File { executable: bool, contents: Vec<u8> },
    Symlink(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, Node>),
}

/// A NAR writer written from the format's definition, independent of `berth_store::nar`.
#[derive(Default)]
struct Nar(Vec<u8>);

impl Nar {
    fn str(&mut self, s: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(s.len() as u64).to_le_bytes());
        self.0.extend_from_slice(s);
        self.0.resize(self.0.len().div_ceil(8) * 8, 0);
        self
    }

    fn node(&mut self, node: &Node) -> &mut Self {
        self.str(b"(").str(b"type");
        match node {
            Node::File {
                executable,
                contents,
            } => {
                self.str(b"regular");
                if *executable {
                    self.str(b"executable").str(b"");
                }
                self.str(b"contents").str(contents);
            }
            Node::Symlink(target) => {
                self.str(b"symlink").str(b"target").str(target);
            }
            Node::Dir(entries) => {
                self.str(b"directory");
                for (name, child) in entries {
                    self.str(b"entry")
                        .str(b"(")
                        .str(b"name")
                        .str(name)
                        .str(b"node");
                    self.node(child).str(b")");
                }
            }
        }
        self.str(b")")
    }

    fn archive(node: &Node) -> Vec<u8> {
        let mut nar = Nar::default();
        nar.str(b"nix-archive-1").node(node);
        nar.0
    }
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"aAbB-._0\xc3\xa9z~ ".to_vec()), 1..6)
        .prop_filter("not . or ..", |n| n != b"." && n != b"..")
}

fn tree() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        (any::<bool>(), prop::collection::vec(any::<u8>(), 0..40)).prop_map(
            |(executable, contents)| Node::File {
                executable,
                contents
            }
        ),
        prop::collection::vec(prop::sample::select(b"ab./-".to_vec()), 1..12)
            .prop_map(Node::Symlink),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop::collection::btree_map(name(), inner, 0..6).prop_map(Node::Dir)
    })
}

fn root() -> impl Strategy<Value = Node> {
    prop::collection::btree_map(name(), tree(), 0..8).prop_map(Node::Dir)
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Everything under `dir`, as paths relative to it.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            out.push(
                path.strip_prefix(dir)
                    .expect("inside")
                    .display()
                    .to_string(),
            );
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn random_trees_round_trip(tree in root()) {
        let bytes = Nar::archive(&tree);
        let tmp = tempfile::tempdir().expect("tmp");
        let dest = tmp.path().join("tree");
        let got = unpack_nar(bytes.as_slice(), &dest, &UnpackLimits::default()).expect("valid NAR");
        prop_assert_eq!(got.nar_size, bytes.len() as u64);
        prop_assert_eq!(got.nar_hash.as_bytes(), &sha256(&bytes));
        prop_assert_eq!(hash_path(&dest).expect("hash"), got.nar_hash);
        let mut again = Vec::new();
        berth_store::nar::dump(&dest, &mut again).expect("dump");
        prop_assert_eq!(again, bytes);
    }

    #[test]
    fn damage_never_escapes_and_what_is_accepted_hashes_to_what_was_read(
        tree in root(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = Nar::archive(&tree);
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        let tmp = tempfile::tempdir().expect("tmp");
        let dest = tmp.path().join("tree");
        let limits = UnpackLimits { max_total_bytes: 1 << 20, max_file_bytes: 1 << 16, ..UnpackLimits::default() };
        let result = unpack_nar(bytes.as_slice(), &dest, &limits);
        // Only `tree` (and what is under it) may exist in the parent.
        for path in listing(tmp.path()) {
            prop_assert!(path == "tree" || path.starts_with("tree/"), "{} written outside", path);
        }
        if let Ok(got) = result {
            prop_assert_eq!(got.nar_hash.as_bytes(), &sha256(&bytes));
            prop_assert_eq!(hash_path(&dest).expect("hash"), got.nar_hash);
        }
    }
}

fn file(contents: &[u8]) -> Node {
    Node::File {
        executable: false,
        contents: contents.to_vec(),
    }
}

fn dir(entries: Vec<(&[u8], Node)>) -> Node {
    Node::Dir(entries.into_iter().map(|(n, c)| (n.to_vec(), c)).collect())
}

/// A folder whose entries are written in the order given (the model's map would sort them).
fn unsorted(names: &[&[u8]]) -> Vec<u8> {
    let mut nar = Nar::default();
    nar.str(b"nix-archive-1")
        .str(b"(")
        .str(b"type")
        .str(b"directory");
    for name in names {
        nar.str(b"entry")
            .str(b"(")
            .str(b"name")
            .str(name)
            .str(b"node");
        nar.node(&file(b"x")).str(b")");
    }
    nar.str(b")");
    nar.0
}

fn refused(bytes: &[u8], limits: &UnpackLimits) -> String {
    let tmp = tempfile::tempdir().expect("tmp");
    let dest = tmp.path().join("tree");
    let err = unpack_nar(bytes, &dest, limits).expect_err("refused");
    for path in listing(tmp.path()) {
        assert!(
            path == "tree" || path.starts_with("tree/"),
            "{path} written outside"
        );
    }
    err.to_string()
}

#[test]
fn hostile_nars_are_refused_for_the_right_reason() {
    let limits = UnpackLimits::default();
    for (name, why) in [
        (&b".."[..], "`.` and `..` are not names"),
        (b".", "`.` and `..` are not names"),
        (b"a/b", "a name with `/`"),
        (b"", "an empty name"),
        (b"a\0b", "a name with NUL"),
        (b".git", "git's own folder"),
        (b".GIT", "git's own folder"),
    ] {
        let bytes = Nar::archive(&dir(vec![(name, file(b"x"))]));
        let err = refused(&bytes, &limits);
        assert!(err.contains(why), "{name:?}: {err}");
    }
    for names in [&[&b"b"[..], b"a"][..], &[b"a", b"a"]] {
        let err = refused(&unsorted(names), &limits);
        assert!(err.contains("sorted and unique"), "{err}");
    }
    // A length prefix no NAR can have: refused before anything is allocated.
    let mut huge = Nar::default();
    huge.str(b"nix-archive-1");
    huge.0.extend_from_slice(&u64::MAX.to_le_bytes());
    let err = refused(&huge.0, &limits);
    assert!(err.contains("not a valid NAR"), "{err}");
    // Non-zero padding.
    let mut padded = Nar::archive(&file(b"abc"));
    // The archive ends with `abc`, five bytes of padding and the string `)` (16 bytes).
    let first_pad = padded.len() - 16 - 5;
    padded[first_pad] = 1;
    let err = refused(&padded, &limits);
    assert!(err.contains("non-zero padding"), "{err}");
    // Trailing data.
    let mut trailing = Nar::archive(&file(b"abc"));
    trailing.extend_from_slice(b"more");
    assert!(refused(&trailing, &limits).contains("after the end"));
    // Too deep, too large, too many.
    let mut deep = file(b"x");
    for _ in 0..10 {
        deep = dir(vec![(b"d", deep)]);
    }
    let shallow = UnpackLimits {
        max_depth: 5,
        ..limits
    };
    assert!(refused(&Nar::archive(&deep), &shallow).contains("folder depth"));
    let small = UnpackLimits {
        max_file_bytes: 10,
        ..limits
    };
    assert!(refused(&Nar::archive(&file(&[7; 11])), &small).contains("file size"));
    let few = UnpackLimits {
        max_entries: 2,
        ..limits
    };
    let three = dir(vec![(b"a", file(b"1")), (b"b", file(b"2"))]);
    assert!(refused(&Nar::archive(&three), &few).contains("entries"));
    // Not a NAR at all.
    assert!(refused(b"plainly not a NAR", &limits).contains("not a valid NAR"));
}
