//! The sandbox plugin code berth starts itself runs in (issue #53): hostile MCP servers
//! observed by `lock`, each trying one thing beside answering, as root and as an ordinary
//! user (`berthtest`, which `.ci/run` creates); output bounds and the end of every process
//! (P4-8, P4-9); Python's bytecode never written into the store (P4-13); and nothing
//! started where no sandbox can be made.

mod bounds;
mod hostile;
mod python;
mod unavailable;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, Run, TestContext, require_or_skip};

/// Who runs berth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum As {
    Root,
    /// An ordinary user: `berthtest` when the tests run as root, else whoever runs them.
    User,
}

/// The user id and group id of `berthtest`.
fn berthtest() -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, "berthtest"]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A project berth locks as `who`: its own [`TestContext`], owned by the user when berth
/// runs as one, and the berth binary that user can run.
struct Lab {
    ctx: TestContext,
    /// The user to switch to (when the tests run as root and berth must not).
    user: Option<(u32, u32)>,
    berth: PathBuf,
}

impl Lab {
    /// A lab for `who`, or `None` (after [`require_or_skip`]) where that cannot be had.
    fn new(who: As) -> Option<Self> {
        if Command::new("bwrap").arg("--version").output().is_err() {
            require_or_skip(
                "bubblewrap (`bwrap`)",
                "install it: `apt-get install bubblewrap`",
            );
            return None;
        }
        let root = running_as_root();
        let user = match (who, root) {
            (As::Root, false) => {
                require_or_skip("root", "run the tests as root to observe as root");
                return None;
            }
            (As::Root, true) | (As::User, false) => None,
            (As::User, true) => match berthtest() {
                Some(ids) => Some(ids),
                None => {
                    require_or_skip(
                        "the user `berthtest`",
                        "create it with `useradd -m berthtest` (.ci/run does)",
                    );
                    return None;
                }
            },
        };
        let ctx = TestContext::new();
        // The built berth may sit where another user cannot read (root's home, in CI).
        let berth = ctx.root.join("bin/berth");
        std::fs::create_dir_all(ctx.root.join("bin")).expect("mkdir");
        let built = common::berth_bin();
        std::fs::hard_link(&built, &berth)
            .or_else(|_| std::fs::copy(&built, &berth).map(|_| ()))
            .expect("link berth");
        Some(Self { ctx, user, berth })
    }

    /// A lab for whoever runs the tests.
    fn as_myself() -> Option<Self> {
        Self::new(if running_as_root() {
            As::Root
        } else {
            As::User
        })
    }

    /// `berth ARGS` as the lab's user, in the work folder, with `PATH` for `python3`.
    fn berth(&self, args: &[&str]) -> Command {
        self.berth_under(&[], args)
    }

    /// `WRAPPER... berth ARGS` (`prlimit …`, `unshare …`), as [`Lab::berth`].
    fn berth_under(&self, wrapper: &[&str], args: &[&str]) -> Command {
        let mut words: Vec<std::ffi::OsString> = Vec::new();
        if let Some((uid, gid)) = self.user {
            words.extend(
                [
                    "setpriv",
                    &format!("--reuid={uid}"),
                    &format!("--regid={gid}"),
                ]
                .map(Into::into),
            );
            words.extend(["--clear-groups", "--"].map(Into::into));
        }
        words.extend(wrapper.iter().map(Into::into));
        words.push(self.berth.clone().into());
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        if self.user.is_some() {
            // The user's own `PATH`: root's may name folders it cannot read.
            cmd.env("PATH", "/usr/local/bin:/usr/bin:/bin");
        }
        cmd.args(args).current_dir(&self.ctx.work);
        common::apply_env(&mut cmd, &self.ctx.home);
        cmd.env("BERTH_STORE", &self.ctx.store)
            .env("BERTH_GITHUB_URL", self.ctx.github_url());
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        Run::from(self.berth(args).output().expect("run berth"))
    }

    /// Gives the lab's files to its user (after they are written, before berth runs); the
    /// berth binary, a link to the built one, stays as it is.
    fn hand_over(&self) {
        let Some((uid, gid)) = self.user else {
            return;
        };
        let owner = format!("{uid}:{gid}");
        let ctx = &self.ctx;
        let chown = |recursive: bool, path: &Path| {
            let mut cmd = Command::new("chown");
            if recursive {
                cmd.arg("-R");
            }
            let status = cmd.arg(&owner).arg(path).status().expect("chown");
            assert!(status.success(), "chown {}", path.display());
        };
        chown(false, &ctx.root);
        for dir in [&ctx.home, &ctx.work, &ctx.upstream] {
            chown(true, dir);
        }
    }

    /// A plugin `name` whose one server (also `name`: servers of a set have names of their
    /// own) is `python3 hostile_server.py ARGS`.
    fn hostile(&self, name: &str, args: &[&str]) {
        let mut words = vec!["${CLAUDE_PLUGIN_ROOT}/hostile_server.py".to_owned()];
        words.extend(args.iter().map(|a| (*a).to_owned()));
        let plugin = self.plugin(name);
        std::fs::copy(
            common::fixtures().join("mcp/hostile_server.py"),
            plugin.join("hostile_server.py"),
        )
        .expect("copy the hostile server");
        let servers =
            serde_json::json!({"mcpServers": {name: {"command": "python3", "args": words}}});
        std::fs::write(plugin.join(".mcp.json"), servers.to_string()).expect("write");
    }

    /// The folder of a new plugin `name` (with its manifest) under `plugins/`.
    fn plugin(&self, name: &str) -> PathBuf {
        let plugin = self.ctx.work.join("plugins").join(name);
        std::fs::create_dir_all(plugin.join(".claude-plugin")).expect("mkdir");
        std::fs::write(
            plugin.join(".claude-plugin/plugin.json"),
            format!(r#"{{"name": "{name}", "version": "1.0.0"}}"#),
        )
        .expect("write");
        plugin
    }

    /// A manifest of every plugin under `plugins/`.
    fn manifest(&self) {
        let mut text = String::new();
        for name in common::list_dir(&self.ctx.work.join("plugins")) {
            text.push_str(&format!("[[plugin]]\nsource = \"./plugins/{name}\"\n"));
        }
        self.ctx.write_manifest(&text);
    }

    /// `berth plugins lock`, which must succeed.
    fn lock(&self) -> Run {
        let run = self.run(&["plugins", "lock"]);
        assert_eq!(run.code, 0, "lock failed:\n{}", run.stderr);
        run
    }

    /// What each hostile server said of its attempt, by mode (the description of its tool
    /// `probe`, as observed and kept in the store).
    fn outcomes(&self) -> BTreeMap<String, String> {
        let mut found = BTreeMap::new();
        let entries = self.ctx.store.join("store-v1");
        for name in common::list_dir(&entries) {
            let file = entries.join(&name).join("manifest.json");
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let manifest: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            let said = manifest["tools"][0]["description"].as_str().unwrap_or("");
            if let Some((mode, outcome)) = said.split_once(": ") {
                found.insert(mode.to_owned(), outcome.to_owned());
            }
        }
        found
    }

    /// The lock's `unobserved` reason of each plugin's server, if any.
    fn unobserved(&self) -> BTreeMap<String, String> {
        let lock: toml::Value = toml::from_str(&self.ctx.lock_text()).expect("lock");
        let records = lock.get("tools").and_then(toml::Value::as_array);
        records
            .into_iter()
            .flatten()
            .filter_map(|r| {
                Some((
                    r.get("plugin")?.as_str()?.to_owned(),
                    r.get("unobserved")?.as_str()?.to_owned(),
                ))
            })
            .collect()
    }

    /// `berth store verify` passes: no entry changed.
    fn store_verifies(&self) {
        let run = self.run(&["store", "verify"]);
        assert_eq!(
            run.code, 0,
            "the store no longer verifies:\n{}{}",
            run.stdout, run.stderr
        );
    }

    /// No file under the lab whose name starts with `prefix` (what a server would leave).
    fn no_file_named(&self, prefix: &str) {
        let mut files = Vec::new();
        common::all_files(&self.ctx.root, &mut files);
        let left: Vec<&PathBuf> = files
            .iter()
            .filter(|f| {
                f.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        assert!(
            left.is_empty(),
            "a server wrote outside its scratch: {left:?}"
        );
    }

    /// The processes still running a hostile server of this lab (waiting up to `seconds`
    /// for them to go).
    fn survivors(&self, seconds: u64) -> Vec<String> {
        let root = self.ctx.root.display().to_string();
        common::processes_left(&["hostile_server.py", &root], seconds)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.ctx.root.join(rel)
    }
}

/// `path` as text, for a server's argument.
fn text(path: &Path) -> String {
    path.display().to_string()
}
