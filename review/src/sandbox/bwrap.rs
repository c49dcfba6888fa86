//! The Linux sandbox, made by the system's bubblewrap (`bwrap`): the same tool Flatpak and
//! Claude Code's sandbox runtime use, maintained and audited, rather than namespaces set up
//! by hand. Its command line is built here from the program's [`View`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::inside::{HELPER_COMMAND, Inside};
use super::view::{self, ETC_FILES, Guard, SYSTEM_DIRS, View};
use super::{Limits, SandboxError, Spawn, TMPFS_BYTES};

/// Where berth itself (the helper that confines and executes the program) is inside.
pub(super) const HELPER_INSIDE: &str = "/run/berth/berth";

/// The devices a program may write (and read): `/dev` holds nothing else it needs.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The folder in a program's scratch (on the host, hidden inside by the scratch's own
/// mount) holding the account database berth writes for it.
const ACCOUNTS_DIR: &str = ".berth-sandbox";

/// A working bubblewrap, and what this one and the kernel offer.
#[derive(Debug, Clone)]
pub(super) struct Bwrap {
    /// The `bwrap` program.
    pub path: PathBuf,
    /// berth itself, shown read-only inside as [`HELPER_INSIDE`].
    pub helper: PathBuf,
    /// Whether this bubblewrap has `--disable-userns` (0.8) and `--size` (0.5).
    pub disable_userns: bool,
    pub sized_tmpfs: bool,
    /// The Landlock ABI the kernel offers, if any.
    pub landlock: Option<i32>,
}

impl Bwrap {
    /// Finds `bwrap`, and checks that a trivial program starts in the sandbox exactly as a
    /// plugin's would; `Err` says why not.
    pub fn probe(helper: &Path) -> Result<Self, String> {
        let search = std::env::var("PATH").unwrap_or_default();
        let path = view::find_program("bwrap", &format!("{search}:/usr/bin:/bin"))
            .ok_or_else(|| "bubblewrap (`bwrap`) is not installed".to_owned())?;
        let help = Command::new(&path)
            .arg("--help")
            .stdin(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let bwrap = Self {
            path,
            helper: helper.to_owned(),
            disable_userns: help.contains("--disable-userns"),
            sized_tmpfs: help.contains("--size"),
            landlock: landlock_abi(),
        };
        bwrap.try_true().map(|()| bwrap)
    }

    /// What the sandbox holds here, for `-v`.
    pub fn describe(&self) -> String {
        let landlock = match self.landlock {
            Some(abi) => format!("with Landlock (ABI {abi}) as a second layer"),
            None => "without Landlock (this kernel has none), so its namespaces alone".to_owned(),
        };
        format!(
            "plugin programs run in bubblewrap (`{}`), {landlock}",
            self.path.display()
        )
    }

    /// Starts `true` in the sandbox and waits for it.
    fn try_true(&self) -> Result<(), String> {
        let scratch = std::env::temp_dir().join(format!(
            "berth-sandbox-probe-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let env = [("PATH".to_owned(), "/usr/bin:/bin".to_owned())];
        let what = Spawn {
            program: "true",
            args: &[],
            env: &env,
            scratch: &scratch,
            store_root: Path::new("/nonexistent/berth-store"),
            timeout: Duration::from_secs(10),
        };
        let outcome = std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("could not make `{}`: {e}", scratch.display()))
            .and_then(|()| self.command(&what, &env).map_err(|e| e.to_string()))
            .and_then(|mut c| run_briefly(&mut c, what.timeout));
        let _ = std::fs::remove_dir_all(&scratch);
        outcome
    }

    /// The command that starts `what` (with the environment `env`) in the sandbox.
    pub fn command(
        &self,
        what: &Spawn<'_>,
        env: &[(String, String)],
    ) -> Result<Command, SandboxError> {
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map_or("/usr/bin:/bin", |(_, v)| v.as_str());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let store_canonical = what
            .store_root
            .canonicalize()
            .unwrap_or_else(|_| what.store_root.to_owned());
        let guard = Guard {
            home: home.as_deref(),
            store_root: what.store_root,
            store_canonical: &store_canonical,
            scratch: what.scratch,
        };
        let view = view::plan(what.program, what.args, path, guard)?;
        let accounts = write_accounts(what.scratch).map_err(|e| SandboxError::Start {
            program: what.program.to_owned(),
            error: format!("could not write its account files: {e}"),
        })?;
        let inside = self.inside(&view, what);
        let mut command = Command::new(&self.path);
        command
            .args(self.arguments(&view, what, env, &accounts))
            .arg("--")
            .arg(HELPER_INSIDE)
            .arg(HELPER_COMMAND)
            .args(inside.to_args())
            .env_clear()
            .current_dir("/");
        Ok(command)
    }

    /// What berth does inside before it executes the program: the limits, and what
    /// Landlock lets the program read and write.
    fn inside(&self, view: &View, what: &Spawn<'_>) -> Inside {
        let existing = |paths: &[&str]| -> Vec<PathBuf> {
            paths
                .iter()
                .map(PathBuf::from)
                .filter(|p| p.exists())
                .collect()
        };
        let mut read = existing(SYSTEM_DIRS);
        read.extend(existing(ETC_FILES));
        read.extend(
            ["/etc/passwd", "/etc/group", "/proc", "/dev", HELPER_INSIDE].map(PathBuf::from),
        );
        read.extend(view.read_only.iter().cloned());
        read.extend(view.links.iter().map(|(_, link)| link.clone()));
        Inside {
            read,
            write: vec![what.scratch.to_owned(), PathBuf::from("/tmp")],
            devices: DEVICES.iter().map(PathBuf::from).collect(),
            limits: Limits::for_timeout(what.timeout),
            arg0: what.program.into(),
            program: view.program.clone().into(),
            args: what.args.iter().map(OsString::from).collect(),
        }
    }

    /// bubblewrap's options for `view` (everything before `--`).
    pub(super) fn arguments(
        &self,
        view: &View,
        what: &Spawn<'_>,
        env: &[(String, String)],
        accounts: &Path,
    ) -> Vec<OsString> {
        let mut a = Arguments::default();
        a.words(&["--unshare-all", "--unshare-user"]);
        if self.disable_userns {
            a.words(&["--disable-userns"]);
        }
        a.words(&["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
        a.words(&["--hostname", "berth-sandbox", "--clearenv"]);
        for (key, value) in env {
            a.words(&["--setenv", key, value]);
        }
        for dir in SYSTEM_DIRS.iter().map(Path::new) {
            match std::fs::read_link(dir) {
                Ok(target) => a.pair("--symlink", &target, dir),
                Err(_) if dir.is_dir() => a.pair("--ro-bind", dir, dir),
                Err(_) => {}
            }
        }
        for file in ETC_FILES.iter().map(Path::new).filter(|p| p.exists()) {
            a.pair("--ro-bind", file, file);
        }
        for name in ["passwd", "group"] {
            a.pair(
                "--ro-bind",
                &accounts.join(name),
                &Path::new("/etc").join(name),
            );
        }
        a.words(&["--proc", "/proc", "--dev", "/dev"]);
        self.tmpfs(&mut a, Path::new("/tmp"));
        for path in &view.read_only {
            a.pair("--ro-bind", path, path);
        }
        for (target, link) in &view.links {
            a.pair("--symlink", target, link);
        }
        self.tmpfs(&mut a, what.scratch);
        a.pair("--ro-bind", &self.helper, Path::new(HELPER_INSIDE));
        a.path("--chdir", what.scratch);
        a.words(&["--remount-ro", "/dev", "--remount-ro", "/"]);
        a.0
    }

    /// An empty folder in memory at `path`, of [`TMPFS_BYTES`] where bubblewrap can say.
    fn tmpfs(&self, a: &mut Arguments, path: &Path) {
        if self.sized_tmpfs {
            a.words(&["--size", &TMPFS_BYTES.to_string()]);
        }
        a.path("--tmpfs", path);
    }
}

/// A command line being built.
#[derive(Debug, Default)]
struct Arguments(Vec<OsString>);

impl Arguments {
    fn words(&mut self, words: &[&str]) {
        self.0.extend(words.iter().map(OsString::from));
    }
    fn path(&mut self, option: &str, path: &Path) {
        self.0.push(option.into());
        self.0.push(path.into());
    }
    fn pair(&mut self, option: &str, from: &Path, to: &Path) {
        self.0.push(option.into());
        self.0.push(from.into());
        self.0.push(to.into());
    }
}

/// Writes the account database the program sees (`/etc/passwd`, `/etc/group`): its own
/// user, named `root` or `berth`, at home in its scratch, and `nobody`. Not the host's,
/// which names every account of the machine.
fn write_accounts(scratch: &Path) -> std::io::Result<PathBuf> {
    let dir = scratch.join(ACCOUNTS_DIR);
    std::fs::create_dir_all(&dir)?;
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let name = if uid == 0 { "root" } else { "berth" };
    std::fs::write(
        dir.join("passwd"),
        format!(
            "{name}:x:{uid}:{gid}:{name}:{}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            scratch.display()
        ),
    )?;
    std::fs::write(
        dir.join("group"),
        format!("{name}:x:{gid}:\nnogroup:x:65534:\n"),
    )?;
    Ok(dir)
}

/// Runs `command` with nothing on its standard streams but stderr, for at most `timeout`;
/// `Err` is the last line it wrote to stderr.
fn run_briefly(command: &mut Command, timeout: Duration) -> Result<(), String> {
    use std::io::Read;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run bubblewrap: {e}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("bubblewrap did not start a program in time".to_owned());
            }
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut said);
    }
    let line = said.lines().rev().find(|l| !l.trim().is_empty());
    Err(match line {
        Some(line) => format!("bubblewrap cannot make one: {}", line.trim()),
        None => format!("bubblewrap cannot make one ({status})"),
    })
}

#[cfg(target_os = "linux")]
fn landlock_abi() -> Option<i32> {
    super::landlock::abi()
}

#[cfg(not(target_os = "linux"))]
fn landlock_abi() -> Option<i32> {
    None
}
