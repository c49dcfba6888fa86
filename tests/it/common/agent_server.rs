//! The real OpenHands agent server (`openhands-agent-server` 1.58.2 from PyPI, in the venv
//! whose Python `BERTH_AGENT_SERVER_PYTHON` names; `.ci/run` makes it from
//! `fixtures/openhands-agent-server-requirements.txt`), run on 127.0.0.1 for a test and
//! stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The agent server's Python, when this machine has one.
pub fn agent_server_python() -> Option<PathBuf> {
    std::env::var_os("BERTH_AGENT_SERVER_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

pub struct AgentServer {
    child: Child,
    pub base: String,
    log: PathBuf,
}

impl AgentServer {
    /// Starts it in `cwd` (where it keeps `workspace/conversations/`) with
    /// `OH_PERSISTENCE_DIR=persist` and `HOME=home`, and waits for `/health`.
    pub fn start(python: &Path, cwd: &Path, persist: &Path, home: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = cwd.join("agent-server.log");
        let out = std::fs::File::create(&log).expect("log file");
        let child = Command::new(python)
            .args([
                "-m",
                "openhands.agent_server",
                "--host",
                "127.0.0.1",
                "--port",
            ])
            .arg(port.to_string())
            .current_dir(cwd)
            .env("OH_PERSISTENCE_DIR", persist)
            .env("HOME", home)
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("OPENHANDS_SUPPRESS_BANNER", "1")
            .env("NO_PROXY", "127.0.0.1,localhost,::1")
            // A conversation's LLM key is not kept across a restart without the server's
            // secret key; the fake model takes any key.
            .env("OPENAI_API_KEY", "fake")
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("start the agent server");
        let server = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        let client = reqwest::blocking::Client::new();
        loop {
            if client
                .get(format!("{}/health", server.base))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "the agent server did not answer /health within 120 s:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `POST PATH` with a JSON body; the answer's status and JSON.
    pub fn post(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let answer = reqwest::blocking::Client::new()
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(Duration::from_secs(120))
            .send()
            .expect("the agent server answers");
        let status = answer.status().as_u16();
        let text = answer.text().unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    }
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `fixtures/fake_openai.py`: an OpenAI-compatible model on 127.0.0.1 that answers every
/// turn with `Done.` and logs each request; stopped when dropped.
pub struct FakeModel {
    child: Child,
    pub base: String,
    log: PathBuf,
}

impl FakeModel {
    pub fn start(log: &Path) -> Self {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .arg(super::fixtures().join("fake_openai.py"))
            .arg(log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start fake_openai.py (needs python3)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("fake_openai.py says where it listens");
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .expect("fake_openai.py's first line")
            .to_owned();
        Self {
            child,
            base,
            log: log.to_owned(),
        }
    }

    /// The agent's requests (those offering tools; a title's request offers none), in order.
    pub fn turns(&self) -> Vec<serde_json::Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.get("tools").is_some())
            .collect()
    }

    /// The request bodies it was sent, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|r| r["body"].clone())
            .collect()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl AgentServer {
    /// `GET PATH`: the answer's JSON.
    pub fn get(&self, path: &str) -> serde_json::Value {
        let text = reqwest::blocking::Client::new()
            .get(format!("{}{path}", self.base))
            .timeout(Duration::from_secs(60))
            .send()
            .and_then(reqwest::blocking::Response::text)
            .expect("the agent server answers");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("JSON ({e}): {text}"))
    }

    /// Sends `text` to conversation `id` and runs it; waits until `model` was asked for
    /// the turn's answer and the conversation is no longer running.
    pub fn run_turn(&self, id: &str, text: &str, model: &FakeModel) {
        let asked = model.turns().len();
        let (status, answer) = self.post(
            &format!("/api/conversations/{id}/events"),
            &serde_json::json!({"role": "user", "content": [{"type": "text", "text": text}], "run": true}),
        );
        assert_eq!(status, 200, "{answer}\n{}", self.log());
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let state = self.get(&format!("/api/conversations/{id}"));
            let status = state["execution_status"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert_ne!(status, "error", "{}", self.log());
            if model.turns().len() > asked && status != "running" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the turn did not end within 120 s ({status}):\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}
