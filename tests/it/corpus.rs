//! The bad-input corpus (`fixtures/bad-input/*/case.toml`): malformed manifests and
//! lockfiles, hostile archives and hostile plugin trees. Each case is copied into a fresh
//! project, its archives are served from 127.0.0.1 (`{SERVER}` in its files), its `setup`
//! commands run, and then its `run` command must exit with `exit`, print every `stderr`
//! and `stdout` fragment, and leave the project's files and the store exactly as they
//! were (lock files under `locks/`, the views of `views-v1/` (links derived from
//! entries) and an empty `tmp/` aside). A failure must be one
//! `error:` line. See `fixtures/bad-input/README.md`.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::{FileServer, TestContext, copy_tree, fixtures};

fn corpus() -> PathBuf {
    fixtures().join("bad-input")
}

fn strings(table: &toml::Table, key: &str) -> Vec<String> {
    table
        .get(key)
        .and_then(toml::Value::as_array)
        .map_or_else(Vec::new, |items| {
            items
                .iter()
                .map(|v| v.as_str().expect("strings").to_owned())
                .collect()
        })
}

/// Every path under `dir` with what identifies its content: kind, mode, bytes or target.
fn snapshot(dir: &Path, skip: &[&str]) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, skip: &[&str], out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(root).expect("under root").to_owned();
            if skip.iter().any(|s| rel.starts_with(s)) {
                continue;
            }
            // The store's `tmp` folder may come into being (empty); what is in it counts.
            let bookkeeping = rel == Path::new("tmp");
            let meta = std::fs::symlink_metadata(&path).expect("lstat");
            let kind = meta.file_type();
            let mode = meta.permissions().mode() & 0o777;
            let what = if kind.is_symlink() {
                format!(
                    "link -> {}",
                    std::fs::read_link(&path).expect("readlink").display()
                )
            } else if kind.is_dir() {
                walk(root, &path, skip, out);
                format!("dir {mode:o}")
            } else if kind.is_fifo() {
                "fifo".to_owned()
            } else {
                let bytes = std::fs::read(&path).expect("read");
                format!(
                    "file {mode:o} {} {:x?}",
                    bytes.len(),
                    &bytes[..bytes.len().min(64)]
                )
            };
            if !bookkeeping {
                out.insert(rel, what);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, skip, &mut out);
    out
}

fn substitute(dir: &Path, server: &str) {
    for name in ["plugins.toml", "plugins.lock"] {
        let path = dir.join(name);
        if let Ok(bytes) = std::fs::read(&path) {
            // Byte-wise: some manifests are deliberately not UTF-8.
            let text = String::from_utf8_lossy(&bytes);
            if text.contains("{SERVER}") {
                std::fs::write(&path, text.replace("{SERVER}", server)).expect("write");
            }
        }
    }
}

fn run_case(name: &str) -> Result<(), String> {
    let case_dir = corpus().join(name);
    let case: toml::Table = std::fs::read_to_string(case_dir.join("case.toml"))
        .map_err(|e| format!("case.toml: {e}"))?
        .parse()
        .map_err(|e| format!("case.toml: {e}"))?;
    let ctx = TestContext::new();
    copy_tree(&case_dir, &ctx.work);
    std::fs::remove_file(ctx.work.join("case.toml")).expect("remove case.toml");
    let server = FileServer::start(&case_dir.join("serve"), None);
    substitute(&ctx.work, server.url("").trim_end_matches('/'));
    for rel in strings(&case, "huge") {
        let path = ctx.work.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        // One byte over the runtime's limit, sparse: the size is what is checked.
        let file = std::fs::File::create(&path).expect("huge file");
        file.set_len(berth_plugin::MAX_FILE_BYTES + 1)
            .expect("huge file");
    }
    for rel in strings(&case, "fifo") {
        let status = std::process::Command::new("mkfifo")
            .arg(ctx.work.join(rel))
            .status()
            .expect("mkfifo");
        assert!(status.success());
    }
    let env: Vec<(String, String)> =
        case.get("env")
            .and_then(toml::Value::as_table)
            .map_or_else(Vec::new, |t| {
                t.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().expect("env strings").to_owned()))
                    .collect()
            });
    let berth = |args: &[String]| {
        let mut cmd = ctx.berth();
        cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        common::Run::from(cmd.output().expect("run berth"))
    };
    if let Some(setup) = case.get("setup").and_then(toml::Value::as_array) {
        for step in setup {
            let args: Vec<String> = step
                .as_array()
                .expect("setup steps are lists")
                .iter()
                .map(|a| a.as_str().expect("strings").to_owned())
                .collect();
            let run = berth(&args);
            if run.code != 0 {
                return Err(format!("setup {args:?} failed:\n{}", run.stderr));
            }
        }
    }

    let work_before = snapshot(&ctx.work, &[]);
    let store_before = snapshot(&ctx.store, &["locks", "views-v1"]);
    let args = strings(&case, "run");
    let run = berth(&args);
    let exit = case
        .get("exit")
        .and_then(toml::Value::as_integer)
        .expect("exit");
    let mut problems = Vec::new();
    if i64::from(run.code) != exit {
        problems.push(format!("exit {} instead of {exit}", run.code));
    }
    for fragment in strings(&case, "stderr") {
        if !run.stderr.contains(&fragment) {
            problems.push(format!("stderr lacks `{fragment}`"));
        }
    }
    for fragment in strings(&case, "stdout") {
        if !run.stdout.contains(&fragment) {
            problems.push(format!("stdout lacks `{fragment}`"));
        }
    }
    if exit != 0 && run.errors().len() != 1 {
        problems.push("not exactly one `error:` line".to_owned());
    }
    if run.stderr.contains("panicked") || run.stderr.contains("RUST_BACKTRACE") {
        problems.push("berth panicked".to_owned());
    }
    let work_after = snapshot(&ctx.work, &[]);
    if work_after != work_before {
        problems.push(format!(
            "project files changed: {}",
            diff(&work_before, &work_after)
        ));
    }
    let store_after = snapshot(&ctx.store, &["locks", "views-v1"]);
    if store_after != store_before {
        problems.push(format!(
            "store changed: {}",
            diff(&store_before, &store_after)
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n  stdout:\n{}\n  stderr:\n{}",
            problems.join("; "),
            run.stdout.trim_end(),
            run.stderr.trim_end()
        ))
    }
}

fn diff(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> String {
    let mut out = Vec::new();
    for (path, what) in after {
        match before.get(path) {
            None => out.push(format!("+{}", path.display())),
            Some(old) if old != what => out.push(format!("~{}", path.display())),
            _ => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("-{}", path.display()));
    }
    out.join(" ")
}

#[test]
fn every_bad_input_gets_its_error_and_changes_nothing() {
    let mut cases: Vec<String> = std::fs::read_dir(corpus())
        .expect("fixtures/bad-input")
        .map(|e| e.expect("entry"))
        .filter(|e| e.path().join("case.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    assert!(cases.len() >= 25, "the corpus shrank: {cases:?}");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|name| run_case(name).err().map(|e| format!("{name}: {e}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
