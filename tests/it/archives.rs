//! Archive sources (issue #4): served from 127.0.0.1, locked, synced, verified, and refused
//! when hostile, with nothing left in the store.

use crate::common;

use std::path::Path;

use common::{FileServer, TestContext, copy_tree, fixtures, list_dir, lock_field};
use sha2::Digest as _;

fn sri_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(bytes))
    )
}

/// Nothing of a failed archive may stay: no store entry, no cached download, no staging.
fn assert_nothing_left(ctx: &TestContext) {
    assert!(
        ctx.store_entries().is_empty(),
        "store entries: {:?}",
        ctx.store_entries()
    );
    assert!(
        list_dir(&ctx.store.join("archives-v1")).is_empty(),
        "cached archives left"
    );
    let tmp: Vec<String> = list_dir(&ctx.store.join("tmp"))
        .into_iter()
        .filter(|f| !f.ends_with(".lock"))
        .collect();
    assert!(tmp.is_empty(), "staging left: {tmp:?}");
}

#[test]
fn archives_lock_sync_and_verify_and_hash_like_git_and_local() {
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    let lint = fixtures().join("plugins/lint");
    let tgz = common::tar_gz(&lint, "lint-1.0");
    std::fs::write(served.join("lint-1.0.tar.gz"), &tgz).expect("write");
    std::fs::write(served.join("lint.zip"), common::zip(&lint, "lint-main")).expect("write");
    std::fs::write(served.join("flat.tgz"), common::tar_gz(&lint, "")).expect("write");
    std::fs::write(served.join("lint.tar"), common::tar(&lint, "lint")).expect("write");
    let mono = ctx.root.join("mono");
    copy_tree(&lint, &mono.join("plugins/lint"));
    std::fs::write(mono.join("README.md"), "monorepo\n").expect("write");
    std::fs::write(
        served.join("mono.tar.gz"),
        common::tar_gz(&mono, "mono-1.0"),
    )
    .expect("write");
    std::fs::write(ctx.root.join("local.tar.gz"), &tgz).expect("write");
    let server = FileServer::start(&served, None);
    let git = ctx.repo("lint");
    git.copy_fixture("lint", "");
    git.commit("lint");
    git.tag("v1.0");
    copy_tree(&lint, &ctx.work.join("lint"));
    ctx.write_manifest(&format!(
        r#"[[plugin]]
source = "{tgz}"

[[plugin]]
source = "{zip}"

[[plugin]]
source = "{flat}"

[[plugin]]
source = "{tar}"

[[plugin]]
source = "{mono}"
repo_path = "plugins/lint"

[[plugin]]
source = "file://{file}"

[[plugin]]
source = "github:acme/lint"
ref = "v1.0"

[[plugin]]
source = "./lint"
"#,
        tgz = server.url("lint-1.0.tar.gz"),
        zip = server.url("lint.zip"),
        flat = server.url("flat.tgz"),
        tar = server.url("lint.tar"),
        mono = server.url("mono.tar.gz"),
        file = ctx.root.join("local.tar.gz").display(),
    ));
    ctx.ok(&["plugins", "lock"]);
    let lock = ctx.lock_text();
    let expected = berth_store::hash_path(&lint).expect("hash").to_sri();
    for i in 0..8 {
        assert_eq!(
            lock_field(&lock, i, "hash"),
            Some(expected.clone()),
            "entry {i}:\n{lock}"
        );
        assert_eq!(
            lock_field(&lock, i, "name").as_deref(),
            Some("lint"),
            "entry {i}"
        );
    }
    assert_eq!(lock_field(&lock, 0, "archive_hash"), Some(sri_of(&tgz)));
    assert_eq!(
        lock_field(&lock, 0, "url"),
        Some(server.url("lint-1.0.tar.gz"))
    );
    assert_eq!(
        lock_field(&lock, 4, "repo_path").as_deref(),
        Some("plugins/lint")
    );
    assert!(lock_field(&lock, 0, "rev").is_none());

    ctx.ok(&["plugins", "sync"]);
    assert_eq!(
        ctx.store_entries().len(),
        1,
        "one content, one name: {:?}",
        ctx.store_entries()
    );
    ctx.ok(&["plugins", "verify"]);
    // A fresh store syncs from the server again, checking the archive's hash.
    let fresh = ctx
        .berth()
        .env("BERTH_STORE", ctx.root.join("fresh"))
        .args(["plugins", "sync", "--frozen"])
        .output()
        .expect("run");
    assert!(
        fresh.status.success(),
        "{}",
        String::from_utf8_lossy(&fresh.stderr)
    );
}

#[test]
fn hostile_archives_are_refused_and_leave_nothing() {
    let served_dir = tempfile::tempdir().expect("tempdir");
    let served = served_dir.path();
    let raw_tar = |entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]| -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, kind, data, link) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            if let Some(link) = link {
                header.set_link_name(link).expect("link");
            }
            header.set_cksum();
            builder.append(&header, *data).expect("append");
        }
        let tar = builder.into_inner().expect("tar");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).expect("gzip");
        gz.finish().expect("gzip")
    };
    use tar::EntryType as T;
    std::fs::write(
        served.join("slip.tar.gz"),
        raw_tar(&[
            ("p/ok.md", T::Regular, b"ok", None),
            ("p/../../evil.sh", T::Regular, b"boom", None),
        ]),
    )
    .expect("write");
    std::fs::write(
        served.join("absolute.tar.gz"),
        raw_tar(&[("/tmp/berth-evil", T::Regular, b"boom", None)]),
    )
    .expect("write");
    std::fs::write(
        served.join("escape.tar.gz"),
        raw_tar(&[
            ("p/ok.md", T::Regular, b"ok", None),
            ("p/link", T::Symlink, b"", Some("../../../../etc")),
        ]),
    )
    .expect("write");
    // A zip bomb: 1 GiB of zeros that compresses to about a megabyte.
    {
        use std::io::Write;
        let mut writer =
            zip::ZipWriter::new(std::fs::File::create(served.join("bomb.zip")).expect("create"));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(1))
            .large_file(true);
        writer.start_file("bomb/zeros.bin", options).expect("start");
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..1024 {
            writer.write_all(&chunk).expect("write");
        }
        writer.finish().expect("finish");
    }
    assert!(
        std::fs::metadata(served.join("bomb.zip"))
            .expect("stat")
            .len()
            < 8 << 20
    );
    std::fs::write(
        served.join("cut.tar.gz"),
        common::tar_gz(&fixtures().join("plugins/lint"), "lint"),
    )
    .expect("write");
    let server = FileServer::start(served, None);
    server.truncate("cut.tar.gz");

    for (file, needles) in [
        ("slip.tar.gz", &["`p/../../evil.sh`", "`..`"][..]),
        ("absolute.tar.gz", &["`/tmp/berth-evil`", "absolute"][..]),
        ("escape.tar.gz", &["`p/link`", "leaves the archive"][..]),
        (
            "bomb.zip",
            &["more than 256.0 MiB", "BERTH_ARCHIVE_MAX_BYTES"][..],
        ),
        ("cut.tar.gz", &["truncated"][..]),
    ] {
        let ctx = TestContext::new();
        ctx.write_manifest(&format!("[[plugin]]\nsource = \"{}\"\n", server.url(file)));
        let run = ctx.run(&["plugins", "lock"]);
        assert_eq!(run.code, 1, "{file}: {}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{file}: {}", run.stderr);
        assert!(
            errors[0].contains("plugins.toml:2:"),
            "{file}: {}",
            errors[0]
        );
        for needle in needles {
            assert!(
                errors[0].contains(needle),
                "{file}: `{needle}` not in {}",
                errors[0]
            );
        }
        assert!(!ctx.lock_path().exists(), "{file}: no lockfile");
        assert_nothing_left(&ctx);
        assert!(!Path::new("/tmp/berth-evil").exists());
    }
}

#[test]
fn a_changed_archive_fails_verify_and_a_fresh_sync() {
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    let lint = fixtures().join("plugins/lint");
    let original = common::tar_gz(&lint, "lint");
    std::fs::write(served.join("lint.tar.gz"), &original).expect("write");
    let server = FileServer::start(&served, None);
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\n",
        server.url("lint.tar.gz")
    ));
    ctx.ok(&["plugins", "lock"]);
    ctx.ok(&["plugins", "verify"]);
    // Upstream re-publishes different bytes under the same URL.
    let changed = ctx.root.join("changed");
    copy_tree(&lint, &changed);
    std::fs::write(
        changed.join("skills/lint-rules/SKILL.md"),
        "---\nname: lint-rules\n---\nchanged\n",
    )
    .expect("write");
    let replaced = common::tar_gz(&changed, "lint");
    std::fs::write(served.join("lint.tar.gz"), &replaced).expect("write");
    let verify = ctx.run(&["plugins", "verify"]);
    assert_eq!(verify.code, 1, "{}", verify.stderr);
    let error = verify.errors()[0];
    assert!(
        error.contains("`lint`")
            && error.contains(&sri_of(&original))
            && error.contains(&sri_of(&replaced)),
        "{error}"
    );
    let fresh = ctx
        .berth()
        .env("BERTH_STORE", ctx.root.join("fresh"))
        .args(["plugins", "sync"])
        .output()
        .expect("run");
    assert_eq!(fresh.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&fresh.stderr);
    assert!(
        stderr.contains("archive hash mismatch for `lint`") && stderr.contains(&sri_of(&replaced)),
        "{stderr}"
    );
    assert!(list_dir(&ctx.root.join("fresh/store-v1")).is_empty());
}

#[test]
fn manifest_pins_on_archives_are_checked() {
    let ctx = TestContext::new();
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    let bytes = common::tar_gz(&fixtures().join("plugins/lint"), "lint");
    std::fs::write(served.join("lint.tar.gz"), &bytes).expect("write");
    let server = FileServer::start(&served, None);
    let wrong = "sha256-pQpattmS9VmO3ZIQUFn66az8GSmB4IvYhTTCFn6SUmo=";
    for key in ["archive_hash", "hash"] {
        ctx.write_manifest(&format!(
            "[[plugin]]\nsource = \"{}\"\n{key} = \"{wrong}\"\n",
            server.url("lint.tar.gz")
        ));
        let run = ctx.run(&["plugins", "lock"]);
        assert_eq!(run.code, 1, "{key}: {}", run.stderr);
        assert!(
            run.errors()[0].contains(wrong) && run.errors()[0].contains("mismatch"),
            "{key}: {}",
            run.stderr
        );
        assert!(ctx.store_entries().is_empty());
    }
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\narchive_hash = \"{}\"\n",
        server.url("lint.tar.gz"),
        sri_of(&bytes)
    ));
    ctx.ok(&["plugins", "sync"]);
    ctx.ok(&["plugins", "lock", "--check"]);
}
