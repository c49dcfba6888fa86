//! Binary caches in Nix's format (issue #15): `berth store push` writes one, `sync` with
//! `--substituter` restores from it with upstream gone, a damaged cache is refused for the
//! next substituter or upstream, a kill during push never leaves a narinfo without its
//! NAR, and the real `nix` copies a plugin out of it (`nix copy --from file://`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{GitRepo, TestContext, require_or_skip};

/// A context with one git plugin (`github:acme/review` at `v1`), locked and synced.
fn pushed_project() -> (TestContext, GitRepo) {
    let ctx = TestContext::new();
    let review = ctx.repo("review");
    review.copy_fixture("review", "");
    review.commit("one");
    review.tag("v1");
    ctx.write_manifest("[[plugin]]\nsource = \"github:acme/review\"\nref = \"v1\"\n");
    ctx.ok(&["plugins", "sync"]);
    (ctx, review)
}

fn cache_url(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

/// `berth ARGS plugins sync --frozen` into `store` (a second store of the same project).
fn sync_frozen(ctx: &TestContext, store: &Path, args: &[&str]) -> std::process::Output {
    sync_frozen_command(ctx, store, args)
        .output()
        .expect("run berth")
}

/// The command [`sync_frozen`] runs, for `berth_snapshot!`.
fn sync_frozen_command(ctx: &TestContext, store: &Path, args: &[&str]) -> Command {
    let mut cmd = other_store(ctx, store);
    cmd.args(args).args(["plugins", "sync", "--frozen"]);
    cmd
}

/// `berth` with a second, empty store.
fn other_store(ctx: &TestContext, store: &Path) -> Command {
    let mut cmd = ctx.berth();
    cmd.env("BERTH_STORE", store);
    cmd
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read cache") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(
                    path.strip_prefix(dir)
                        .expect("inside")
                        .display()
                        .to_string(),
                );
            }
        }
    }
    out.sort();
    out
}

/// The narinfo and the NAR file among a one-entry cache's files.
fn cache_files(files: &[String]) -> (&str, &str) {
    let info = files
        .iter()
        .find(|f| f.ends_with(".narinfo"))
        .expect("a narinfo");
    let nar = files
        .iter()
        .find(|f| f.starts_with("nar/"))
        .expect("a NAR file");
    (info, nar)
}

fn entry_dirs(store: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store.join("store-v1"))
        .map(|d| d.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

#[test]
fn a_second_store_restores_from_the_cache_with_upstream_gone() {
    let (ctx, review) = pushed_project();
    let cache = ctx.root.join("cache");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["store", "push", &cache_url(&cache)]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
          Pushed review (867 B)
        Finished 1 pushed, 0 already in `file://[TMP]/cache`
    "#);
    let files = files_under(&cache);
    let (info_name, nar_name) = cache_files(&files);
    // The narinfo, its NAR, `nix-cache-info`, and where this store saw the plugin come
    // from (its pin, for a store that counts a lock's pins only once seen).
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(files.contains(&"nix-cache-info".to_owned()), "{files:?}");
    assert!(files.iter().any(|f| f.starts_with("pins/")), "{files:?}");
    assert!(nar_name.ends_with(".nar.zst"), "{files:?}");
    let narinfo = std::fs::read_to_string(cache.join(info_name)).expect("narinfo");
    let store_path = ctx.ok(&["store", "path", "review"]).stdout;
    assert!(
        narinfo.contains(&format!("StorePath: {}", store_path.trim())),
        "{narinfo}"
    );
    assert!(narinfo.contains("CA: fixed:r:sha256:"), "{narinfo}");
    // Pushing again uploads nothing.
    berth_snapshot!(ctx.filters(), ctx.berth().args(["store", "push", &cache_url(&cache)]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
        Finished 0 pushed, 1 already in `file://[TMP]/cache`
    "#);

    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    let store_b = ctx.root.join("store-b");
    berth_snapshot!(
        ctx.filters(),
        &mut sync_frozen_command(&ctx, &store_b, &["--substituter", &cache_url(&cache)]),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
     Substituted review from file://[TMP]/cache
           Added review [TMP]/store-b/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]
    "#
    );
    let a = entry_dirs(&ctx.store);
    let b = entry_dirs(&store_b);
    assert_eq!(
        a.iter().map(|p| p.file_name()).collect::<Vec<_>>(),
        b.iter().map(|p| p.file_name()).collect::<Vec<_>>()
    );
    assert_eq!(
        berth_store::hash_path(&a[0]).expect("hash"),
        berth_store::hash_path(&b[0]).expect("hash")
    );
    // Without the cache and without upstream, the same sync fails.
    let store_c = ctx.root.join("store-c");
    let out = sync_frozen(&ctx, &store_c, &[]);
    assert!(!out.status.success());
}

#[test]
fn a_damaged_cache_is_refused_and_the_next_substituter_or_upstream_is_used() {
    let (ctx, _review) = pushed_project();
    let good = ctx.root.join("good");
    ctx.ok(&["store", "push", &cache_url(&good)]);
    let files = files_under(&good);
    let (info_name, nar_name) = cache_files(&files);

    // 1. A NAR file whose bytes were changed in place.
    let bad_nar = ctx.root.join("bad-nar");
    common::copy_tree(&good, &bad_nar);
    let nar = bad_nar.join(nar_name);
    let mut bytes = std::fs::read(&nar).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&nar, bytes).expect("write");
    // 2. A narinfo that claims another hash for the same store path.
    let bad_info = ctx.root.join("bad-info");
    common::copy_tree(&good, &bad_info);
    let text = std::fs::read_to_string(bad_info.join(info_name)).expect("read");
    let line = text
        .lines()
        .find(|l| l.starts_with("NarHash: sha256:"))
        .expect("NarHash");
    let mut forged = line.to_owned();
    let last = forged.pop().expect("a character");
    forged.push(if last == '0' { '1' } else { '0' });
    std::fs::write(bad_info.join(info_name), text.replace(line, &forged)).expect("write");
    // 3. A narinfo whose `NarSize` is not the NAR's: the error shows both sizes.
    let bad_size = ctx.root.join("bad-size");
    common::copy_tree(&good, &bad_size);
    let size_line = text
        .lines()
        .find(|l| l.starts_with("NarSize: "))
        .expect("NarSize");
    let size: u64 = size_line["NarSize: ".len()..].parse().expect("a size");
    std::fs::write(
        bad_size.join(info_name),
        text.replace(size_line, &format!("NarSize: {}", size + 8)),
    )
    .expect("write");

    // The NarSize the narinfo claims, and the NAR's, in the error.
    let mut filters = ctx.filters();
    filters.push((format!(r"\b{}\b", size + 8), "[CLAIMED SIZE]".to_owned()));
    filters.push((format!(r"\b{size}\b"), "[SIZE]".to_owned()));
    let mut outputs = Vec::new();
    for (n, broken) in [(0, &bad_nar), (1, &bad_info), (2, &bad_size)] {
        // Broken first, good second: the good one is used, after a warning naming the
        // broken cache (and why, for a narinfo).
        let store = ctx.root.join(format!("store-next-{n}"));
        let (next, _) = common::run_and_format(
            other_store(&ctx, &store)
                .env(
                    "BERTH_SUBSTITUTERS",
                    format!("{} {}", cache_url(broken), cache_url(&good)),
                )
                .args(["plugins", "sync", "--frozen"]),
            &filters,
        );
        // Broken only: upstream is used, and the entry is still right.
        let store = ctx.root.join(format!("store-up-{n}"));
        let (upstream, _) = common::run_and_format(
            &mut sync_frozen_command(&ctx, &store, &["--substituter", &cache_url(broken)]),
            &filters,
        );
        outputs.push(format!(
            "{n}, then the good cache:\n{next}\n{n} alone:\n{upstream}"
        ));
        let verify = other_store(&ctx, &store)
            .args(["store", "verify"])
            .output()
            .expect("verify");
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stderr)
        );
        // Nothing half-unpacked is left behind.
        let tmp: Vec<_> = std::fs::read_dir(store.join("tmp"))
            .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(tmp.is_empty(), "{tmp:?}");
    }
    insta::assert_snapshot!(outputs.join("\n"), @r#"
    0, then the good cache:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/bad-nar`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` names a NAR that hashes to `sha256-EIvBhFxV8lsrYDBZyG9v1EVcvyKen2TqpTaA2XB0M9E=`, not `sha256-WClY/a06SAY6h9ij+LUyXAqkWHzRCEzVncvlQ6btF3g=`; trying the next substituter, then upstream
     Substituted review from file://[TMP]/good
           Added review [TMP]/store-next-0/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]

    0 alone:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/bad-nar`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` names a NAR that hashes to `sha256-EIvBhFxV8lsrYDBZyG9v1EVcvyKen2TqpTaA2XB0M9E=`, not `sha256-WClY/a06SAY6h9ij+LUyXAqkWHzRCEzVncvlQ6btF3g=`; trying the next substituter, then upstream
           Added review [TMP]/store-up-0/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]

    1, then the good cache:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/bad-info`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` says the NAR hashes to `sha256-QClY/a06SAY6h9ij+LUyXAqkWHzRCEzVncvlQ6btF3g=`, not `sha256-WClY/a06SAY6h9ij+LUyXAqkWHzRCEzVncvlQ6btF3g=`; trying the next substituter, then upstream
     Substituted review from file://[TMP]/good
           Added review [TMP]/store-next-1/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]

    1 alone:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/bad-info`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` says the NAR hashes to `sha256-QClY/a06SAY6h9ij+LUyXAqkWHzRCEzVncvlQ6btF3g=`, not `sha256-WClY/a06SAY6h9ij+LUyXAqkWHzRCEzVncvlQ6btF3g=`; trying the next substituter, then upstream
           Added review [TMP]/store-up-1/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]

    2, then the good cache:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/bad-size`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` names a NAR of [SIZE] bytes, but its `NarSize` is [CLAIMED SIZE] bytes; trying the next substituter, then upstream
     Substituted review from file://[TMP]/good
           Added review [TMP]/store-next-2/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]

    2 alone:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/bad-size`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` names a NAR of [SIZE] bytes, but its `NarSize` is [CLAIMED SIZE] bytes; trying the next substituter, then upstream
           Added review [TMP]/store-up-2/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]
    "#);
}

#[test]
fn a_kill_during_push_leaves_no_narinfo_without_its_nar() {
    let (ctx, review) = pushed_project();
    let cache = ctx.root.join("cache");
    let mut cmd = ctx.berth();
    cmd.args(["store", "push", &cache_url(&cache)]);
    common::kill_at_step(&mut cmd, berth_store::fault::PUSH_BEFORE_NARINFO);
    let files = files_under(&cache);
    assert!(
        files.iter().all(|f| !f.ends_with(".narinfo")),
        "killed before the narinfo: {files:?}"
    );
    assert!(files.iter().any(|f| f.starts_with("nar/")), "{files:?}");
    // A reader of the half-written cache does not see the plugin, and falls back upstream.
    let store_b = ctx.root.join("store-b");
    berth_snapshot!(
        ctx.filters(),
        &mut sync_frozen_command(&ctx, &store_b, &["--substituter", &cache_url(&cache)]),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
           Added review [TMP]/store-b/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]
    "#
    );
    // The push is finished by running it again; then the cache restores alone.
    ctx.ok(&["store", "push", &cache_url(&cache)]);
    assert!(files_under(&cache).iter().any(|f| f.ends_with(".narinfo")));
    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    let store_c = ctx.root.join("store-c");
    let out = sync_frozen(&ctx, &store_c, &["--substituter", &cache_url(&cache)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn nix(home: &Path, args: &[&str]) -> Option<std::process::Output> {
    match Command::new("nix")
        .args(["--extra-experimental-features", "nix-command"])
        .args(args)
        .env("HOME", home)
        .output()
    {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("could not run nix: {e}"),
    }
}

#[test]
fn nix_copies_a_plugin_out_of_a_cache_berth_wrote() {
    let (ctx, _review) = pushed_project();
    let cache = ctx.root.join("cache");
    ctx.ok(&["store", "push", &cache_url(&cache)]);
    let store_path = ctx
        .ok(&["store", "path", "review"])
        .stdout
        .trim()
        .to_owned();
    // Nix's own store for this test, under its temporary folder.
    let nix_root = ctx.root.join("nix-root");
    let to = format!("local?root={}", nix_root.display());
    let Some(out) = nix(
        &ctx.home,
        &[
            "copy",
            "--from",
            &cache_url(&cache),
            "--to",
            &to,
            &store_path,
        ],
    ) else {
        require_or_skip("nix", "install it with `apt-get install nix-bin`");
        return;
    };
    assert!(
        out.status.success(),
        "nix copy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied = nix_root.join(store_path.trim_start_matches('/'));
    let hashed = Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command",
            "hash",
            "path",
        ])
        .arg(&copied)
        .env("HOME", &ctx.home)
        .output()
        .expect("nix hash path");
    let lock_hash = common::lock_field(&ctx.lock_text(), 0, "hash").expect("hash");
    assert_eq!(String::from_utf8_lossy(&hashed.stdout).trim(), lock_hash);

    // And the path berth names is the one Nix gives the same folder.
    let folder = ctx.root.join("add").join("review");
    std::fs::create_dir_all(folder.parent().expect("parent")).expect("mkdir");
    common::copy_tree(&entry_dirs(&ctx.store)[0], &folder);
    let added = Command::new("nix-store")
        .args(["--store", &to, "--add-fixed", "--recursive", "sha256"])
        .arg(&folder)
        .env("HOME", &ctx.home)
        .output()
        .expect("nix-store --add-fixed");
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&added.stdout).trim(), store_path);
}

#[test]
fn verify_repair_restores_a_corrupt_entry_from_the_cache() {
    use std::os::unix::fs::PermissionsExt;
    let (ctx, review) = pushed_project();
    let cache = ctx.root.join("cache");
    ctx.ok(&["store", "push", &cache_url(&cache)]);
    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    let entry = entry_dirs(&ctx.store)[0].clone();
    let skill = entry.join("skills/code-review/SKILL.md");
    for dir in [
        &entry,
        &entry.join("skills"),
        &entry.join("skills/code-review"),
    ] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::set_permissions(&skill, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(&skill, "tampered\n").expect("tamper");
    // It reports the damage (exit 1) and puts the right bytes back from the cache.
    berth_snapshot!(
        ctx.filters(),
        ctx.berth().args([
            "--substituter",
            &cache_url(&cache),
            "store",
            "verify",
            "--repair",
        ]),
        @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: store entry `0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review` is corrupt: it hashes to `sha256-E54N/OYrW2kdyAyVBxRZIhlt2pr+8FTfIX+16uJ0Ny8=`
     Substituted review from file://[TMP]/cache
    "#
    );
    ctx.ok(&["store", "verify"]);
    assert_ne!(
        std::fs::read_to_string(&skill).expect("restored"),
        "tampered\n"
    );
}

#[test]
fn signed_narinfos_are_required_when_keys_are_trusted_and_nix_signs_alike() {
    use std::os::unix::fs::PermissionsExt;
    let (ctx, _review) = pushed_project();
    let key = ctx.root.join("cache.key");
    let key_arg = key.to_str().expect("utf-8");
    let public = ctx
        .ok(&[
            "store",
            "sign-key",
            "generate",
            "berth-test-1",
            "--secret-key-file",
            key_arg,
        ])
        .stdout
        .trim()
        .to_owned();
    assert!(public.starts_with("berth-test-1:"), "{public}");
    let mode = std::fs::metadata(&key)
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // The key file is never overwritten.
    let again = ctx.run(&[
        "store",
        "sign-key",
        "generate",
        "x",
        "--secret-key-file",
        key_arg,
    ]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    let signed = ctx.root.join("signed");
    ctx.ok(&["store", "push", &cache_url(&signed), "--sign-key", key_arg]);
    let unsigned = ctx.root.join("unsigned");
    ctx.ok(&["store", "push", &cache_url(&unsigned)]);
    let files = files_under(&signed);
    let (info_name, _) = cache_files(&files);
    let narinfo = std::fs::read_to_string(signed.join(info_name)).expect("narinfo");
    let sig = narinfo
        .lines()
        .find_map(|l| l.strip_prefix("Sig: "))
        .expect("a Sig line")
        .to_owned();
    assert!(sig.starts_with("berth-test-1:"), "{narinfo}");

    let other_key = ctx.root.join("other.key");
    let other = ctx
        .ok(&[
            "store",
            "sign-key",
            "generate",
            "berth-test-1",
            "--secret-key-file",
            other_key.to_str().expect("utf-8"),
        ])
        .stdout
        .trim()
        .to_owned();
    // Signed and trusted: substituted; signed by another key or unsigned: refused with a
    // warning, and added from upstream.
    let mut outputs = Vec::new();
    for (n, (cache, trusted)) in [(&signed, &public), (&signed, &other), (&unsigned, &public)]
        .into_iter()
        .enumerate()
    {
        let store = ctx.root.join(format!("store-{n}"));
        let (snapshot, _) = common::run_and_format(
            &mut sync_frozen_command(
                &ctx,
                &store,
                &[
                    "--substituter",
                    &cache_url(cache),
                    "--trusted-public-key",
                    trusted,
                ],
            ),
            &ctx.filters(),
        );
        outputs.push(format!("{n}:\n{snapshot}"));
    }
    insta::assert_snapshot!(outputs.join("\n"), @r#"
    0:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
     Substituted review from file://[TMP]/signed
           Added review [TMP]/store-0/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]

    1:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/signed`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` has no valid signature by a trusted key (`--trusted-public-key`); trying the next substituter, then upstream
           Added review [TMP]/store-1/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]

    2:
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    warning: plugin `review`: cache `file://[TMP]/unsigned`: `587fwbqa2za14yvj858km4z7w7zgzgmq.narinfo` has no valid signature by a trusted key (`--trusted-public-key`); trying the next substituter, then upstream
           Added review [TMP]/store-2/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]
    "#);

    // Nix reads berth's key and makes the same signature over the same narinfo.
    let Some(converted) = Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command",
            "key",
            "convert-secret-to-public",
        ])
        .stdin(std::fs::File::open(&key).expect("key"))
        .env("HOME", &ctx.home)
        .output()
        .ok()
    else {
        require_or_skip("nix", "install it with `apt-get install nix-bin`");
        return;
    };
    assert!(
        converted.status.success(),
        "{}",
        String::from_utf8_lossy(&converted.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&converted.stdout).trim(), public);
    let store_path = ctx
        .ok(&["store", "path", "review"])
        .stdout
        .trim()
        .to_owned();
    let by_nix = ctx.root.join("by-nix");
    common::copy_tree(&unsigned, &by_nix);
    let out = Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command",
            "store",
            "sign",
        ])
        .args([
            "--store",
            &cache_url(&by_nix),
            "--key-file",
            key_arg,
            &store_path,
        ])
        .env("HOME", &ctx.home)
        .output()
        .expect("nix store sign");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nix_info = std::fs::read_to_string(by_nix.join(info_name)).expect("narinfo");
    assert!(
        nix_info.contains(&format!("Sig: {sig}")),
        "berth: {sig}\nnix:\n{nix_info}"
    );
}

#[test]
fn an_http_cache_is_read_only_and_substitutes() {
    let (ctx, review) = pushed_project();
    let cache = ctx.root.join("cache");
    ctx.ok(&["store", "push", &cache_url(&cache)]);
    let server = common::FileServer::start(&cache, None);
    let url = server.url("");
    berth_snapshot!(ctx.filters(), ctx.berth().args(["store", "push", &url]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: cache `http://127.0.0.1:[PORT]/`: an http(s) cache is read-only; push to the folder or bucket behind it (`file://` or `s3://`)
    "#);
    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    let store = ctx.root.join("store-b");
    berth_snapshot!(
        ctx.filters(),
        &mut sync_frozen_command(&ctx, &store, &["--substituter", &url]),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
     Substituted review from http://127.0.0.1:[PORT]/
           Added review [TMP]/store-b/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]
    "#
    );
    // `--offline` does not use a cache that needs the network.
    let store = ctx.root.join("store-c");
    berth_snapshot!(
        ctx.filters(),
        other_store(&ctx, &store).args([
            "--substituter",
            &url,
            "plugins",
            "sync",
            "--frozen",
            "--offline",
        ]),
        @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: plugin `review`: could not fetch from `file://[TMP]/upstream/acme/review.git`: "[TMP]/upstream/acme/review.git" does not appear to be a git repository: Could not retrieve metadata of "[TMP]/upstream/acme/review.git": No such file or directory (os error 2)
    "#
    );
}

#[test]
fn berth_substitutes_from_a_cache_nix_itself_filled() {
    let (ctx, review) = pushed_project();
    // Nix adds the same folder to a store of its own and copies it to a cache, compressed
    // with xz as `nix copy` does by default.
    let folder = ctx.root.join("add").join("review");
    std::fs::create_dir_all(folder.parent().expect("parent")).expect("mkdir");
    common::copy_tree(&entry_dirs(&ctx.store)[0], &folder);
    let nix_store = format!("local?root={}", ctx.root.join("nix-root").display());
    let Ok(added) = Command::new("nix-store")
        .args([
            "--store",
            &nix_store,
            "--add-fixed",
            "--recursive",
            "sha256",
        ])
        .arg(&folder)
        .env("HOME", &ctx.home)
        .output()
    else {
        require_or_skip("nix", "install it with `apt-get install nix-bin`");
        return;
    };
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let path = String::from_utf8_lossy(&added.stdout).trim().to_owned();
    let cache = ctx.root.join("nix-cache");
    let copied = Command::new("nix")
        .args(["--extra-experimental-features", "nix-command", "copy"])
        .args(["--from", &nix_store, "--to", &cache_url(&cache), &path])
        .env("HOME", &ctx.home)
        .output()
        .expect("nix copy");
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
    assert!(
        files_under(&cache).iter().any(|f| f.ends_with(".nar.xz")),
        "{:?}",
        files_under(&cache)
    );
    std::fs::remove_dir_all(&review.path).expect("upstream gone");
    let store = ctx.root.join("store-b");
    berth_snapshot!(
        ctx.filters(),
        &mut sync_frozen_command(&ctx, &store, &["--substituter", &cache_url(&cache)]),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
     Substituted review from file://[TMP]/nix-cache
           Added review [TMP]/store-b/store-v1/0y0pxnk47rfbkpalq26igica82jw6aszi8yqhwx0cj1smpymhaaq-review
          Synced 1 plugin (1 added) in [TIME]
    "#
    );
}

#[test]
fn an_empty_trusted_key_is_an_error_not_checking_turned_off() {
    let (ctx, _review) = pushed_project();
    let unsigned = ctx.root.join("unsigned");
    ctx.ok(&["store", "push", &cache_url(&unsigned)]);
    // The attack: an unsigned cache, and a key setting that is there but empty. Each is
    // refused, nothing substituted.
    let mut outputs = Vec::new();
    for (n, (option, variable)) in [(Some(""), None), (None, Some(" ")), (None, Some(""))]
        .into_iter()
        .enumerate()
    {
        let store = ctx.root.join(format!("store-{n}"));
        let mut cmd = other_store(&ctx, &store);
        cmd.args(["--substituter", &cache_url(&unsigned)]);
        if let Some(key) = option {
            cmd.args(["--trusted-public-key", key]);
        }
        if let Some(keys) = variable {
            cmd.env("BERTH_TRUSTED_PUBLIC_KEYS", keys);
        }
        let (snapshot, _) =
            common::run_and_format(cmd.args(["plugins", "sync", "--frozen"]), &ctx.filters());
        outputs.push(format!("{n}:\n{snapshot}"));
        assert!(entry_dirs(&store).is_empty(), "{n}: nothing was added");
    }
    insta::assert_snapshot!(outputs.join("\n"), @r#"
    0:
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `--trusted-public-key` / `$BERTH_TRUSTED_PUBLIC_KEYS` is given but holds no key, which would turn signature checking off; give a key as `NAME:BASE64` (`berth store sign-key generate` prints one), or leave both unset to accept unsigned narinfos

    1:
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `--trusted-public-key` / `$BERTH_TRUSTED_PUBLIC_KEYS` is given but holds no key, which would turn signature checking off; give a key as `NAME:BASE64` (`berth store sign-key generate` prints one), or leave both unset to accept unsigned narinfos

    2:
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `--trusted-public-key` / `$BERTH_TRUSTED_PUBLIC_KEYS` is given but holds no key, which would turn signature checking off; give a key as `NAME:BASE64` (`berth store sign-key generate` prints one), or leave both unset to accept unsigned narinfos
    "#);
}
