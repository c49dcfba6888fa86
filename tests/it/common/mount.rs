//! Mounts the fault tests make (they need root: without it each is
//! [`super::require_or_skip`], which fails in CI), each undone when dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A mount at a folder, lazily unmounted when dropped.
pub struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn mount(args: &[&std::ffi::OsStr]) -> bool {
    Command::new("mount")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A tmpfs with `options` at `dir`.
pub fn tmpfs(dir: &Path, options: &str) -> Option<Mount> {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mounted = mount(&[
        "-t".as_ref(),
        "tmpfs".as_ref(),
        "-o".as_ref(),
        options.as_ref(),
        "tmpfs".as_ref(),
        dir.as_os_str(),
    ]);
    if !mounted {
        super::require_or_skip("mounting a tmpfs", "run the tests as root");
    }
    mounted.then(|| Mount(dir.to_owned()))
}

/// `dir` again at `at`, read-only (a bind mount, then remounted read-only).
pub fn read_only_view(dir: &Path, at: &Path) -> Option<Mount> {
    std::fs::create_dir_all(at).expect("mkdir");
    if !mount(&["--bind".as_ref(), dir.as_os_str(), at.as_os_str()]) {
        super::require_or_skip("a bind mount", "run the tests as root");
        return None;
    }
    let view = Mount(at.to_owned());
    assert!(
        mount(&["-o".as_ref(), "remount,bind,ro".as_ref(), at.as_os_str()]),
        "remount `{}` read-only",
        at.display()
    );
    Some(view)
}
