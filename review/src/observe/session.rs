//! One conversation with a stdio MCP server: `initialize`, then each list its
//! capabilities offer (paginated), then the server is stopped with everything it started.
//! Messages are JSON-RPC 2.0, one per line, as the MCP stdio transport has them. What a
//! server writes is bounded: a line, all of its output, and the part of its stderr kept.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::ChildStdin;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Launch, ObserveError};
use crate::sandbox::{self, Running, SandboxError};

/// The MCP revision berth asks for; a server answers with the one it speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// At most this many pages of one list: a server that keeps sending cursors is refused.
const MAX_PAGES: usize = 100;

/// The longest line a server may write to stdout: a longer one is a protocol error, and
/// no more of it is read.
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// The most a server may write to stdout in one conversation.
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// How much of the end of what a server writes to stderr is kept, to say why it failed.
const STDERR_TAIL_BYTES: usize = 4096;

/// What the reader of a server's stdout passes on.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Output {
    Line(String),
    /// A line passed [`MAX_LINE_BYTES`]; nothing more is read.
    TooLong,
    /// The output passed [`MAX_OUTPUT_BYTES`]; nothing more is read.
    TooMuch,
}

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
    running: Running,
    stdin: ChildStdin,
    lines: Receiver<Output>,
    stderr: Arc<Mutex<Vec<u8>>>,
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
        let mut running = sandbox::spawn(&launch.spawn(), launch.sandbox).map_err(|e| match e {
            SandboxError::Unavailable { why } => ObserveError::NoSandbox { why },
            SandboxError::Start { program, error } => ObserveError::Start { program, error },
        })?;
        let (stdin, stdout, mut stderr_pipe) = running.pipes();
        let (send, lines) = channel();
        std::thread::spawn(move || read_lines(stdout, &send));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                let mut tail = berth_store::unpoisoned(sink.lock());
                keep_tail(&mut tail, &buffer[..n]);
            }
        });
        Ok(Self {
            running,
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
            Ok(Output::Line(line)) => Ok(line),
            Ok(Output::TooLong) => Err(ObserveError::Protocol(format!(
                "it wrote a line longer than {} MiB",
                MAX_LINE_BYTES >> 20
            ))),
            Ok(Output::TooMuch) => Err(ObserveError::Protocol(format!(
                "it wrote more than {} MiB",
                MAX_OUTPUT_BYTES >> 20
            ))),
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
        let tail = berth_store::unpoisoned(self.stderr.lock());
        String::from_utf8_lossy(&tail[tail.len().saturating_sub(STDERR_TAIL_BYTES)..]).into_owned()
    }

    /// Ends the server and whatever it started.
    fn stop(&mut self) {
        self.running.stop();
    }
}

/// Reads `stdout` line by line into `send`, within [`MAX_LINE_BYTES`] a line and
/// [`MAX_OUTPUT_BYTES`] in all: past either it says so and stops reading, so an endless
/// line costs at most one line's memory. Lines are taken as UTF-8, lossily.
pub(super) fn read_lines(stdout: impl Read, send: &Sender<Output>) {
    let mut reader = BufReader::with_capacity(64 << 10, stdout);
    let mut line: Vec<u8> = Vec::new();
    let mut total = 0usize;
    loop {
        let buffer = match reader.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(buffer) => buffer,
        };
        let end = buffer.iter().position(|b| *b == b'\n');
        let taken = end.map_or(buffer.len(), |i| i + 1);
        total += taken;
        let too = if line.len() + end.unwrap_or(buffer.len()) > MAX_LINE_BYTES {
            Some(Output::TooLong)
        } else if total > MAX_OUTPUT_BYTES {
            Some(Output::TooMuch)
        } else {
            None
        };
        if let Some(too) = too {
            let _ = send.send(too);
            return;
        }
        line.extend_from_slice(&buffer[..end.unwrap_or(buffer.len())]);
        reader.consume(taken);
        if end.is_some() {
            let text = String::from_utf8_lossy(&line).into_owned();
            line.clear();
            if send.send(Output::Line(text)).is_err() {
                return;
            }
        }
    }
}

/// Appends `more` to `tail`, keeping about the last [`STDERR_TAIL_BYTES`].
pub(super) fn keep_tail(tail: &mut Vec<u8>, more: &[u8]) {
    tail.extend_from_slice(more);
    if tail.len() > 2 * STDERR_TAIL_BYTES {
        tail.drain(..tail.len() - STDERR_TAIL_BYTES);
    }
}
