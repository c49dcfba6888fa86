//! Running the plugin set's command hooks for one event, with the OpenHands hook contract.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::process::run_command;
use crate::set::PluginSet;
use berth_plugin::hooks::{matches, pascal_case};

/// Environment variables never passed to hooks: credentials of the agent and of berth.
const SCRUBBED_ENV: [&str; 8] = [
    "SESSION_API_KEY",
    "OH_SECRET_KEY",
    "LMNR_PROJECT_API_KEY",
    "OTEL_HEADERS",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "BERTH_API_KEY",
    "BERTH_SESSION_API_KEY",
];

/// Events where a blocking hook stops the action (and the remaining hooks).
const BLOCKING_EVENTS: [&str; 3] = ["pre_tool_use", "user_prompt_submit", "stop"];

/// One event to run hooks for.
#[derive(Debug, Clone)]
pub struct HookEvent {
    /// The snake_case event.
    pub event: &'static str,
    /// The tool, for tool events.
    pub tool_name: Option<String>,
    /// The conversation.
    pub session_id: Option<String>,
    /// The workspace: hooks run here, and see it as `OPENHANDS_PROJECT_DIR`.
    pub project_dir: PathBuf,
    /// More event fields (`tool_input`, `tool_response`, `message`, `metadata`), usually
    /// from the JSON the caller passed on stdin.
    pub fields: Map<String, Value>,
}

/// What running the hooks of an event decided.
#[derive(Debug, Clone)]
pub struct HookOutcome {
    /// Whether the action is blocked (exit 2, `decision: deny` or `continue: false`).
    pub blocked: bool,
    /// The result document `berth hooks run` prints.
    pub report: Value,
}

impl HookEvent {
    /// The JSON a hook reads on stdin: the SDK's `HookEvent`, keys in its order.
    pub fn payload(&self) -> String {
        let field = |k: &str| self.fields.get(k).cloned().unwrap_or(Value::Null);
        let metadata = match self.fields.get("metadata") {
            Some(Value::Object(m)) => Value::Object(m.clone()),
            _ => json!({}),
        };
        json!({
            "event_type": pascal_case(self.event),
            "tool_name": self.tool_name,
            "tool_input": field("tool_input"),
            "tool_response": field("tool_response"),
            "message": field("message"),
            "session_id": self.session_id,
            "working_dir": self.project_dir.to_string_lossy(),
            "metadata": metadata,
        })
        .to_string()
    }
}

/// Runs the command hooks of `set` that match `event`, in plugin and file order. On a
/// blocking event the first block ends the run. A hook that fails any other way (exit code
/// other than 0 and 2, bad output, timeout) does not block; one past its timeout is killed
/// with its whole process group.
pub fn run_hooks(set: &PluginSet, event: &HookEvent) -> HookOutcome {
    let payload = event.payload();
    let blocking_event = BLOCKING_EVENTS.contains(&event.event);
    let mut results = Vec::new();
    let mut blocked = false;
    let mut reason: Option<String> = None;
    let mut decision: Option<&str> = None;
    let mut contexts: Vec<String> = Vec::new();
    let matchers = set
        .hooks
        .iter()
        .find(|(e, _)| *e == event.event)
        .map(|(_, m)| m.as_slice())
        .unwrap_or_default();
    'outer: for (matcher, plugin) in matchers {
        if !matches(&matcher.matcher, event.tool_name.as_deref()) {
            continue;
        }
        let plugin_root = set
            .plugins
            .iter()
            .find(|p| p.locked.name == *plugin)
            .map(|p| p.root.to_string_lossy().into_owned())
            .unwrap_or_default();
        for hook in &matcher.hooks {
            let mut result = json!({
                "plugin": plugin,
                "matcher": matcher.matcher,
                "type": hook.kind,
                "command": hook.command,
            });
            let ran = run_one(hook, &plugin_root, event, &payload, &mut result);
            results.push(result);
            let Some(verdict) = ran else {
                continue;
            };
            if let Some(context) = verdict.context.filter(|c| !c.is_empty()) {
                contexts.push(context);
            }
            if verdict.decision == Some("deny")
                || (decision.is_none() && verdict.decision.is_some())
            {
                decision = verdict.decision;
            }
            if verdict.blocked && blocking_event {
                blocked = true;
                reason = Some(
                    verdict
                        .reason
                        .unwrap_or_else(|| "Blocked by hook".to_owned()),
                );
                break 'outer;
            }
        }
    }
    let report = json!({
        "event": event.event,
        "tool_name": event.tool_name,
        "blocked": blocked,
        "continue": !blocked,
        "decision": if blocked { Some("deny") } else { decision },
        "reason": reason,
        "additional_context": if contexts.is_empty() { None } else { Some(contexts.join("\n")) },
        "hooks": results,
    });
    HookOutcome { blocked, report }
}

/// What one hook that ran said.
struct Verdict {
    /// It blocks (exit code 2, `decision: deny`, `continue: false`).
    blocked: bool,
    /// Why, from its answer or its standard error.
    reason: Option<String>,
    /// `allow` or `deny`, when it says.
    decision: Option<&'static str>,
    /// What it adds to the agent's context.
    context: Option<String>,
}

/// Runs one hook of a plugin (seen at `plugin_root`), recording what happened in
/// `result`; its verdict when it ran to the end in the foreground (a prompt or agent hook
/// is skipped, an async one only started).
fn run_one(
    hook: &berth_plugin::hooks::HookDefinition,
    plugin_root: &str,
    event: &HookEvent,
    payload: &str,
    result: &mut Value,
) -> Option<Verdict> {
    if hook.kind != "command" {
        result["skipped"] = json!(
            "only command hooks run outside the agent; prompt and agent hooks need its model"
        );
        return None;
    }
    let env = hook_env(event, plugin_root);
    if hook.is_async {
        result["async_started"] = json!(start_async(&hook.command, payload, &env, event));
        return None;
    }
    let outcome = run_command(
        &hook.command,
        payload.as_bytes(),
        &env,
        &event.project_dir,
        Duration::from_secs(hook.timeout),
    );
    let silent = Verdict {
        blocked: false,
        reason: None,
        decision: None,
        context: None,
    };
    let verdict = match outcome {
        Err(e) => {
            result["success"] = json!(false);
            result["error"] = json!(format!("could not start the hook: {e}"));
            silent
        }
        Ok(out) if out.timed_out => {
            result["success"] = json!(false);
            result["exit_code"] = Value::Null;
            result["timed_out"] = json!(true);
            result["stdout"] = json!(out.stdout);
            result["stderr"] = json!(out.stderr);
            result["error"] = json!(format!("Hook timed out after {} seconds", hook.timeout));
            silent
        }
        Ok(out) => {
            let verdict = verdict_of(&out);
            result["success"] = json!(out.exit_code == Some(0));
            result["exit_code"] = json!(out.exit_code);
            result["timed_out"] = json!(false);
            result["stdout"] = json!(out.stdout);
            result["stderr"] = json!(out.stderr);
            verdict
        }
    };
    let blocking_event = BLOCKING_EVENTS.contains(&event.event);
    result["blocked"] = json!(verdict.blocked && blocking_event);
    result["decision"] = json!(verdict.decision);
    result["reason"] = json!(verdict.reason);
    result["additional_context"] = json!(verdict.context);
    Some(verdict)
}

/// The verdict of a hook that exited: its exit code, and the JSON answer it printed.
fn verdict_of(out: &crate::process::CommandOutcome) -> Verdict {
    let mut verdict = Verdict {
        blocked: out.exit_code == Some(2),
        reason: None,
        decision: None,
        context: None,
    };
    if let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(out.stdout.trim()) {
        match answer
            .get("decision")
            .and_then(Value::as_str)
            .map(str::to_lowercase)
            .as_deref()
        {
            Some("allow") => verdict.decision = Some("allow"),
            Some("deny") => {
                verdict.decision = Some("deny");
                verdict.blocked = true;
            }
            _ => {}
        }
        verdict.reason = answer.get("reason").map(value_text);
        verdict.context = answer.get("additionalContext").map(value_text);
        if answer.get("continue").is_some_and(|c| !truthy(c)) {
            verdict.blocked = true;
        }
    }
    if verdict.blocked && verdict.reason.is_none() && !out.stderr.trim().is_empty() {
        verdict.reason = Some(out.stderr.trim().to_owned());
    }
    verdict
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => berth_plugin::pystr::py_str(other),
    }
}

/// Python truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The variables a hook sees on top of berth's own environment (minus credentials).
fn hook_env(event: &HookEvent, plugin_root: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            !SCRUBBED_ENV.contains(&k.as_str()) && !k.starts_with("OH_SESSION_API_KEYS_")
        })
        .collect();
    let project = event.project_dir.to_string_lossy().into_owned();
    let mut set = |k: &str, v: String| {
        env.retain(|(key, _)| key != k);
        env.push((k.to_owned(), v));
    };
    set("OPENHANDS_PROJECT_DIR", project.clone());
    set(
        "OPENHANDS_SESSION_ID",
        event.session_id.clone().unwrap_or_default(),
    );
    set("OPENHANDS_EVENT_TYPE", pascal_case(event.event));
    if let Some(tool) = &event.tool_name {
        set("OPENHANDS_TOOL_NAME", tool.clone());
    }
    set("CLAUDE_PLUGIN_ROOT", plugin_root.to_owned());
    set("PLUGIN_ROOT", plugin_root.to_owned());
    set("CLAUDE_PROJECT_DIR", project);
    env
}

/// Starts an `async` hook in the background, in its own session, and does not wait.
fn start_async(command: &str, payload: &str, env: &[(String, String)], event: &HookEvent) -> bool {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(&event.project_dir)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match child {
        Ok(mut child) => {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(payload.as_bytes());
            }
            true
        }
        Err(_) => false,
    }
}
