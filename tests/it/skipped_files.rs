//! `lock` warns about the files the runtime will skip (a symlink that leaves the plugin's
//! folder, a file over `berth_plugin::MAX_FILE_BYTES`), naming plugin and file, for the
//! entries it resolves; the lock still succeeds. An unchanged lock warns of nothing and
//! touches no network.

use crate::common;

use berth_plugin::MAX_FILE_BYTES;
use common::{FileServer, GitHttpServer, Run, TestContext, tar_gz};

const SKILL: &str = "---\nname: ok\ndescription: a skill\n---\nBody.\n";

fn leaving(plugin: &str, path: &str) -> String {
    format!(
        "warning: plugin `{plugin}`: `{path}` is a symlink that leaves the plugin's folder; berth never reads through it, so it is skipped"
    )
}

fn too_large(plugin: &str, path: &str, bytes: u64) -> String {
    format!(
        "warning: plugin `{plugin}`: `{path}` is {bytes} bytes, over the {} MiB a plugin file may have; it is skipped",
        MAX_FILE_BYTES >> 20
    )
}

fn lock(ctx: &TestContext, git: &GitHttpServer) -> Run {
    Run::from(
        ctx.berth()
            .env("BERTH_GITHUB_URL", git.url())
            .args(["plugins", "lock"])
            .output()
            .expect("run berth"),
    )
}

#[test]
fn lock_warns_of_links_out_and_large_files_once() {
    let ctx = TestContext::new();
    // A git plugin: a skill that is a link out of the plugin (still inside the repository),
    // a chain that leaves, a link that stays, and a file over the limit.
    let repo = ctx.repo("tools");
    repo.write("plugins/g/skills/ok/SKILL.md", SKILL);
    repo.write("secret.md", "not the plugin's\n");
    let link = |rel: &str, target: &str| {
        let path = repo.path.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, path).expect("symlink");
    };
    link("plugins/g/skills/leak/SKILL.md", "../../../../secret.md");
    link("plugins/g/skills/up", "..");
    link("plugins/g/skills/chain", "up/../x");
    link("plugins/g/skills/same", "ok");
    let big = std::fs::File::create(repo.path.join("plugins/g/blob.bin")).expect("create");
    big.set_len(MAX_FILE_BYTES + 1).expect("grow");
    drop(big);
    repo.commit("plugin g");
    // A local plugin with an absolute link and one through `..` that leaves.
    let local = ctx.work.join("house");
    std::fs::create_dir_all(local.join("skills/ok")).expect("mkdir");
    std::fs::write(local.join("skills/ok/SKILL.md"), SKILL).expect("write");
    std::os::unix::fs::symlink("/etc/passwd", local.join("skills/passwords.md")).expect("link");
    std::fs::create_dir_all(local.join("skills/leak")).expect("mkdir");
    std::os::unix::fs::symlink("../../../outside.md", local.join("skills/leak/SKILL.md"))
        .expect("link");
    ctx.write_manifest(
        "[[plugin]]\nsource = \"github:acme/tools\"\nrepo_path = \"plugins/g\"\n\n[[plugin]]\nsource = \"./house\"\n",
    );
    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("http.log"), &[]);

    let run = lock(&ctx, &git);
    assert_eq!(
        run.code, 0,
        "warnings do not fail the lock:\n{}",
        run.stderr
    );
    assert!(ctx.lock_path().exists(), "the lock is written");
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    let mut expected = vec![
        too_large("g", "blob.bin", MAX_FILE_BYTES + 1),
        leaving("g", "skills/chain"),
        leaving("g", "skills/leak/SKILL.md"),
        leaving("house", "skills/leak/SKILL.md"),
        leaving("house", "skills/passwords.md"),
    ];
    let mut got: Vec<String> = warnings.iter().map(|w| (*w).to_owned()).collect();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "{}", run.stderr);

    // Nothing changed: the pins are kept, nothing is fetched and nothing is warned again.
    let requests = git.requests().len();
    let again = lock(&ctx, &git);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("warning:"), "{}", again.stderr);
    assert_eq!(git.requests().len(), requests, "no network");

    // A changed local folder is resolved again, and warned about again.
    std::fs::write(local.join("skills/ok/SKILL.md"), format!("{SKILL}More.\n")).expect("write");
    let changed = lock(&ctx, &git);
    assert_eq!(changed.code, 0, "{}", changed.stderr);
    assert!(
        changed
            .stderr
            .contains(&leaving("house", "skills/passwords.md"))
            && !changed.stderr.contains("plugin `g`"),
        "{}",
        changed.stderr
    );
    assert_eq!(git.requests().len(), requests, "still no network");
}

#[test]
fn an_archive_with_a_large_file_locks_with_a_warning() {
    let ctx = TestContext::new();
    let tree = ctx.root.join("tree");
    std::fs::create_dir_all(tree.join("skills/ok")).expect("mkdir");
    std::fs::write(tree.join("skills/ok/SKILL.md"), SKILL).expect("write");
    // Written out, not sparse: the tar builder would make a GNU sparse entry of a hole.
    let size = usize::try_from(MAX_FILE_BYTES + 5).expect("fits");
    std::fs::write(tree.join("skills/ok/data.bin"), vec![b'x'; size]).expect("write");
    let served = ctx.root.join("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::fs::write(served.join("big-1.0.tar.gz"), tar_gz(&tree, "big-1.0")).expect("write");
    let server = FileServer::start(&served, None);
    ctx.write_manifest(&format!(
        "[[plugin]]\nsource = \"{}\"\n",
        server.url("big-1.0.tar.gz")
    ));
    let run = ctx.ok(&["plugins", "lock"]);
    assert!(
        run.stderr.contains(&too_large(
            "big-1.0",
            "skills/ok/data.bin",
            MAX_FILE_BYTES + 5
        )),
        "{}",
        run.stderr
    );
}
