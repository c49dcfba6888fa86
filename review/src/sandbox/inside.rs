//! berth's own step inside the sandbox: started by bubblewrap as `berth __sandbox-exec
//! OPTIONS -- PROGRAM ARGS`, it sets `no_new_privs` and the resource limits, confines
//! itself with Landlock (which forbids mounting, so it cannot come before bubblewrap), and
//! executes the program, which inherits all of it. Set here rather than before bubblewrap
//! starts, the limits count only the sandbox's processes: `RLIMIT_NPROC` set outside would
//! count every process of the user.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use super::Limits;

/// The hidden command berth's `main` hands to [`exec_inside`] before parsing arguments.
pub const HELPER_COMMAND: &str = "__sandbox-exec";

/// What the helper is told to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Inside {
    /// Read and execute, nothing else.
    pub read: Vec<PathBuf>,
    /// Read and write (no execute): the scratch and `/tmp`.
    pub write: Vec<PathBuf>,
    /// Device files to read and write (`/dev/null`, …).
    pub devices: Vec<PathBuf>,
    pub limits: Limits,
    /// The program's `argv[0]`, as its command line names it.
    pub arg0: OsString,
    /// The program, as found.
    pub program: OsString,
    pub args: Vec<OsString>,
}

impl Inside {
    /// The helper's arguments (after [`HELPER_COMMAND`]).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        let mut option = |name: &str, value: &OsStr| {
            out.push(name.into());
            out.push(value.to_owned());
        };
        for (name, paths) in [
            ("--read", &self.read),
            ("--write", &self.write),
            ("--device", &self.devices),
        ] {
            for path in paths {
                option(name, path.as_os_str());
            }
        }
        let l = self.limits;
        for (name, value) in [
            ("--data", l.data),
            ("--cpu", l.cpu),
            ("--fsize", l.fsize),
            ("--nproc", l.nproc),
        ] {
            option(name, value.to_string().as_ref());
        }
        option("--arg0", &self.arg0);
        out.push("--".into());
        out.push(self.program.clone());
        out.extend(self.args.iter().cloned());
        out
    }

    /// Reads what [`Inside::to_args`] wrote.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, String> {
        let mut args = args.into_iter();
        let mut inside = Self {
            read: Vec::new(),
            write: Vec::new(),
            devices: Vec::new(),
            limits: Limits::for_timeout(std::time::Duration::ZERO),
            arg0: OsString::new(),
            program: OsString::new(),
            args: Vec::new(),
        };
        while let Some(name) = args.next() {
            if name == "--" {
                inside.program = args.next().ok_or("no program after `--`")?;
                inside.args = args.collect();
                if inside.arg0.is_empty() {
                    inside.arg0 = inside.program.clone();
                }
                return Ok(inside);
            }
            let value = args
                .next()
                .ok_or_else(|| format!("`{}` without a value", name.to_string_lossy()))?;
            inside.set(&name, value)?;
        }
        Err("no `--` before the program".to_owned())
    }

    fn set(&mut self, name: &OsStr, value: OsString) -> Result<(), String> {
        let number = |v: &OsStr| {
            v.to_str()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("`{}` is not a number", v.to_string_lossy()))
        };
        match name.to_str().unwrap_or_default() {
            "--read" => self.read.push(value.into()),
            "--write" => self.write.push(value.into()),
            "--device" => self.devices.push(value.into()),
            "--data" => self.limits.data = number(&value)?,
            "--cpu" => self.limits.cpu = number(&value)?,
            "--fsize" => self.limits.fsize = number(&value)?,
            "--nproc" => self.limits.nproc = number(&value)?,
            "--arg0" => self.arg0 = value,
            other => return Err(format!("unknown option `{other}`")),
        }
        Ok(())
    }
}

/// Runs as `berth __sandbox-exec ARGS` inside the sandbox: confines this process as
/// `ARGS` say and executes the program they name. Never returns: when anything fails it
/// says so on stderr (which the caller keeps as the program's) and exits 127, having
/// started nothing.
pub fn exec_inside(args: Vec<OsString>) -> ! {
    use std::os::unix::process::CommandExt;
    let inside = match Inside::parse(args) {
        Ok(inside) => inside,
        Err(why) => fail(&format!("bad arguments: {why}")),
    };
    if let Err(why) = confine(&inside) {
        fail(&why);
    }
    let error = std::process::Command::new(&inside.program)
        .arg0(&inside.arg0)
        .args(&inside.args)
        .exec();
    fail(&format!(
        "could not execute `{}`: {error}",
        inside.program.to_string_lossy()
    ))
}

fn fail(message: &str) -> ! {
    eprintln!("berth sandbox: {message}");
    std::process::exit(127)
}

/// `no_new_privs`, the limits, then Landlock where the kernel has it.
fn confine(inside: &Inside) -> Result<(), String> {
    rustix::thread::set_no_new_privs(true).map_err(|e| format!("no_new_privs: {e}"))?;
    set_limits(inside.limits)?;
    #[cfg(target_os = "linux")]
    super::landlock::restrict(&inside.read, &inside.write, &inside.devices)
        .map_err(|e| format!("Landlock: {e}"))?;
    Ok(())
}

/// Lowers each limit to `limits` (soft and hard, so the program cannot raise it again),
/// and core dumps to none.
fn set_limits(limits: Limits) -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    for (resource, value) in [
        (Resource::Data, limits.data),
        (Resource::Cpu, limits.cpu),
        (Resource::Fsize, limits.fsize),
        (Resource::Nproc, limits.nproc),
        (Resource::Core, 0),
    ] {
        let now = getrlimit(resource);
        let value = now.maximum.map_or(value, |max| max.min(value));
        setrlimit(
            resource,
            Rlimit {
                current: Some(value),
                maximum: Some(value),
            },
        )
        .map_err(|e| format!("could not set {resource:?} to {value}: {e}"))?;
    }
    Ok(())
}
