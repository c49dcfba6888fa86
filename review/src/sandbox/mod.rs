//! The sandbox every program of a plugin that berth starts on its own runs in (today: the
//! MCP servers `observe` asks what they offer). [`spawn`] is the one function that starts
//! such a program; nothing else in berth spawns a plugin's program.
//!
//! On Linux the sandbox is the system's bubblewrap (`bwrap`): new user, mount, PID,
//! network, IPC, UTS and cgroup namespaces, no capabilities, a filesystem holding only the
//! system's runtime folders, the program and the installation it comes from, and the
//! store entries its command line names, all read-only, plus an empty writable scratch
//! folder (its `HOME`, `TMPDIR` and working folder) and a `/tmp`, both small and in memory
//! (`view.rs`, `bwrap.rs`). Inside it berth runs itself again (`berth __sandbox-exec`,
//! [`exec_inside`]): it sets resource limits and `no_new_privs`, confines itself with
//! Landlock where the kernel has it (the second layer: the same files, no TCP), then
//! executes the program. Ending the program kills bubblewrap, and with it the whole PID
//! namespace.
//!
//! Where no sandbox can be made (no `bwrap`, no user namespaces, another system), nothing
//! is started: [`spawn`] returns [`SandboxError::Unavailable`] unless the caller asked for
//! [`Sandboxing::Unsandboxed`], which only a person can (berth's `--observe-unsandboxed`).

#[cfg(target_os = "linux")]
mod bwrap;
mod inside;
#[cfg(target_os = "linux")]
mod landlock;
mod view;

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

pub use inside::{HELPER_COMMAND, exec_inside};

/// How a plugin's program is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sandboxing {
    /// In the sandbox, or not at all.
    #[default]
    Required,
    /// As the user, with the user's files (and without network only where `unshare -rn`
    /// works): what `--observe-unsandboxed` asks for, never a default.
    Unsandboxed,
}

/// What to say after why no sandbox could be made: how to make one.
pub const HOW_TO_ENABLE: &str = "install bubblewrap (`apt-get install bubblewrap`, `dnf install bubblewrap`) and allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04 and later `sysctl kernel.apparmor_restrict_unprivileged_userns=0`)";

/// One program of a plugin to start.
#[derive(Debug, Clone, Copy)]
pub struct Spawn<'a> {
    /// The program as its command line names it (a path, or a name found on `PATH`).
    pub program: &'a str,
    pub args: &'a [String],
    /// The whole environment it gets (its `PATH` is where the program is looked for).
    pub env: &'a [(String, String)],
    /// Its scratch folder: `HOME`, `TMPDIR` and working folder. In the sandbox an empty
    /// folder in memory is mounted there; unsandboxed it is this folder of the host.
    pub scratch: &'a Path,
    /// The store's root: the entries under it that the command line names are shown.
    pub store_root: &'a Path,
    /// How long it may run: its CPU time limit is derived from it.
    pub timeout: Duration,
}

/// Why a program could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// No sandbox can be made here: nothing was started.
    #[error("no sandbox here: {why}")]
    Unavailable { why: String },
    /// The program is missing, or could not be started.
    #[error("could not start `{program}`: {error}")]
    Start { program: String, error: String },
}

/// A started program, and how to end it with everything it started.
#[derive(Debug)]
pub struct Running {
    child: Child,
    /// In the sandbox: ending bubblewrap ends the PID namespace. Unsandboxed: the process
    /// group is killed.
    sandboxed: bool,
    stopped: bool,
}

impl Running {
    /// The program's standard input, output and error (each once).
    pub fn pipes(&mut self) -> (ChildStdin, ChildStdout, ChildStderr) {
        (
            self.child
                .stdin
                .take()
                .expect("stdin is piped and taken once"),
            self.child
                .stdout
                .take()
                .expect("stdout is piped and taken once"),
            self.child
                .stderr
                .take()
                .expect("stderr is piped and taken once"),
        )
    }

    /// Ends the program and every process it started. In the sandbox, SIGKILL to
    /// bubblewrap: `--die-with-parent` kills the namespace's first process, and the kernel
    /// every other one (a child in a session of its own too). Unsandboxed, the process
    /// group, which a child that calls `setsid` leaves.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        if self.sandboxed {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `what` as `how` says, its standard streams piped. With
/// [`Sandboxing::Required`] where no sandbox can be made, nothing is started.
pub fn spawn(what: &Spawn<'_>, how: Sandboxing) -> Result<Running, SandboxError> {
    let mut command = match how {
        Sandboxing::Required => sandboxed(what)?,
        Sandboxing::Unsandboxed => unsandboxed(what),
    };
    use std::os::unix::process::CommandExt;
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| SandboxError::Start {
            program: what.program.to_owned(),
            error: e.to_string(),
        })?;
    Ok(Running {
        child,
        sandboxed: how == Sandboxing::Required,
        stopped: false,
    })
}

/// The environment every started program gets on top of its own: its scratch as `TMPDIR`
/// and `HOME`, and no bytecode written beside a plugin's Python files.
fn environment(what: &Spawn<'_>) -> Vec<(String, String)> {
    let scratch = what.scratch.display().to_string();
    let mut env: Vec<(String, String)> = what
        .env
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "HOME" | "TMPDIR" | "PYTHONDONTWRITEBYTECODE"))
        .cloned()
        .collect();
    env.push(("HOME".to_owned(), scratch.clone()));
    env.push(("TMPDIR".to_owned(), scratch));
    env.push(("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned()));
    env
}

/// The command that starts `what` in the sandbox.
fn sandboxed(what: &Spawn<'_>) -> Result<Command, SandboxError> {
    let backend = backend().map_err(|why| SandboxError::Unavailable { why: why.clone() })?;
    match *backend {
        #[cfg(target_os = "linux")]
        Backend::Bubblewrap(ref bwrap) => bwrap.command(what, &environment(what)),
    }
}

/// The command that starts `what` as the user: in a new network namespace where
/// `unshare -rn` works (asked once per process), else with the host's network.
fn unsandboxed(what: &Spawn<'_>) -> Command {
    static UNSHARE_WORKS: OnceLock<bool> = OnceLock::new();
    let unshare = *UNSHARE_WORKS.get_or_init(|| {
        Command::new("unshare")
            .args(["-rn", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    let mut command = if unshare {
        let mut c = Command::new("unshare");
        c.args(["-rn", "--", what.program]);
        c
    } else {
        Command::new(what.program)
    };
    command
        .args(what.args)
        .current_dir(what.scratch)
        .env_clear()
        .envs(environment(what));
    command
}

/// The ways to make a sandbox: one today. A macOS Seatbelt profile (`sandbox-exec`) would
/// be another arm, chosen by [`backend`].
#[derive(Debug)]
enum Backend {
    #[cfg(target_os = "linux")]
    Bubblewrap(bwrap::Bwrap),
}

impl Backend {
    /// What the sandbox holds here, for `-v`.
    fn describe(&self) -> String {
        match *self {
            #[cfg(target_os = "linux")]
            Self::Bubblewrap(ref bwrap) => bwrap.describe(),
        }
    }
}

/// The sandbox this process can make, found once: the first call probes it (a trivial
/// program started in it) and says in `-v` detail what it has; later calls reuse it.
fn backend() -> Result<&'static Backend, &'static String> {
    static BACKEND: OnceLock<Result<Backend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let found = probe();
            match &found {
                Ok(backend) => tracing::info!("{}", backend.describe()),
                Err(why) => tracing::info!("no sandbox here: {why}"),
            }
            found
        })
        .as_ref()
}

#[cfg(target_os = "linux")]
fn probe() -> Result<Backend, String> {
    let helper = helper().ok_or_else(|| {
        "this program cannot run berth's sandbox helper (`__sandbox-exec`)".to_owned()
    })?;
    bwrap::Bwrap::probe(helper).map(Backend::Bubblewrap)
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Result<Backend, String> {
    Err(format!(
        "berth has no sandbox for {} yet (Linux's is bubblewrap; macOS's Seatbelt is to come)",
        std::env::consts::OS
    ))
}

/// The program that answers `__sandbox-exec` (berth itself), once the front end said so.
static HELPER: OnceLock<PathBuf> = OnceLock::new();

/// Declares that this process's own executable runs [`exec_inside`] when started as
/// `EXE __sandbox-exec …`: berth's `main` calls it, so the sandbox can run berth inside.
/// A process that never calls it (a library's host) makes no sandbox.
pub fn helper_is_this_program() {
    if let Ok(exe) = std::env::current_exe().and_then(|p| p.canonicalize()) {
        let _ = HELPER.set(exe);
    }
}

fn helper() -> Option<&'static Path> {
    HELPER.get().map(PathBuf::as_path)
}

/// The resource limits a sandboxed program runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// `RLIMIT_DATA`: bytes of heap and private mappings. `node` and `python3` start
    /// with far less; a 4 GiB allocation fails.
    pub data: u64,
    /// `RLIMIT_CPU`: seconds of CPU time.
    pub cpu: u64,
    /// `RLIMIT_FSIZE`: bytes of any one file written.
    pub fsize: u64,
    /// `RLIMIT_NPROC`: processes of its user in its namespace (root is not held to it;
    /// the PID namespace ends with the program all the same).
    pub nproc: u64,
}

impl Limits {
    /// The limits for a program that may run `timeout`.
    pub(crate) fn for_timeout(timeout: Duration) -> Self {
        Self {
            data: 2 << 30,
            cpu: timeout.as_secs().saturating_mul(2).max(60),
            fsize: 64 << 20,
            nproc: 256,
        }
    }
}

/// The size of the sandbox's scratch folder and of its `/tmp`, each in memory.
pub(crate) const TMPFS_BYTES: u64 = 64 << 20;

#[cfg(test)]
mod tests;
