//! What the sandbox shows a program, and the command lines that make it. Starting a
//! program in it needs the berth binary (the helper inside): tests/it/sandbox/ does that.

use std::path::{Path, PathBuf};

use super::inside::Inside;
use super::view::{self, Guard};
use super::{Limits, Spawn};

/// An executable file at `path` holding `text`.
fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A temporary folder with a home (holding `.ssh`), a store and a scratch in it.
struct Host {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Host {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("home/.ssh")).expect("mkdir");
        std::fs::create_dir_all(root.join("store/store-v1")).expect("mkdir");
        std::fs::create_dir_all(root.join("scratch")).expect("mkdir");
        Self { _dir: dir, root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn store(&self) -> PathBuf {
        self.root.join("store")
    }
    fn scratch(&self) -> PathBuf {
        self.root.join("scratch")
    }

    fn plan(&self, program: &str, args: &[&str], path: &str) -> view::View {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let (home, store, scratch) = (self.home(), self.store(), self.scratch());
        let guard = Guard {
            home: Some(&home),
            store_root: &store,
            store_canonical: &store,
            scratch: &scratch,
        };
        view::plan(program, &args, path, guard).expect("a view")
    }
}

#[test]
fn a_program_is_found_on_the_path_it_is_given() {
    let host = Host::new();
    let (a, b) = (host.root.join("a"), host.root.join("b"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::write(a.join("tool"), "not executable").expect("write");
    executable(&b.join("tool"), "#!/bin/sh\n");
    let path = format!("{}:{}", a.display(), b.display());
    assert_eq!(view::find_program("tool", &path), Some(b.join("tool")));
    assert_eq!(view::find_program("missing", &path), None);
    assert_eq!(view::find_program("", &path), None);
    let given = b.join("tool").display().to_string();
    assert_eq!(view::find_program(&given, ""), Some(b.join("tool")));
    assert_eq!(view::find_program("relative/tool", &path), None);
}

#[test]
fn a_scripts_interpreter_is_its_shebang_or_what_env_names() {
    let host = Host::new();
    let bin = host.root.join("bin");
    executable(&bin.join("node"), "");
    let path = bin.display().to_string();
    let script = |text: &str| {
        let file = host.root.join("script");
        std::fs::write(&file, text).expect("write");
        view::interpreter(&file, &path)
    };
    assert_eq!(
        script("#!/bin/sh -e\necho\n"),
        Some(PathBuf::from("/bin/sh"))
    );
    assert_eq!(script("#!/usr/bin/env node\n"), Some(bin.join("node")));
    assert_eq!(
        script("#! /usr/bin/env -S node --flag\n"),
        Some(bin.join("node"))
    );
    assert_eq!(script("#!/usr/bin/env A=1 node\n"), Some(bin.join("node")));
    assert_eq!(script("#!/usr/bin/env missing\n"), None);
    assert_eq!(script("print('no shebang')\n"), None);
}

#[test]
fn an_installation_is_shown_whole_but_never_a_home_or_the_store() {
    let host = Host::new();
    let (home, store, scratch) = (host.home(), host.store(), host.scratch());
    let guard = Guard {
        home: Some(&home),
        store_root: &store,
        store_canonical: &store,
        scratch: &scratch,
    };
    let pyenv = host.root.join("tools/.pyenv");
    let python = pyenv.join("versions/3.11.7/bin/python3.11");
    assert_eq!(
        view::installation(&python, guard),
        pyenv.join("versions/3.11.7")
    );
    let shim = pyenv.join("shims/python3");
    assert_eq!(view::installation(&shim, guard), pyenv);
    let loose = host.root.join("tools/node/node");
    assert_eq!(
        view::installation(&loose, guard),
        host.root.join("tools/node")
    );
    // The home itself, `~/.local`, a folder holding the store, a top-level folder: only
    // the program.
    for program in [
        home.join("bin/tool"),
        home.join(".local/bin/tool"),
        host.root.join("bin/tool"),
        PathBuf::from("/opt/tool"),
    ] {
        assert_eq!(view::installation(&program, guard), program);
    }
    // Any folder that looks like someone's home.
    std::fs::create_dir_all(host.root.join("other/.ssh")).expect("mkdir");
    let theirs = host.root.join("other/bin/tool");
    assert_eq!(view::installation(&theirs, guard), theirs);
}

#[test]
fn the_store_entries_a_command_line_names_are_shown_and_nothing_else_of_the_store() {
    let host = Host::new();
    let store = host.store();
    let entry = store.join("store-v1/aaa-plugin");
    let config = store.join("store-v1/bbb-config");
    let env = store.join("envs-v1/ccc-pkg");
    for dir in [&entry, &config, &env, &store.join("store-v1/ddd-other")] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    executable(&entry.join("server.sh"), "#!/bin/sh\n");
    let view = host.plan(
        &entry.join("server.sh").display().to_string(),
        &[
            &format!("--config={}/c.json", config.display()),
            &format!("{}/bin/x", env.display()),
            &format!("{}/tmp/staged", store.display()),
            "/etc/passwd",
        ],
        "/usr/bin:/bin",
    );
    assert_eq!(view.read_only, vec![env, entry.clone(), config]);
    assert!(view.links.is_empty(), "{:?}", view.links);
    assert_eq!(view.program, entry.join("server.sh"));
}

#[test]
fn a_view_of_the_store_is_shown_as_its_link_to_the_entry() {
    let host = Host::new();
    let store = host.store();
    let entry = store.join("store-v1/aaa-plugin");
    std::fs::create_dir_all(&entry).expect("mkdir");
    let view_dir = store.join("views-v1/digest");
    std::fs::create_dir_all(&view_dir).expect("mkdir");
    std::os::unix::fs::symlink("../../store-v1/aaa-plugin", view_dir.join("plugin")).expect("link");
    let arg = view_dir.join("plugin/server.js").display().to_string();
    let view = host.plan("sh", &[&arg], "/usr/bin:/bin");
    assert_eq!(view.read_only, vec![entry.clone()]);
    assert_eq!(view.links, vec![(entry, view_dir.join("plugin"))]);
}

#[test]
fn a_program_reached_through_a_link_outside_its_installation_is_linked_again() {
    let host = Host::new();
    let real = host.root.join("opt/tool/bin/tool");
    executable(&real, "#!/bin/sh\n");
    let links = host.root.join("links");
    std::fs::create_dir_all(&links).expect("mkdir");
    std::os::unix::fs::symlink(&real, links.join("tool")).expect("link");
    let view = host.plan("tool", &[], &links.display().to_string());
    assert_eq!(view.read_only, vec![host.root.join("opt/tool")]);
    assert_eq!(view.links, vec![(real, links.join("tool"))]);
    assert_eq!(view.program, links.join("tool"));
}

#[test]
fn what_berth_does_inside_round_trips_through_its_arguments() {
    let inside = Inside {
        read: vec!["/usr".into(), "/store/store-v1/a b".into()],
        write: vec!["/scratch".into(), "/tmp".into()],
        devices: vec!["/dev/null".into()],
        limits: Limits::for_timeout(std::time::Duration::from_secs(45)),
        arg0: "python3".into(),
        program: "/usr/bin/python3".into(),
        args: vec!["--".into(), "-c".into(), "print(1)".into()],
    };
    assert_eq!(Inside::parse(inside.to_args()), Ok(inside.clone()));
    assert_eq!(inside.limits.cpu, 90);
    assert!(Inside::parse(vec!["--read".into()]).is_err());
    assert!(Inside::parse(vec!["--data".into(), "x".into(), "--".into(), "p".into()]).is_err());
    assert!(Inside::parse(vec!["--bogus".into(), "1".into(), "--".into(), "p".into()]).is_err());
}

#[test]
fn limits_hold_a_server_to_a_share_of_the_machine() {
    let limits = Limits::for_timeout(std::time::Duration::from_secs(15));
    assert_eq!(
        limits.data,
        2 << 30,
        "below a 4 GiB allocation, above what node needs"
    );
    assert_eq!(limits.cpu, 60);
    assert_eq!(limits.fsize, 64 << 20);
    assert_eq!(limits.nproc, 256);
}

#[cfg(target_os = "linux")]
#[test]
fn bubblewraps_command_line_shows_only_what_the_view_holds() {
    let host = Host::new();
    let entry = host.store().join("store-v1/aaa-plugin");
    std::fs::create_dir_all(&entry).expect("mkdir");
    let env = vec![
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ("HOME".to_owned(), host.scratch().display().to_string()),
    ];
    let args = vec![entry.join("server.py").display().to_string()];
    let scratch = host.scratch();
    let store = host.store();
    let what = Spawn {
        program: "python3",
        args: &args,
        env: &env,
        scratch: &scratch,
        store_root: &store,
        timeout: std::time::Duration::from_secs(15),
    };
    let bwrap = super::bwrap::Bwrap {
        path: "/usr/bin/bwrap".into(),
        helper: "/opt/berth/berth".into(),
        disable_userns: true,
        sized_tmpfs: true,
        landlock: Some(6),
    };
    let view = host.plan("sh", &[&args[0]], "/usr/bin:/bin");
    let words: Vec<String> = bwrap
        .arguments(&view, &what, &env, &host.root.join("accounts"))
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let line = words.join(" ");
    for expected in [
        "--unshare-all --unshare-user --disable-userns --die-with-parent --new-session --cap-drop ALL",
        "--clearenv --setenv PATH /usr/bin:/bin --setenv HOME",
        "--proc /proc --dev /dev --size 67108864 --tmpfs /tmp",
        &format!("--ro-bind {0} {0}", entry.display()),
        &format!("--size 67108864 --tmpfs {}", scratch.display()),
        "--ro-bind /opt/berth/berth /run/berth/berth",
        &format!("--chdir {}", scratch.display()),
    ] {
        assert!(line.contains(expected), "`{expected}` not in:\n{line}");
    }
    assert!(line.ends_with("--remount-ro /dev --remount-ro /"), "{line}");
    // Nothing is writable but the two folders in memory: no read-write bind at all, and
    // neither the store, nor the home, nor another entry.
    assert!(
        !words.iter().any(|w| w == "--bind" || w == "--dev-bind"),
        "{line}"
    );
    for hidden in [host.store(), host.home()] {
        assert!(!words.contains(&hidden.display().to_string()), "{line}");
    }
}
