//! `berth materialize` touches nothing of the user's (F18–F23 of
//! `shared/security/review-and-materialize-attacks.md`, issue #40): a name from a plugin
//! never leaves DIR, a folder, extension or link of the user's is never removed or
//! written through (`--force` moves it aside, and says so), a committed settings link is
//! never read, `--check` sees modes, and a version is never a path.

use crate::common;

use std::path::{Path, PathBuf};

use common::TestContext;

/// Writes a local plugin `NAME` under the project, with `plugin.json` (`version`) and a
/// skill `r`; returns its folder.
fn plugin(ctx: &TestContext, name: &str, version: &str) -> PathBuf {
    let dir = ctx.work.join("plugins").join(name);
    std::fs::create_dir_all(dir.join(".claude-plugin")).expect("mkdir");
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        format!("{{\"name\": \"{name}\", \"version\": \"{version}\"}}\n"),
    )
    .expect("write");
    write(
        &dir,
        "skills/r/SKILL.md",
        "---\nname: r\ndescription: d\n---\nb\n",
    );
    dir
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Locks the plugins `names` (under `plugins/`) and syncs them.
fn lock(ctx: &TestContext, names: &[&str]) {
    let manifest: String = names
        .iter()
        .map(|n| format!("[[plugin]]\nsource = \"./plugins/{n}\"\n\n"))
        .collect();
    ctx.write_manifest(&manifest);
    ctx.ok(&["plugins", "sync"]);
}

/// Every path under `dir` with what it holds (a link's target, a file's mode and text, a
/// folder), links never followed.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        use std::os::unix::fs::PermissionsExt as _;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("lstat");
            let what = if meta.file_type().is_symlink() {
                format!(
                    "-> {}",
                    std::fs::read_link(&path).expect("readlink").display()
                )
            } else if meta.is_dir() {
                walk(root, &path, out);
                "folder".to_owned()
            } else {
                format!(
                    "{:o} {}",
                    meta.permissions().mode() & 0o7777,
                    std::fs::read_to_string(&path).unwrap_or_default()
                )
            };
            let rel = path
                .strip_prefix(root)
                .expect("inside")
                .display()
                .to_string();
            out.push(format!("{rel}: {what}"));
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn f18_a_skill_name_never_leads_out_of_dir() {
    let ctx = TestContext::new();
    let dir = plugin(&ctx, "evilskill", "1.0.0");
    let outside = ctx.root.join("outside");
    write(&outside, "victim/Documents/thesis.txt", "precious\n");
    write(&outside, "victimhome/.bashrc", "# mine\n");
    let escape = format!("../../../../../../..{}/ESCAPE-rel", outside.display());
    for (skill, name) in [
        ("a", escape.as_str()),
        ("b", &format!("{}/victim/Documents", outside.display())),
        ("c", &format!("{}/victimhome", outside.display())),
        ("d", ".."),
    ] {
        write(
            &dir,
            &format!("skills/{skill}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: d\n---\nb\n"),
        );
    }
    write(&dir, "skills/c/.bashrc", "touch PWNED\n");
    // A command whose flat skill name would be `evilskill:../x` cannot be made from a
    // file name, so the front matter is the only way in: covered by the skills above.
    lock(&ctx, &["evilskill"]);
    let before = listing(&outside);
    for target in [
        "gemini",
        "agent-plugins",
        "codex",
        "claude",
        "copilot",
        "opencode",
    ] {
        let out = ctx.root.join(format!("out-{target}"));
        let run = ctx.ok(&["materialize", target, out.to_str().expect("utf-8")]);
        if matches!(target, "gemini" | "agent-plugins" | "opencode") {
            let refused = run
                .stderr
                .lines()
                .filter(|l| l.contains("its name is not one plain file name"))
                .count();
            assert_eq!(
                refused, 4,
                "{target}: each bad name is warned\n{}",
                run.stderr
            );
        }
        assert_eq!(
            listing(&outside),
            before,
            "{target} changed nothing outside DIR"
        );
        assert!(
            !ctx.root.join("ESCAPE-rel").exists() && !outside.join("ESCAPE-rel").exists(),
            "{target}"
        );
    }
}

#[test]
fn f19_a_same_named_folder_of_the_users_is_refused_then_moved_aside_never_deleted() {
    let ctx = TestContext::new();
    plugin(&ctx, "review", "1.0.0");
    lock(&ctx, &["review"]);
    // Each target's place for the plugin `review`, holding the user's own files (Claude
    // Code and Codex keep the plugins in a marketplace named `berth`: a marketplace of
    // the user's by that name is theirs).
    let cases = [
        ("gemini", "extensions/review"),
        ("agent-plugins", "review"),
        ("claude", "plugins/marketplaces/berth"),
        ("codex", "berth-marketplace"),
        ("copilot", "berth-marketplace"),
        ("opencode", "berth"),
    ];
    for (target, place) in cases {
        let home = ctx.root.join(format!("home-{target}"));
        write(
            &home.join(place),
            "gemini-extension.json",
            "{\"name\":\"review\",\"version\":\"9.9.9\",\"mcpServers\":{\"mine\":{\"command\":\"my-server\"}}}",
        );
        write(&home.join(place), "my-notes/notes.md", "notes\n");
        let before = listing(&home);
        let h = home.to_str().expect("utf-8");
        let refused = ctx.run(&["materialize", target, h]);
        assert_ne!(refused.code, 0, "{target}: refused\n{}", refused.stderr);
        assert!(
            refused.stderr.contains(&format!(
                "{place}: a folder berth did not write (it has no `.berth` mark)"
            )) && refused.stderr.contains("--force"),
            "{target}: names the folder and the way on\n{}",
            refused.stderr
        );
        assert_eq!(listing(&home), before, "{target}: nothing written");

        let forced = ctx.ok(&["materialize", target, h, "--force"]);
        assert!(
            forced
                .stderr
                .contains(&format!("aside to `{place}.berth-backup-1`")),
            "{target}: says where it went\n{}",
            forced.stderr
        );
        assert_eq!(
            std::fs::read_to_string(home.join(format!("{place}.berth-backup-1/my-notes/notes.md")))
                .expect("the user's notes are kept"),
            "notes\n"
        );
        ctx.ok(&["materialize", target, h, "--check"]);
        // berth's own folder is berth's from then on: a second run changes nothing.
        ctx.ok(&["materialize", target, h]);
    }
}

#[test]
fn f20_a_committed_settings_link_is_never_read_or_written_through() {
    let ctx = TestContext::new();
    plugin(&ctx, "r", "1.0.0");
    lock(&ctx, &["r"]);
    let secret_home = ctx.root.join("home21/.claude");
    write(
        &secret_home,
        "settings.json",
        "{\"env\":{\"ANTHROPIC_API_KEY\":\"sk-ant-USERSECRET\"},\"theme\":\"dark\"}",
    );
    for linked in [".claude/settings.json", ".claude"] {
        let repo = ctx
            .root
            .join(format!("repo-{}", linked.replace(['/', '.'], "_")));
        std::fs::create_dir_all(repo.join(".claude")).expect("mkdir");
        if linked == ".claude" {
            std::fs::remove_dir(repo.join(".claude")).expect("rmdir");
            std::os::unix::fs::symlink(&secret_home, repo.join(".claude")).expect("link");
        } else {
            std::os::unix::fs::symlink(secret_home.join("settings.json"), repo.join(linked))
                .expect("link");
        }
        let config = ctx
            .root
            .join(format!("config-{}", linked.replace(['/', '.'], "_")));
        let args = [
            "materialize",
            "claude",
            config.to_str().expect("utf-8"),
            "--project",
            repo.to_str().expect("utf-8"),
        ];
        let refused = ctx.run(&args);
        assert_ne!(refused.code, 0, "{linked}: refused\n{}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("a symbolic link berth did not make"),
            "{}",
            refused.stderr
        );
        let mut forced = args.to_vec();
        forced.push("--force");
        ctx.ok(&forced);
        let written = std::fs::read_to_string(repo.join(".claude/settings.json")).expect("read");
        assert!(
            !written.contains("USERSECRET") && written.contains("r@berth"),
            "{linked}: the file holds berth's keys only\n{written}"
        );
        assert!(
            std::fs::read_to_string(secret_home.join("settings.json"))
                .expect("read")
                .contains("USERSECRET"),
            "the link's target is untouched"
        );
    }
}

#[test]
fn f21_a_link_of_the_users_on_the_way_is_refused_not_replaced() {
    let ctx = TestContext::new();
    plugin(&ctx, "r", "1.0.0");
    lock(&ctx, &["r"]);
    let data = ctx.root.join("data-plugins");
    write(
        &data,
        "marketplaces/other/.claude-plugin/marketplace.json",
        "{}",
    );
    let config = ctx.root.join("claudehome3");
    std::fs::create_dir_all(&config).expect("mkdir");
    std::os::unix::fs::symlink(&data, config.join("plugins")).expect("link");
    let dotfiles = ctx.root.join("dotfiles/settings.json");
    write(
        dotfiles.parent().expect("parent"),
        "settings.json",
        "{\"theme\":\"dark\"}",
    );
    std::os::unix::fs::symlink(&dotfiles, config.join("settings.json")).expect("link");
    let c = config.to_str().expect("utf-8");

    let refused = ctx.run(&["materialize", "claude", c]);
    assert_ne!(refused.code, 0);
    for line in [
        "  plugins: a symbolic link berth did not make, on the way to what it writes",
        "  settings.json: a symbolic link berth did not make",
    ] {
        assert!(refused.stderr.contains(line), "{line}\n{}", refused.stderr);
    }
    assert!(
        std::fs::symlink_metadata(config.join("plugins"))
            .expect("lstat")
            .file_type()
            .is_symlink(),
        "left as it was"
    );
    assert!(data.join("marketplaces/other").is_dir());

    ctx.ok(&["materialize", "claude", c, "--force"]);
    assert!(data.join("marketplaces/other").is_dir(), "nothing deleted");
    assert_eq!(
        std::fs::read_to_string(&dotfiles).expect("read"),
        "{\"theme\":\"dark\"}",
        "the dotfile is untouched"
    );
    assert!(config.join("plugins.berth-backup-1").is_symlink());
}

#[test]
fn f22_check_sees_a_changed_mode_and_materialize_restores_it() {
    use std::os::unix::fs::PermissionsExt as _;
    let ctx = TestContext::new();
    plugin(&ctx, "review", "1.0.0");
    lock(&ctx, &["review"]);
    for (target, rel) in [
        // Codex's install copies files (its folders are links into the store entry).
        (
            "codex",
            "plugins/cache/berth/review/1.0.0/.claude-plugin/plugin.json",
        ),
        ("agent-plugins", "review/skills/r/SKILL.md"),
    ] {
        let out = ctx.root.join(format!("out-{target}"));
        let o = out.to_str().expect("utf-8");
        ctx.ok(&["materialize", target, o]);
        let copy = out.join(rel);
        assert_eq!(
            std::fs::metadata(&copy).expect("stat").permissions().mode() & 0o777,
            0o444
        );
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let check = ctx.run(&["materialize", target, o, "--check"]);
        assert_ne!(check.code, 0, "{target}: the mode is drift");
        assert!(
            check.stderr.contains(&format!("edited: {rel}")),
            "{}",
            check.stderr
        );
        ctx.ok(&["materialize", target, o]);
        assert_eq!(
            std::fs::metadata(&copy).expect("stat").permissions().mode() & 0o777,
            0o444,
            "{target}: restored"
        );
        ctx.ok(&["materialize", target, o, "--check"]);
    }
}

#[test]
fn a_file_berth_merges_into_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let ctx = TestContext::new();
    plugin(&ctx, "review", "1.0.0");
    lock(&ctx, &["review"]);
    let config = ctx.root.join("claude");
    write(&config, "settings.json", "{\"env\":{\"KEY\":\"secret\"}}");
    std::fs::set_permissions(
        config.join("settings.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    ctx.ok(&["materialize", "claude", config.to_str().expect("utf-8")]);
    let meta = std::fs::metadata(config.join("settings.json")).expect("stat");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "still private");
    assert!(
        std::fs::read_to_string(config.join("settings.json"))
            .expect("read")
            .contains("review@berth")
    );
}

#[test]
fn f23_a_version_of_dot_dot_is_not_a_path() {
    let ctx = TestContext::new();
    plugin(&ctx, "aaa", "..");
    plugin(&ctx, "review", "1.0.0");
    lock(&ctx, &["aaa", "review"]);
    let out = ctx.root.join("cx2");
    let o = out.to_str().expect("utf-8");
    ctx.ok(&["materialize", "codex", o]);
    ctx.ok(&["materialize", "codex", o, "--check"]);
    let installs = common::list_dir(&out.join("plugins/cache/berth/aaa"));
    assert_eq!(installs.len(), 1, "{installs:?}");
    assert!(
        installs[0] != ".." && installs[0] != ".",
        "installed under its content hash: {installs:?}"
    );
    assert!(
        out.join("plugins/cache/berth/review/1.0.0/skills/r/SKILL.md")
            .is_file()
    );
}

#[test]
fn folders_a_berth_from_before_the_mark_wrote_stay_berths() {
    let ctx = TestContext::new();
    plugin(&ctx, "review", "1.0.0");
    lock(&ctx, &["review"]);
    for (target, folders) in [
        (
            "claude",
            ["plugins/marketplaces/berth", "plugins/cache/berth"],
        ),
        ("codex", ["berth-marketplace", "plugins/cache/berth"]),
    ] {
        let home = ctx.root.join(format!("old-{target}"));
        let h = home.to_str().expect("utf-8");
        ctx.ok(&["materialize", target, h]);
        // As a berth without marks left it: the harness's own configuration still names
        // berth's marketplace there, so the folders are berth's.
        for folder in folders {
            std::fs::remove_file(home.join(folder).join(".berth")).expect("unmark");
        }
        ctx.ok(&["materialize", target, h]);
        ctx.ok(&["materialize", target, h, "--check"]);
    }
}

#[test]
fn check_leaves_out_what_the_user_keeps_in_the_files_berth_merges_into() {
    let ctx = TestContext::new();
    plugin(&ctx, "review", "1.0.0");
    lock(&ctx, &["review"]);
    let claude = ctx.root.join("claude");
    let c = claude.to_str().expect("utf-8");
    ctx.ok(&["materialize", "claude", c]);
    // The user's own keys, written the way the user writes JSON.
    let settings = claude.join("settings.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("JSON");
    value["theme"] = "dark".into();
    value["enabledPlugins"]["mine@elsewhere"] = true.into();
    std::fs::write(&settings, value.to_string()).expect("write");
    let installed = claude.join("plugins/installed_plugins.json");
    let mut records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&installed).expect("read")).expect("JSON");
    records["plugins"]["mine@elsewhere"] = serde_json::json!([{"scope": "user"}]);
    std::fs::write(&installed, records.to_string()).expect("write");
    ctx.ok(&["materialize", "claude", c, "--check"]);
    let written = std::fs::read_to_string(&settings).expect("read");
    ctx.ok(&["materialize", "claude", c]);
    assert_eq!(
        std::fs::read_to_string(&settings).expect("read"),
        written,
        "a file already holding berth's keys is left as the user wrote it"
    );

    let codex = ctx.root.join("codex");
    let x = codex.to_str().expect("utf-8");
    ctx.ok(&["materialize", "codex", x]);
    let config = codex.join("config.toml");
    let text = std::fs::read_to_string(&config).expect("read");
    std::fs::write(&config, format!("model = \"o3\"\n{text}")).expect("write");
    ctx.ok(&["materialize", "codex", x, "--check"]);
}
