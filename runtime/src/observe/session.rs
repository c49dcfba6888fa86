//! One conversation with a stdio MCP server: `initialize`, then each list its
//! capabilities offer (paginated), then the server is stopped. Messages are JSON-RPC 2.0,
//! one per line, as the MCP stdio transport has them.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::{Value, json};

use super::{Launch, ObserveError};

/// The MCP revision berth asks for; a server answers with the one it speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// At most this many pages of one list: a server that keeps sending cursors is refused.
const MAX_PAGES: usize = 100;

/// What the server answered, each list as it sent it (pages joined).
#[derive(Debug, Default)]
pub struct Answers {
    pub initialize: Value,
    pub tools: Option<Vec<Value>>,
    pub prompts: Option<Vec<Value>>,
    pub resources: Option<Vec<Value>>,
    pub resource_templates: Option<Vec<Value>>,
}

/// A running server and the lines it writes.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    deadline: Instant,
    next_id: u64,
}

/// One way to talk to a server: a request and its answer's `result` (`None` for a
/// notification). Stdio here; a remote server's HTTP transport is the caller's.
pub trait Exchange {
    fn call(&mut self, method: &str, params: Option<Value>) -> Result<Option<Value>, ObserveError>;
}

/// Starts the server `launch` describes, asks what it offers, stops it.
pub fn converse(launch: &Launch) -> Result<Answers, ObserveError> {
    let mut session = Session::start(launch)?;
    let answers = ask(&mut session);
    session.stop();
    answers.map_err(|e| match e {
        ObserveError::Exited { .. } | ObserveError::Timeout { .. } => {
            e.with_stderr(&session.stderr())
        }
        other => other,
    })
}

/// `initialize`, then each list the server's capabilities offer, every page.
pub fn ask(server: &mut dyn Exchange) -> Result<Answers, ObserveError> {
    let initialize = server
        .call(
            "initialize",
            Some(json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "berth", "version": env!("CARGO_PKG_VERSION")},
            })),
        )?
        .unwrap_or(Value::Null);
    server.call("notifications/initialized", None)?;
    let offers = |what: &str| initialize["capabilities"].get(what).is_some();
    let mut answers = Answers {
        initialize: initialize.clone(),
        ..Answers::default()
    };
    if offers("tools") {
        answers.tools = Some(list(server, "tools/list", "tools")?);
    }
    if offers("prompts") {
        answers.prompts = Some(list(server, "prompts/list", "prompts")?);
    }
    if offers("resources") {
        answers.resources = Some(list(server, "resources/list", "resources")?);
        answers.resource_templates = Some(list(
            server,
            "resources/templates/list",
            "resourceTemplates",
        )?);
    }
    Ok(answers)
}

/// Every page of a list method, joined.
fn list(server: &mut dyn Exchange, method: &str, key: &str) -> Result<Vec<Value>, ObserveError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = server.call(method, Some(params))?.unwrap_or(Value::Null);
        match page.get(key) {
            Some(Value::Array(found)) => items.extend(found.iter().cloned()),
            _ => {
                return Err(ObserveError::Protocol(format!(
                    "`{method}` answered without a `{key}` list"
                )));
            }
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
            _ => return Ok(items),
        }
    }
    Err(ObserveError::Protocol(format!(
        "`{method}` sent more than {MAX_PAGES} pages"
    )))
}

impl Exchange for Session {
    fn call(&mut self, method: &str, params: Option<Value>) -> Result<Option<Value>, ObserveError> {
        match params {
            Some(params) => self.request(method, params).map(Some),
            None => self.notify(method).map(|()| None),
        }
    }
}

impl Session {
    fn start(launch: &Launch) -> Result<Self, ObserveError> {
        use std::os::unix::process::CommandExt;
        let (program, args) = launch.command_line();
        let mut child = Command::new(&program)
            .args(&args)
            .current_dir(&launch.cwd)
            .env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| ObserveError::Start {
                program: program.clone(),
                error: e.to_string(),
            })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                let mut text = sink
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // Only the start is kept: enough to say why a server failed.
                if text.len() < 4096 {
                    text.push_str(&String::from_utf8_lossy(&buffer[..n]));
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
            stderr,
            deadline: Instant::now() + launch.timeout,
            next_id: 1,
        })
    }

    /// Sends a request and waits for its answer (other messages are passed over).
    fn request(&mut self, method: &str, params: Value) -> Result<Value, ObserveError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let line = self.next_line(method)?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                // A server that logs to stdout: not a message, passed over.
                continue;
            };
            if message.get("id") != Some(&json!(id)) || message.get("method").is_some() {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(ObserveError::Protocol(format!(
                    "`{method}` failed: {}",
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("an error without a message")
                )));
            }
            return Ok(message.get("result").cloned().unwrap_or(Value::Null));
        }
    }

    fn notify(&mut self, method: &str) -> Result<(), ObserveError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    fn send(&mut self, message: &Value) -> Result<(), ObserveError> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|_| ObserveError::Exited {
                stderr: String::new(),
            })
    }

    fn next_line(&mut self, method: &str) -> Result<String, ObserveError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left.max(Duration::from_millis(1))) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(ObserveError::Timeout {
                waiting_for: method.to_owned(),
                stderr: String::new(),
            }),
            Err(RecvTimeoutError::Disconnected) => Err(ObserveError::Exited {
                stderr: String::new(),
            }),
        }
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Ends the server and whatever it started.
    fn stop(&mut self) {
        let pid = Pid::from_child(&self.child);
        let _ = kill_process_group(pid, Signal::KILL);
        let _ = self.child.wait();
    }
}
