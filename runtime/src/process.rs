//! Running one hook command: `sh -c`, event JSON on stdin, output captured, a timeout that
//! kills the command's whole process group (so a hook's children do not outlive it).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

/// What one command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The exit status; `None` when killed (timeout or signal).
    pub exit_code: Option<i32>,
    /// Everything it wrote to stdout (lossy UTF-8).
    pub stdout: String,
    /// Everything it wrote to stderr (lossy UTF-8).
    pub stderr: String,
    /// Whether it ran past its timeout and was killed.
    pub timed_out: bool,
}

/// Runs `command` with `sh -c` in `cwd` with exactly the environment `env`, feeding `stdin`, for at most
/// `timeout`. The command runs in a new process group; on timeout the whole group gets
/// SIGKILL, and so do any stragglers it left behind once it exits.
pub fn run_command(
    command: &str,
    stdin: &[u8],
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
) -> std::io::Result<CommandOutcome> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let pid = Pid::from_child(&child);
    let input = stdin.to_vec();
    let mut child_stdin = child.stdin.take().expect("stdin is piped");
    // A hook that never reads its stdin must not block us: write from a thread.
    let writer = std::thread::spawn(move || {
        let _ = child_stdin.write_all(&input);
    });
    let stdout = reader(child.stdout.take().expect("stdout is piped"));
    let stderr = reader(child.stderr.take().expect("stderr is piped"));
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Kill the group: on timeout the hook and its children; after a normal exit, children
    // it left running (they would hold the output pipes open forever).
    let _ = kill_process_group(pid, Signal::KILL);
    let status = match status {
        Some(status) => status,
        None => child.wait()?,
    };
    let _ = writer.join();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(CommandOutcome {
        exit_code: if timed_out { None } else { status.code() },
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        timed_out,
    })
}

fn reader(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::{Duration, Instant, Path, run_command};

    #[test]
    fn captures_output_exit_code_and_stdin() {
        let out = run_command(
            "read line; echo \"got $line $BERTH_TEST\"; echo oops >&2; exit 3",
            b"hello\n",
            &[
                ("BERTH_TEST".into(), "env".into()),
                ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ],
            Path::new("/"),
            Duration::from_secs(10),
        )
        .expect("run");
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout, "got hello env\n");
        assert_eq!(out.stderr, "oops\n");
        assert!(!out.timed_out);
    }

    #[test]
    fn a_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("survived");
        let started = Instant::now();
        let out = run_command(
            &format!("(sleep 2; touch {}) & sleep 30", marker.display()),
            b"",
            &[("PATH".into(), std::env::var("PATH").unwrap_or_default())],
            dir.path(),
            Duration::from_millis(300),
        )
        .expect("run");
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "returned at the timeout"
        );
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "the hook's child was killed with it");
    }
}
