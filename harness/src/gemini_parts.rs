//! A plugin's hooks, agents and policies as a Gemini CLI extension holds them (0.61.0
//! reads `hooks/hooks.json`, `agents/*.md` and `policies/*.toml` from an extension), read
//! from the plugin as Claude Code reads it.
//!
//! Hooks are mapped as Gemini CLI's own `gemini hooks migrate --from-claude` maps Claude
//! Code's: its table of event names, tool names in matchers (as its tools are named now),
//! command hooks only.
//! Unlike it, a timeout is turned from Claude Code's seconds into Gemini CLI's
//! milliseconds, and the hook gets `CLAUDE_PLUGIN_ROOT` (Gemini CLI sets
//! `CLAUDE_PROJECT_DIR` itself). An agent keeps what Gemini CLI's strict agent front matter
//! takes: its name, description, the tools it maps, and its prompt.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::files::{pretty, string_or_list};
use super::guard::{is_component, read_entry_file};
use super::plan::Planned;
use berth_runtime::set::PluginInfo;

/// Claude Code's hook events and Gemini CLI's for each, as `gemini hooks migrate` maps
/// them (0.61.0; it spells Claude Code's `SubagentStop` `SubAgentStop`, so that one
/// matches nothing).
const EVENTS: [(&str, &str); 9] = [
    ("PreToolUse", "BeforeTool"),
    ("PostToolUse", "AfterTool"),
    ("UserPromptSubmit", "BeforeAgent"),
    ("Stop", "AfterAgent"),
    ("SubAgentStop", "AfterAgent"),
    ("SessionStart", "SessionStart"),
    ("SessionEnd", "SessionEnd"),
    ("PreCompact", "PreCompress"),
    ("Notification", "Notification"),
];

/// Claude Code's tool names and Gemini CLI 0.61.0's, for matchers and an agent's `tools`:
/// `gemini hooks migrate`'s table with the names its tools have now (it still says `grep`
/// and `ls` for `grep_search` and `list_directory`), and the other tools of the same job.
const TOOLS: [(&str, &str); 11] = [
    ("Edit", "replace"),
    ("MultiEdit", "replace"),
    ("Bash", "run_shell_command"),
    ("Read", "read_file"),
    ("Write", "write_file"),
    ("Glob", "glob"),
    ("Grep", "grep_search"),
    ("LS", "list_directory"),
    ("WebFetch", "web_fetch"),
    ("WebSearch", "google_web_search"),
    ("TodoWrite", "write_todos"),
];

/// The JSON value of the plugin's file `rel` (`./x.json` or `x.json`), read without a link.
fn json_file(info: &PluginInfo, rel: &str) -> Option<Value> {
    let rel = Path::new(rel.trim_start_matches("./"));
    let bytes = read_entry_file(&info.path, rel)?;
    serde_json::from_slice(&bytes).ok()
}

/// Each hooks object Claude Code reads of the plugin (event -> matcher groups): its
/// marketplace entry's `hooks` and its manifest's (inline, or files), and
/// `hooks/hooks.json`.
fn claude_hooks(info: &PluginInfo) -> Vec<Map<String, Value>> {
    let manifest = json_file(info, ".claude-plugin/plugin.json");
    let declared = [
        info.locked
            .definition
            .as_ref()
            .and_then(|d| d.components.get("hooks").cloned()),
        manifest.and_then(|m| m.get("hooks").cloned()),
    ];
    let mut files = vec!["hooks/hooks.json".to_owned()];
    let mut out = Vec::new();
    for value in declared.into_iter().flatten() {
        match value {
            Value::Object(events) => out.push(events),
            paths => files.extend(
                string_or_list(&paths)
                    .iter()
                    .map(|p| p.trim_start_matches("./").to_owned()),
            ),
        }
    }
    files.sort();
    files.dedup();
    for file in files {
        if let Some(Value::Object(events)) =
            json_file(info, &file).and_then(|v| v.get("hooks").cloned())
        {
            out.push(events);
        }
    }
    out
}

/// A matcher with Claude Code's tool names as Gemini CLI's (whole words only).
fn gemini_matcher(matcher: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let mapped = TOOLS.iter().find(|(c, _)| c == word).map(|(_, g)| *g);
        out.push_str(mapped.unwrap_or(word));
        word.clear();
    };
    for c in matcher.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// One Claude Code hook as Gemini CLI's, or why it cannot be.
fn gemini_hook(info: &PluginInfo, hook: &Value) -> Result<Value, String> {
    let kind = hook["type"].as_str().unwrap_or("command");
    let command = hook["command"].as_str().filter(|_| kind == "command");
    let Some(command) = command else {
        return Err(format!(
            "its type is `{kind}`, and Gemini CLI runs command hooks only"
        ));
    };
    let mut out = json!({
        "type": "command",
        "command": command,
        "env": {"CLAUDE_PLUGIN_ROOT": info.path.display().to_string()},
    });
    if let Some(seconds) = hook["timeout"].as_f64() {
        out["timeout"] = json!((seconds * 1000.0).round() as u64);
    }
    Ok(out)
}

/// The plugin's hooks as Gemini CLI's `hooks/hooks.json` (`None` if none is written), and
/// what is not written, one line a hook.
pub(super) fn hooks(info: &PluginInfo) -> (Option<Value>, Vec<String>) {
    let name = &info.locked.name;
    let mut events: Map<String, Value> = Map::new();
    let mut warnings = Vec::new();
    for object in claude_hooks(info) {
        for (event, groups) in object {
            let gemini = EVENTS.iter().find(|(c, _)| *c == event).map(|(_, g)| *g);
            for group in groups.as_array().into_iter().flatten() {
                let matcher = group["matcher"].as_str();
                let mut written = Vec::new();
                for hook in group["hooks"].as_array().into_iter().flatten() {
                    let what = hook["command"].as_str().unwrap_or_default();
                    let result = match gemini {
                        Some(_) => gemini_hook(info, hook),
                        None => Err("Gemini CLI has no event it matches".to_owned()),
                    };
                    match result {
                        Ok(hook) => written.push(hook),
                        Err(why) => warnings.push(format!(
                            "plugin `{name}`: its `{event}` hook `{what}` is not written for Gemini CLI: {why}"
                        )),
                    }
                }
                let (Some(gemini), false) = (gemini, written.is_empty()) else {
                    continue;
                };
                let mut out = json!({"hooks": written});
                if let Some(matcher) = matcher {
                    out["matcher"] = json!(gemini_matcher(matcher));
                }
                let list = events.entry(gemini).or_insert_with(|| json!([]));
                list.as_array_mut().expect("a list").push(out);
            }
        }
    }
    let file = (!events.is_empty()).then(|| json!({"hooks": events}));
    (file, warnings)
}

/// The agent files Claude Code reads of the plugin: `agents/*.md`, and those its
/// marketplace entry and manifest name (a named folder's `.md` files).
fn claude_agents(info: &PluginInfo) -> Vec<PathBuf> {
    let manifest = json_file(info, ".claude-plugin/plugin.json");
    let mut roots = vec![PathBuf::from("agents")];
    let named = [
        info.locked
            .definition
            .as_ref()
            .and_then(|d| d.components.get("agents").cloned()),
        manifest.and_then(|m| m.get("agents").cloned()),
    ];
    for value in named.into_iter().flatten() {
        roots.extend(
            string_or_list(&value)
                .iter()
                .map(|p| PathBuf::from(p.trim_start_matches("./").trim_end_matches('/'))),
        );
    }
    let mut out = Vec::new();
    for root in roots {
        let at = info.path.join(&root);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_file() => out.push(root),
            Ok(meta) if meta.is_dir() => {
                let mut files: Vec<PathBuf> = std::fs::read_dir(&at)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| root.join(e.file_name()))
                    .collect();
                files.sort();
                out.extend(files);
            }
            _ => {}
        }
    }
    out.retain(|p| p.extension().is_some_and(|e| e == "md"));
    out.sort();
    out.dedup();
    out
}

/// Claude Code's `tools` (a list, or one comma-separated string) as Gemini CLI's, and
/// those it has no name for.
fn gemini_tools(tools: &Value) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = match tools {
        Value::String(list) => list.split(',').map(|t| t.trim().to_owned()).collect(),
        other => string_or_list(other),
    };
    let mut mapped = Vec::new();
    let mut unmapped = Vec::new();
    for tool in names.into_iter().filter(|t| !t.is_empty()) {
        match TOOLS.iter().find(|(c, _)| *c == tool) {
            Some((_, gemini)) => mapped.push((*gemini).to_owned()),
            None => unmapped.push(tool),
        }
    }
    (mapped, unmapped)
}

/// One agent file as Gemini CLI's (its name and text), or why it is not written; and what
/// of it is left out.
fn gemini_agent(text: &str) -> Result<(String, String, Vec<String>), String> {
    let document = berth_plugin::frontmatter::parse_lenient(text)?;
    let field = |key: &str| {
        document
            .meta
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
    };
    let name = field("name").ok_or("it has no `name`")?.to_owned();
    let slug = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(slug) || !is_component(&name) {
        return Err(format!(
            "its name `{name}` is not one Gemini CLI takes (lower-case letters, digits, `-` and `_`)"
        ));
    }
    let description = field("description").filter(|d| !d.is_empty());
    let description = description.ok_or("it has no `description`")?;
    let mut front = format!(
        "---\nname: {}\ndescription: {}\n",
        json!(name),
        json!(description)
    );
    let mut left = Vec::new();
    if let Some(tools) = document.meta.get("tools") {
        let (mapped, unmapped) = gemini_tools(tools);
        front.push_str(&format!("tools: {}\n", json!(mapped)));
        left.extend(unmapped.into_iter().map(|t| format!("tool `{t}`")));
    }
    front.push_str("---\n");
    Ok((name, format!("{front}{}\n", document.content), left))
}

/// The plugin's agents as files of the extension (`agents/NAME.md`), and what is not
/// written or left out of one.
pub(super) fn agents(info: &PluginInfo) -> (Vec<(PathBuf, Planned)>, Vec<String>) {
    let plugin = &info.locked.name;
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    for rel in claude_agents(info) {
        let Some(bytes) = read_entry_file(&info.path, &rel) else {
            continue;
        };
        match gemini_agent(&String::from_utf8_lossy(&bytes)) {
            Ok((name, text, left)) => {
                if !left.is_empty() {
                    warnings.push(format!(
                        "plugin `{plugin}`: agent `{name}` is written for Gemini CLI without its {}: Gemini CLI has no tool of that name",
                        left.join(", ")
                    ));
                }
                files.push((
                    PathBuf::from("agents").join(format!("{name}.md")),
                    Planned::File(text.into_bytes()),
                ));
            }
            Err(why) => warnings.push(format!(
                "plugin `{plugin}`: agent `{}` is not written for Gemini CLI: {why}",
                rel.display()
            )),
        }
    }
    (files, warnings)
}

/// The extension's `hooks/hooks.json`, agents and policies (a link to the plugin's own
/// `policies/` folder of Gemini CLI policy files), relative to the extension.
pub(super) fn planned(info: &PluginInfo) -> Vec<(PathBuf, Planned)> {
    let mut out = agents(info).0;
    if let (Some(file), _) = hooks(info) {
        out.push((
            PathBuf::from("hooks/hooks.json"),
            Planned::File(pretty(&file)),
        ));
    }
    let policies = info.path.join("policies");
    if std::fs::symlink_metadata(&policies).is_ok_and(|m| m.is_dir()) {
        out.push((PathBuf::from("policies"), Planned::Link(policies)));
    }
    out
}
