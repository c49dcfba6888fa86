//! Observing the tools, prompts and resources a locked stdio MCP server offers: what the
//! model reads of it, which a new version (or the same code reading something else) can
//! turn into a prompt injection without a file of the plugin changing.
//!
//! Observing runs the server's code, so callers observe only servers whose plugin the
//! policy and the approvals already let run, and it runs in the sandbox (`crate::sandbox`:
//! its own store entries and the host's runtime read-only, nothing else of the host, no
//! network, bounded resources, the whole PID namespace killed at the end), or not at all
//! where no sandbox can be made ([`ObserveError::NoSandbox`]) unless the person locking
//! asked for [`Sandboxing::Unsandboxed`]. The server runs with its pinned command (a
//! program in its plugin's store entry, or a locked package's closure), in a scratch
//! folder, with a minimal environment: `PATH`, `HOME` and `TMPDIR` (the scratch folder),
//! `LANG`, and each variable it declares set to a placeholder; no proxy variables; for a
//! bounded time, its output bounded. The answers become a canonical JSON document whose
//! SHA-256 the lock records.

mod session;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::sandbox::{HOW_TO_ENABLE, Sandboxing, Spawn};
use berth_runtime::set::PluginSet;
pub use session::{Answers, Exchange, PROTOCOL_VERSION, ask};

/// The version of the manifest document's shape.
pub const MANIFEST_FORMAT: u64 = 1;

/// The value each variable a server declares gets while it is observed: observing never
/// hands a server a secret.
pub const PLACEHOLDER: &str = "berth-observe-placeholder";

/// How long one server may take to answer everything: `BERTH_OBSERVE_TIMEOUT` seconds,
/// default 15.
pub fn timeout() -> Duration {
    std::env::var("BERTH_OBSERVE_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(Duration::from_secs(15), Duration::from_secs_f64)
}

/// How to start one server for observation.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: String,
    pub args: Vec<String>,
    /// The whole environment it gets.
    pub env: Vec<(String, String)>,
    /// Its scratch folder, also its `HOME`.
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// In the sandbox (or not at all), or as the user (`--observe-unsandboxed`).
    pub sandbox: Sandboxing,
    /// The store's root: the sandbox shows the entries under it the command line names.
    pub store_root: PathBuf,
}

impl Launch {
    /// What the sandbox starts.
    fn spawn(&self) -> Spawn<'_> {
        Spawn {
            program: &self.program,
            args: &self.args,
            env: &self.env,
            scratch: &self.cwd,
            store_root: &self.store_root,
            timeout: self.timeout,
        }
    }
}

/// The reason the lock records for a server not observed because no sandbox can be made
/// here (see [`ObserveError::NoSandbox`]).
pub const NO_SANDBOX: &str = "no sandbox here";

/// The largest manifest kept: a server whose answers make a longer one is refused.
pub const MAX_MANIFEST_BYTES: usize = 16 << 20;

/// Why a server could not be observed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObserveError {
    #[error("could not start `{program}`: {error}")]
    Start { program: String, error: String },
    #[error("it did not answer `{waiting_for}` in time{}", tail(stderr))]
    Timeout { waiting_for: String, stderr: String },
    #[error("it exited before answering{}", tail(stderr))]
    Exited { stderr: String },
    #[error("{0}")]
    Protocol(String),
    /// No sandbox can be made here, so it was not started.
    #[error("{NO_SANDBOX}: {why}; to observe in a sandbox, {HOW_TO_ENABLE}")]
    NoSandbox { why: String },
}

impl ObserveError {
    /// Why, as the lock records it: the same on every machine, so without what the server
    /// wrote to stderr (paths, times) or the path of the program that did not start. The
    /// whole message ([`Display`](std::fmt::Display)) is for the person locking.
    pub fn reason(&self) -> String {
        match self {
            Self::Start { .. } => "its program could not be started".to_owned(),
            Self::Timeout { waiting_for, .. } => {
                format!("it did not answer `{waiting_for}` in time")
            }
            Self::Exited { .. } => "it exited before answering".to_owned(),
            Self::Protocol(message) => message.clone(),
            Self::NoSandbox { .. } => NO_SANDBOX.to_owned(),
        }
    }

    fn with_stderr(self, text: &str) -> Self {
        match self {
            Self::Timeout { waiting_for, .. } => Self::Timeout {
                waiting_for,
                stderr: text.to_owned(),
            },
            Self::Exited { .. } => Self::Exited {
                stderr: text.to_owned(),
            },
            other => other,
        }
    }
}

/// The last line a server wrote to stderr, as `(it said: …)`.
fn tail(stderr: &str) -> String {
    match stderr.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) => format!(" (it said: {})", line.trim()),
        None => String::new(),
    }
}

/// Runs the server (in the sandbox, unless the launch says otherwise) and returns its
/// canonical manifest (see [`manifest_of`]), at most [`MAX_MANIFEST_BYTES`] long.
pub fn observe(launch: &Launch) -> Result<Value, ObserveError> {
    std::fs::create_dir_all(&launch.cwd).map_err(|e| ObserveError::Start {
        program: launch.program.clone(),
        error: format!("could not make its scratch folder: {e}"),
    })?;
    let answers = session::converse(launch)?;
    bounded(manifest_of(&answers))
}

/// `manifest`, unless it is longer than [`MAX_MANIFEST_BYTES`] (pages of a list are
/// bounded in number, not in size).
fn bounded(manifest: Value) -> Result<Value, ObserveError> {
    if manifest.to_string().len() > MAX_MANIFEST_BYTES {
        return Err(ObserveError::Protocol(format!(
            "what it offers is longer than {} MiB",
            MAX_MANIFEST_BYTES >> 20
        )));
    }
    Ok(manifest)
}

/// The canonical document of what a server offers: its protocol version, `serverInfo`,
/// capabilities and instructions, and its tools (by name), prompts (by name), resources
/// (by URI) and resource templates (by URI template), keys sorted. Its bytes
/// (`to_string`) are what the lock's hash covers.
pub fn manifest_of(answers: &session::Answers) -> Value {
    let init = &answers.initialize;
    let sorted = |items: &Option<Vec<Value>>, key: &str| -> Value {
        let Some(items) = items else {
            return Value::Null;
        };
        let mut items = items.clone();
        items.sort_by(|a, b| {
            let k = |v: &Value| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
            k(a).cmp(&k(b))
        });
        Value::Array(items)
    };
    let mut doc = json!({
        "format": MANIFEST_FORMAT,
        "protocolVersion": init.get("protocolVersion").cloned().unwrap_or(Value::Null),
        "serverInfo": init.get("serverInfo").cloned().unwrap_or(Value::Null),
        "capabilities": init.get("capabilities").cloned().unwrap_or(Value::Null),
        "instructions": init.get("instructions").cloned().unwrap_or(Value::Null),
        "tools": sorted(&answers.tools, "name"),
        "prompts": sorted(&answers.prompts, "name"),
        "resources": sorted(&answers.resources, "uri"),
        "resourceTemplates": sorted(&answers.resource_templates, "uriTemplate"),
    });
    if let Value::Object(map) = &mut doc {
        map.retain(|_, v| !v.is_null());
    }
    berth_lockfile_schema::canonical_json(&doc)
}

/// One MCP server of a set, and how (or whether) it can be observed.
#[derive(Debug, Clone)]
pub struct Target {
    pub plugin: String,
    pub server: String,
    pub kind: TargetKind,
}

/// What kind of server a [`Target`] is.
#[derive(Debug, Clone)]
pub enum TargetKind {
    /// A stdio server whose code the lock pins: observable.
    Pinned(Launch),
    /// A stdio server whose program is neither in its plugin nor a locked package.
    Unpinned { program: String },
    /// A remote server (`http`, `sse`): observed only when asked (`berth plugins observe
    /// --remote`), with the headers it declares (values as written: `${VAR}` unfilled).
    Remote {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Every MCP server of `set`, each with how it would be observed: scratch folders under
/// `scratch`, at most `timeout` each, started as `sandbox` says. A stdio server's code is
/// pinned when its program or one of its arguments is a path in the store (`store_root`):
/// a program of its plugin, or a locked package the set starts from the store.
pub fn targets(
    set: &PluginSet,
    store_root: &Path,
    scratch: &Path,
    timeout: Duration,
    sandbox: Sandboxing,
) -> Vec<Target> {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_owned());
    set.mcp_servers
        .iter()
        .enumerate()
        .map(|(i, (server, config, plugin))| {
            let kind = match (&config.command, &config.url) {
                (Some(program), _) => {
                    let in_store = |word: &String| Path::new(word).starts_with(store_root);
                    if in_store(program) || config.args.iter().any(in_store) {
                        let cwd = scratch.join(format!("{i}"));
                        let mut env = vec![
                            ("PATH".to_owned(), path.clone()),
                            ("HOME".to_owned(), cwd.display().to_string()),
                            ("LANG".to_owned(), "C.UTF-8".to_owned()),
                        ];
                        env.extend(
                            config
                                .env
                                .keys()
                                .filter(|k| !matches!(k.as_str(), "PATH" | "HOME"))
                                .map(|k| (k.clone(), PLACEHOLDER.to_owned())),
                        );
                        TargetKind::Pinned(Launch {
                            program: program.clone(),
                            args: config.args.clone(),
                            env,
                            cwd,
                            timeout,
                            sandbox,
                            store_root: store_root.to_owned(),
                        })
                    } else {
                        TargetKind::Unpinned {
                            program: program.clone(),
                        }
                    }
                }
                (None, Some(url)) => TargetKind::Remote {
                    url: url.clone(),
                    headers: config
                        .headers
                        .iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                            )
                        })
                        .collect(),
                },
                (None, None) => TargetKind::Unpinned {
                    program: String::new(),
                },
            };
            Target {
                plugin: plugin.clone(),
                server: server.clone(),
                kind,
            }
        })
        .collect()
}

/// How a remote MCP server is asked what it offers (its URL and headers as the set has
/// them): the caller's, as this crate links no network client.
pub type AskRemote<'a> = dyn Fn(&str, &[(String, String)]) -> Result<Value, String> + 'a;

/// Asks every MCP server of `set` again (those the lock records as observed, and any it
/// does not record) and compares each answer with the recorded manifest in `store`: one
/// line per server whose answer differs, or that was never observed. Remote servers are
/// asked through `remote` when given (their record is a first answer), else left as
/// recorded. What a server that lists its tools at a conversation's start under `tools =
/// "pinned"` is checked with.
pub fn recheck(
    set: &PluginSet,
    store: &berth_store::Store,
    timeout: Duration,
    remote: Option<&AskRemote<'_>>,
) -> Vec<String> {
    let scratch = std::env::temp_dir().join(format!(
        "berth-observe-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let mut problems = Vec::new();
    // A server asks no one: only the sandbox may start it.
    for target in targets(set, store.root(), &scratch, timeout, Sandboxing::Required) {
        let name = format!(
            "MCP server `{}` of plugin `{}`",
            target.server, target.plugin
        );
        let record = set
            .tools
            .iter()
            .find(|t| t.plugin == target.plugin && t.server == target.server);
        let recorded = record
            .and_then(|r| r.manifest.as_ref())
            .and_then(|h| crate::read_manifest(store, h));
        match (&target.kind, record, recorded) {
            (_, None, _) => problems.push(format!("{name} has no record in the lock")),
            (_, Some(r), None) => problems.push(match &r.unobserved {
                Some(why) => format!("{name} was never observed ({why})"),
                None => format!(
                    "{name}'s recorded answer is not in the store; run `berth plugins sync`"
                ),
            }),
            (TargetKind::Pinned(launch), Some(_), Some(manifest)) => match observe(launch) {
                Ok(now) if now == manifest => {}
                Ok(_) => problems.push(format!(
                    "{name} offers something else than the lock records"
                )),
                Err(e) => problems.push(format!("{name} did not answer: {e}")),
            },
            (TargetKind::Remote { url, headers }, Some(_), Some(manifest)) => {
                // Asked again only through the caller's HTTP client (this crate links none).
                match remote.map(|ask| ask(url, headers)) {
                    None => {}
                    Some(Ok(now)) if now == manifest => {}
                    Some(Ok(_)) => problems.push(format!(
                        "{name} offers something else than the first answer the lock records"
                    )),
                    Some(Err(e)) => problems.push(format!("{name} did not answer: {e}")),
                }
            }
            (TargetKind::Unpinned { .. }, Some(_), Some(_)) => {}
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    problems
}

#[cfg(test)]
mod tests;
