//! Nothing named `.git` enters the store (issue #17): a `.git/config` in a store entry would
//! run its `core.fsmonitor` command on the next `git status` there. Git trees (built with
//! `git hash-object -t tree --literally`, which `git clone` would refuse), archives and local
//! folders are refused at every depth, in every spelling git refuses, with an error naming
//! the plugin and the path, and nothing written.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::{GitRepo, TestContext, list_dir};

const SKILL: &str = "---\nname: s\ndescription: d\n---\nbody\n";
const HOOK_CONFIG: &str = "[core]\n\tfsmonitor = \"touch /tmp/berth-pwned\"\n";

/// `git hash-object -w --stdin` with `args`, fed `input`; returns the object id.
fn hash_object(repo: &GitRepo, args: &[&str], input: &[u8]) -> String {
    let mut child = Command::new("git")
        .current_dir(&repo.path)
        .args(["hash-object", "-w", "--stdin"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git hash-object");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// A raw tree object of `(mode, name, id)` entries, sorted as git sorts them.
fn tree(repo: &GitRepo, entries: &[(&str, &str, &str)]) -> String {
    let mut raw = Vec::new();
    for (mode, name, id) in entries {
        raw.extend_from_slice(format!("{mode} {name}\0").as_bytes());
        let bytes: Vec<u8> = (0..id.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&id[i..i + 2], 16).expect("hex"))
            .collect();
        raw.extend_from_slice(&bytes);
    }
    hash_object(repo, &["-t", "tree", "--literally"], &raw)
}

/// A repository whose `main` holds `skills/s/SKILL.md` and `<git_name>/config` next to it.
fn repo_with_git_folder(ctx: &TestContext, git_name: &str) -> GitRepo {
    let repo = ctx.repo("evil");
    let skill = hash_object(&repo, &[], SKILL.as_bytes());
    let config = hash_object(&repo, &[], HOOK_CONFIG.as_bytes());
    let s = tree(&repo, &[("100644", "SKILL.md", &skill)]);
    let skills = tree(&repo, &[("40000", "s", &s)]);
    let dotgit = tree(&repo, &[("100644", "config", &config)]);
    let mut top = vec![
        ("40000", git_name, dotgit.as_str()),
        ("40000", "skills", &skills),
    ];
    top.sort_by(|a, b| a.1.cmp(b.1));
    let root = tree(&repo, &top);
    let commit = repo.git(&["commit-tree", &root, "-m", "evil"]);
    repo.git(&["update-ref", "refs/heads/main", &commit]);
    repo
}

fn assert_refused(ctx: &TestContext, args: &[&str], needles: &[&str]) {
    let run = ctx.run(args);
    assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "{args:?}: `{needle}` not in:\n{}",
            run.stderr
        );
    }
    assert!(
        ctx.store_entries().is_empty(),
        "{args:?} wrote {:?}",
        ctx.store_entries()
    );
    assert!(!ctx.lock_path().exists(), "{args:?} wrote a lockfile");
}

#[test]
fn a_git_tree_holding_dot_git_is_refused_in_every_spelling() {
    for name in [".git", ".GIT", ".git.", "git~1"] {
        let ctx = TestContext::new();
        repo_with_git_folder(&ctx, name);
        ctx.write_manifest("[[plugin]]\nsource = \"github:acme/evil\"\n");
        for command in ["lock", "sync"] {
            assert_refused(
                &ctx,
                &["plugins", command],
                &[
                    "github:acme/evil",
                    &format!("`{name}`"),
                    "named like git's own folder",
                ],
            );
        }
        assert!(
            list_dir(&ctx.store.join("tmp"))
                .iter()
                .all(|f| f.ends_with(".lock")),
            "{:?}",
            list_dir(&ctx.store.join("tmp"))
        );
    }
}

#[test]
fn an_archive_holding_dot_git_is_refused() {
    let ctx = TestContext::new();
    let plugin = ctx.root.join("build/evil");
    std::fs::create_dir_all(plugin.join("skills/s/.Git")).expect("mkdir");
    std::fs::write(plugin.join("skills/s/SKILL.md"), SKILL).expect("write");
    std::fs::write(plugin.join("skills/s/.Git/config"), HOOK_CONFIG).expect("write");
    let archive = ctx.root.join("evil.tar.gz");
    std::fs::write(&archive, common::tar_gz(&plugin, "evil")).expect("write");
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"file://{}\"\n",
        archive.display()
    ));
    for command in ["lock", "sync"] {
        assert_refused(
            &ctx,
            &["plugins", command],
            &[
                "evil.tar.gz",
                "`evil/skills/s/.Git`",
                "named like git's own folder",
            ],
        );
    }
}

#[test]
fn a_local_folder_holding_a_nested_dot_git_is_refused_but_its_own_dot_git_is_left_out() {
    let ctx = TestContext::new();
    let plugin = ctx.work.join("plugins/p1");
    std::fs::create_dir_all(plugin.join("skills/s/.git ")).expect("mkdir");
    std::fs::write(plugin.join("skills/s/SKILL.md"), SKILL).expect("write");
    std::fs::write(plugin.join("skills/s/.git /config"), HOOK_CONFIG).expect("write");
    ctx.write_manifest("[[plugin]]\nsource = \"./plugins/p1\"\n");
    for command in ["lock", "sync"] {
        assert_refused(
            &ctx,
            &["plugins", command],
            &[
                "./plugins/p1",
                "skills/s/.git `",
                "named like git's own folder",
            ],
        );
    }
    // The plugin folder's own top-level `.git` (its repository) is not part of the plugin
    // (docs/spec.md section 3), so a plugin kept in its own repository still locks.
    std::fs::remove_dir_all(plugin.join("skills/s/.git ")).expect("rm");
    std::fs::create_dir_all(plugin.join(".git")).expect("mkdir");
    std::fs::write(plugin.join(".git/config"), HOOK_CONFIG).expect("write");
    ctx.ok(&["plugins", "sync"]);
    let entries = ctx.store_entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(
        !ctx.store
            .join("store-v1")
            .join(&entries[0])
            .join(".git")
            .exists(),
        "the top-level .git is left out"
    );
}
