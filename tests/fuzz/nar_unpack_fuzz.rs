//! Property tests of the NAR unpacker, which reads what a binary cache serves (hostile
//! input). NARs are built here from a tree model by an independent writer: random trees
//! unpack to the same tree and hash; random damage never panics, never writes outside the
//! destination, and whatever is accepted hashes to what was read; hand-made hostile NARs
//! are refused for the right reason, and what sits just inside each limit is accepted.
//! `PROPTEST_CASES` runs them longer.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use berth_store::{NarUnpackError, UnpackLimits, Unpacked, hash_path, unpack_nar};
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

#[derive(Debug, Clone)]
enum Node {
    File { executable: bool, contents: Vec<u8> },
    Symlink(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, Node>),
}

/// A NAR writer written from the format's definition, independent of `berth_store::nar`,
/// that also writes what no valid NAR holds (raw words, any length prefix, any order).
#[derive(Default)]
struct Nar(Vec<u8>);

impl Nar {
    /// A NAR that starts with the magic.
    fn magic() -> Self {
        let mut nar = Nar::default();
        nar.str(b"nix-archive-1");
        nar
    }

    /// A string: its length, its bytes, zeros up to a multiple of 8.
    fn str(&mut self, s: &[u8]) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s);
        self.0.resize(self.0.len().div_ceil(8) * 8, 0);
        self
    }

    fn strs(&mut self, parts: &[&[u8]]) -> &mut Self {
        for part in parts {
            self.str(part);
        }
        self
    }

    /// A bare length prefix, for lying about one.
    fn u64(&mut self, n: u64) -> &mut Self {
        self.0.extend_from_slice(&n.to_le_bytes());
        self
    }

    /// A folder entry's opening, up to its node.
    fn entry(&mut self, name: &[u8]) -> &mut Self {
        self.strs(&[b"entry", b"(", b"name", name, b"node"])
    }

    fn node(&mut self, node: &Node) -> &mut Self {
        self.strs(&[b"(", b"type"]);
        match node {
            Node::File {
                executable,
                contents,
            } => {
                self.str(b"regular");
                if *executable {
                    self.strs(&[b"executable", b""]);
                }
                self.strs(&[b"contents", contents]);
            }
            Node::Symlink(target) => {
                self.strs(&[b"symlink", b"target", target]);
            }
            Node::Dir(entries) => {
                self.str(b"directory");
                for (name, child) in entries {
                    self.entry(name).node(child).str(b")");
                }
            }
        }
        self.str(b")")
    }

    fn archive(node: &Node) -> Vec<u8> {
        let mut nar = Nar::magic();
        nar.node(node);
        nar.0
    }
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    // Bytes that sort differently in other orders, non-ASCII, and names differing in case.
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
        // Relative, absolute and `..` targets alike: links are kept, never followed.
        prop::collection::vec(prop::sample::select(b"ab./-".to_vec()), 1..12)
            .prop_map(Node::Symlink),
    ]
}

fn tree() -> impl Strategy<Value = Node> {
    leaf().prop_recursive(4, 40, 6, |inner| {
        prop::collection::btree_map(name(), inner, 0..6).prop_map(Node::Dir)
    })
}

/// Mostly folders, sometimes a lone file or symlink.
fn root() -> impl Strategy<Value = Node> {
    prop_oneof![
        6 => prop::collection::btree_map(name(), tree(), 0..8).prop_map(Node::Dir),
        1 => leaf(),
    ]
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Everything under `dir`, as paths relative to it (links are listed, not followed).
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a folder the test made") {
            let entry = entry.expect("entry");
            let path = entry.path();
            out.push(
                path.strip_prefix(dir)
                    .expect("inside")
                    .display()
                    .to_string(),
            );
            if entry.file_type().expect("type").is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The tree on disk at `path`, as the model (owner execute bit only, as NAR has it).
fn read_back(path: &Path) -> Node {
    let meta = std::fs::symlink_metadata(path).expect("stat");
    if meta.file_type().is_symlink() {
        use std::os::unix::ffi::OsStrExt;
        Node::Symlink(
            std::fs::read_link(path)
                .expect("link")
                .as_os_str()
                .as_bytes()
                .to_vec(),
        )
    } else if meta.is_file() {
        Node::File {
            executable: meta.permissions().mode() & 0o100 != 0,
            contents: std::fs::read(path).expect("read"),
        }
    } else {
        use std::os::unix::ffi::OsStrExt;
        Node::Dir(
            std::fs::read_dir(path)
                .expect("read_dir")
                .map(|e| {
                    let e = e.expect("entry");
                    (e.file_name().as_bytes().to_vec(), read_back(&e.path()))
                })
                .collect(),
        )
    }
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
        // The tree itself, not only its hash, is the one the archive describes.
        prop_assert_eq!(Nar::archive(&read_back(&dest)), bytes);
    }

    #[test]
    fn damage_never_escapes_and_what_is_accepted_hashes_to_what_was_read(
        tree in root(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let original = Nar::archive(&tree);
        let mut bytes = original.clone();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        let tmp = tempfile::tempdir().expect("tmp");
        let dest = tmp.path().join("tree");
        // Small limits, so that a flipped length byte often runs into one.
        let limits = UnpackLimits {
            max_total_bytes: 1 << 16,
            max_file_bytes: 1 << 10,
            max_entries: 1 << 12,
            ..UnpackLimits::default()
        };
        let result = unpack_nar(bytes.as_slice(), &dest, &limits);
        let written = listing(tmp.path());
        // Only `tree` (and what is under it) may exist in the parent.
        for path in &written {
            prop_assert!(path == "tree" || path.starts_with("tree/"), "{} written outside", path);
        }
        match result {
            Ok(got) => {
                prop_assert_eq!(got.nar_size, bytes.len() as u64);
                prop_assert_eq!(got.nar_hash.as_bytes(), &sha256(&bytes));
                prop_assert_eq!(hash_path(&dest).expect("hash"), got.nar_hash);
            }
            Err(e) => {
                prop_assert!(bytes != original, "the undamaged NAR was refused: {}", e);
                prop_assert!(written.is_empty(), "a refused NAR left {:?} behind ({})", written, e);
            }
        }
    }
}

#[test]
fn every_truncation_is_refused_and_leaves_nothing() {
    let tree = dir(vec![
        (
            b"a",
            dir(vec![(b"f", file(b"hello")), (b"l", link(b"../x"))]),
        ),
        (b"b", exe(b"#!/bin/sh\n")),
        (b"c", dir(vec![])),
    ]);
    let bytes = Nar::archive(&tree);
    assert_eq!(
        accepted(&bytes, &UnpackLimits::default()).nar_size,
        bytes.len() as u64
    );
    for len in 0..bytes.len() {
        match refused(&bytes[..len], &UnpackLimits::default()) {
            NarUnpackError::Malformed { offset, what } => {
                assert!(offset <= len as u64, "{len}: offset {offset}");
                assert!(what.contains("ends"), "{len}: {what}");
            }
            other => panic!("{len}: {other:?}"),
        }
    }
}

fn file(contents: &[u8]) -> Node {
    Node::File {
        executable: false,
        contents: contents.to_vec(),
    }
}

fn exe(contents: &[u8]) -> Node {
    Node::File {
        executable: true,
        contents: contents.to_vec(),
    }
}

fn link(target: &[u8]) -> Node {
    Node::Symlink(target.to_vec())
}

fn dir(entries: Vec<(&[u8], Node)>) -> Node {
    Node::Dir(entries.into_iter().map(|(n, c)| (n.to_vec(), c)).collect())
}

/// A folder whose entries are written in the order given (the model's map would sort them
/// and merge duplicates).
fn in_order(entries: &[(&[u8], Node)]) -> Vec<u8> {
    let mut nar = Nar::magic();
    nar.strs(&[b"(", b"type", b"directory"]);
    for (name, node) in entries {
        nar.entry(name).node(node).str(b")");
    }
    nar.str(b")");
    nar.0
}

/// Unpacks `bytes` into a fresh folder and returns the error; checks nothing was left in
/// that folder, `dest` included.
fn refused(bytes: &[u8], limits: &UnpackLimits) -> NarUnpackError {
    let tmp = tempfile::tempdir().expect("tmp");
    let dest = tmp.path().join("tree");
    let err = unpack_nar(bytes, &dest, limits).expect_err("refused");
    let left = listing(tmp.path());
    assert!(left.is_empty(), "{left:?} left behind after: {err}");
    err
}

fn accepted(bytes: &[u8], limits: &UnpackLimits) -> Unpacked {
    let tmp = tempfile::tempdir().expect("tmp");
    let dest = tmp.path().join("tree");
    let got = unpack_nar(bytes, &dest, limits).expect("accepted");
    assert_eq!(got.nar_hash.as_bytes(), &sha256(bytes));
    assert_eq!(hash_path(&dest).expect("hash"), got.nar_hash);
    got
}

fn bad_name(err: NarUnpackError) -> (String, &'static str) {
    match err {
        NarUnpackError::BadName { path, why } => (path, why),
        other => panic!("expected a refused name, got {other:?}"),
    }
}

fn malformed(err: NarUnpackError) -> (u64, String) {
    match err {
        NarUnpackError::Malformed { offset, what } => (offset, what),
        other => panic!("expected a malformed NAR, got {other:?}"),
    }
}

fn too_large(err: NarUnpackError) -> (String, u64) {
    match err {
        NarUnpackError::TooLarge { what, limit } => (what, limit),
        other => panic!("expected a limit, got {other:?}"),
    }
}

#[test]
fn names_that_could_escape_or_that_berth_refuses_are_refused() {
    let limits = UnpackLimits::default();
    for (name, why) in [
        (&b".."[..], "`.` and `..` are not names"),
        (b".", "`.` and `..` are not names"),
        (b"a/b", "a name with `/`"),
        (b"/etc", "a name with `/`"),
        (b"", "an empty name"),
        (b"a\0b", "a name with NUL"),
        (b".git", "git's own folder"),
        (b".GIT", "git's own folder"),
        (b"git~1", "git's own folder"),
    ] {
        // At the top and deeper down.
        for tree in [
            dir(vec![(name, file(b"x"))]),
            dir(vec![(
                b"sub",
                dir(vec![(b"a", file(b"")), (name, file(b"x"))]),
            )]),
        ] {
            let (path, got) = bad_name(refused(&Nar::archive(&tree), &limits));
            assert!(got.contains(why), "{name:?}: {got}");
            assert!(
                path.ends_with(&*String::from_utf8_lossy(name).escape_debug().to_string()),
                "{path}"
            );
        }
    }
    // `.git` is refused as a folder too, not only as a file.
    let (path, _) = bad_name(refused(
        &Nar::archive(&dir(vec![(
            b"p",
            dir(vec![(b".git", dir(vec![(b"config", file(b""))]))]),
        )])),
        &limits,
    ));
    assert_eq!(path, "p/.git");
    // Names near the refused ones are fine.
    accepted(
        &Nar::archive(&dir(vec![
            (b"...", file(b"")),
            (b".github", dir(vec![])),
            (b"a.", link(b"..")),
        ])),
        &limits,
    );
}

#[test]
fn names_must_be_sorted_and_unique() {
    let limits = UnpackLimits::default();
    for names in [
        &[&b"b"[..], b"a"][..],
        &[b"a", b"a"],
        &[b"a", b"c", b"b"],
        // Raw byte order, not case-insensitive order: `B` < `a`.
        &[b"a", b"B"],
    ] {
        let entries: Vec<_> = names.iter().map(|n| (*n, file(b"x"))).collect();
        let (_, why) = bad_name(refused(&in_order(&entries), &limits));
        assert!(why.contains("sorted and unique"), "{names:?}: {why}");
    }
    accepted(&in_order(&[(b"B", file(b"")), (b"a", file(b""))]), &limits);
}

#[test]
fn nothing_is_written_through_a_symlink() {
    let tmp = tempfile::tempdir().expect("tmp");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    let dest = tmp.path().join("tree");
    let target = outside.to_str().expect("utf-8").as_bytes();
    // A link to the folder outside, then the same name again as a folder holding a file:
    // if the second were honoured, the file would land in `outside`.
    for bytes in [
        in_order(&[
            (b"l", link(target)),
            (b"l", dir(vec![(b"pwned", file(b"x"))])),
        ]),
        in_order(&[(b"l", link(target)), (b"l", file(b"x"))]),
        in_order(&[(b"l", link(target)), (b"l/pwned", file(b"x"))]),
    ] {
        let err =
            unpack_nar(bytes.as_slice(), &dest, &UnpackLimits::default()).expect_err("refused");
        assert!(matches!(err, NarUnpackError::BadName { .. }), "{err:?}");
        assert!(
            listing(&outside).is_empty(),
            "written through the link: {err}"
        );
        assert!(!dest.exists() && !dest.is_symlink(), "left behind: {err}");
    }
    // The link alone is fine, and stays a link.
    unpack_nar(
        in_order(&[(b"l", link(target))]).as_slice(),
        &dest,
        &UnpackLimits::default(),
    )
    .expect("a link out is kept as it is");
    assert_eq!(std::fs::read_link(dest.join("l")).expect("a link"), outside);
}

#[test]
fn lying_lengths_are_refused_before_anything_is_allocated() {
    let limits = UnpackLimits::default();
    // Where a word of the format belongs.
    let mut nar = Nar::magic();
    nar.u64(u64::MAX);
    let (offset, what) = malformed(refused(&nar.0, &limits));
    assert_eq!(offset, 24, "{what}");
    assert!(what.contains("18446744073709551615"), "{what}");
    // Where a name belongs.
    let mut nar = Nar::magic();
    nar.strs(&[b"(", b"type", b"directory", b"entry", b"(", b"name"])
        .u64(u64::MAX);
    let (what, limit) = too_large(refused(&nar.0, &limits));
    assert_eq!(limit, limits.max_name_len as u64, "{what}");
    // Where a file's contents belong.
    let mut nar = Nar::magic();
    nar.strs(&[b"(", b"type", b"regular", b"contents"])
        .u64(u64::MAX);
    let (what, limit) = too_large(refused(&nar.0, &limits));
    assert_eq!(limit, limits.max_file_bytes, "{what}");
    // Where a symlink's target belongs.
    let mut nar = Nar::magic();
    nar.strs(&[b"(", b"type", b"symlink", b"target"])
        .u64(u64::MAX);
    let (what, limit) = too_large(refused(&nar.0, &limits));
    assert_eq!(limit, limits.max_target_len as u64, "{what}");
    // Not a NAR at all: its first eight bytes, read as a length, are huge.
    let (offset, _) = malformed(refused(b"plainly not a NAR", &limits));
    assert_eq!(offset, 0);
}

#[test]
fn padding_must_be_zero_and_nothing_may_follow() {
    let limits = UnpackLimits::default();
    let good = Nar::archive(&dir(vec![(b"ab", file(b"abc"))]));
    accepted(&good, &limits);
    // Every padding byte of the archive: of words, of the name and of the contents.
    let mut checked = 0;
    let mut at = 0;
    while at < good.len() {
        let len = u64::from_le_bytes(good[at..at + 8].try_into().expect("8 bytes")) as usize;
        let start = at + 8 + len;
        let end = at + 8 + len.div_ceil(8) * 8;
        for pad in start..end {
            let mut bad = good.clone();
            bad[pad] = 0x80;
            let (offset, what) = malformed(refused(&bad, &limits));
            assert_eq!(what, "non-zero padding");
            assert_eq!(offset, start as u64);
            checked += 1;
        }
        at = end;
    }
    // 17 strings: `nix-archive-1` `(` `type` `directory` `entry` `(` `name` `ab` `node` `(`
    // `type` `regular` `contents` `abc` `)` `)` `)`.
    assert_eq!(
        checked,
        3 + 7 + 4 + 7 + 3 + 7 + 4 + 6 + 4 + 7 + 4 + 1 + 5 + 7 + 7 + 7,
        "every padding byte"
    );
    // Trailing data, even zeros.
    for extra in [&b"more"[..], &[0u8; 8], &[0]] {
        let mut trailing = good.clone();
        trailing.extend_from_slice(extra);
        let (offset, what) = malformed(refused(&trailing, &limits));
        assert_eq!(offset, good.len() as u64);
        assert!(what.contains("after the end"), "{what}");
    }
}

#[test]
fn words_out_of_place_are_refused() {
    let limits = UnpackLimits::default();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            Nar::default().str(b"nix-archive-2").0.clone(),
            "expected `nix-archive-1`",
        ),
        (
            Nar::magic().strs(&[b"(", b"type", b"fifo", b")"]).0.clone(),
            "unknown node type `fifo`",
        ),
        (
            Nar::magic()
                .strs(&[b"(", b"type", b"regular", b"data", b"x", b")"])
                .0
                .clone(),
            "expected `contents`",
        ),
        (
            Nar::magic()
                .strs(&[
                    b"(",
                    b"type",
                    b"regular",
                    b"executable",
                    b"yes",
                    b"contents",
                    b"",
                    b")",
                ])
                .0
                .clone(),
            "expected ``",
        ),
        (
            Nar::magic()
                .strs(&[b"(", b"type", b"directory", b"file"])
                .0
                .clone(),
            "expected `entry` or `)`",
        ),
        (
            Nar::magic()
                .strs(&[b"(", b"type", b"symlink", b"target", b"x", b"("])
                .0
                .clone(),
            "expected `)`",
        ),
    ];
    for (bytes, want) in cases {
        let (_, what) = malformed(refused(&bytes, &limits));
        assert!(what.contains(want), "{want}: {what}");
    }
    // An empty target cannot be made into a link.
    let (path, why) = bad_name(refused(
        &Nar::archive(&dir(vec![(b"l", link(b""))])),
        &limits,
    ));
    assert_eq!(path, "l");
    assert!(why.contains("symlink target"), "{why}");
}

#[test]
fn each_limit_refuses_one_past_it_and_accepts_it() {
    let defaults = UnpackLimits::default();
    let chain = |depth: usize| {
        let mut node = file(b"x");
        for _ in 0..depth {
            node = dir(vec![(b"d", node)]);
        }
        Nar::archive(&node)
    };
    let shallow = UnpackLimits {
        max_depth: 5,
        ..defaults
    };
    accepted(&chain(5), &shallow);
    let (what, limit) = too_large(refused(&chain(6), &shallow));
    assert_eq!(limit, 5);
    assert!(what.contains("d/d/d/d/d/d"), "{what}");

    let small = UnpackLimits {
        max_file_bytes: 10,
        ..defaults
    };
    accepted(&Nar::archive(&file(&[7; 10])), &small);
    let (what, limit) = too_large(refused(
        &Nar::archive(&dir(vec![(b"big", file(&[7; 11]))])),
        &small,
    ));
    assert_eq!(limit, 10);
    assert!(what.contains("`big`") && what.contains("11"), "{what}");

    let little = UnpackLimits {
        max_total_bytes: 10,
        ..defaults
    };
    accepted(
        &Nar::archive(&dir(vec![(b"a", file(&[1; 5])), (b"b", file(&[2; 5]))])),
        &little,
    );
    let three = dir(vec![
        (b"a", file(&[1; 5])),
        (b"b", file(&[2; 5])),
        (b"c", file(b"!")),
    ]);
    let (what, limit) = too_large(refused(&Nar::archive(&three), &little));
    assert_eq!(limit, 10);
    assert!(what.contains("`c`"), "{what}");

    let few = UnpackLimits {
        max_entries: 3,
        ..defaults
    };
    accepted(
        &Nar::archive(&dir(vec![(b"a", file(b"1")), (b"b", file(b"2"))])),
        &few,
    );
    let (_, limit) = too_large(refused(&Nar::archive(&three), &few));
    assert_eq!(limit, 3);

    let short = UnpackLimits {
        max_name_len: 4,
        max_target_len: 3,
        ..defaults
    };
    accepted(&Nar::archive(&dir(vec![(b"abcd", link(b"../"))])), &short);
    let (_, limit) = too_large(refused(
        &Nar::archive(&dir(vec![(b"abcde", file(b""))])),
        &short,
    ));
    assert_eq!(limit, 4);
    let (what, limit) = too_large(refused(
        &Nar::archive(&dir(vec![(b"l", link(b"../x"))])),
        &short,
    ));
    assert_eq!(limit, 3);
    assert!(what.contains("`l`"), "{what}");
}
