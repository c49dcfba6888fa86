//! Gemini CLI: extensions in a Gemini home folder (`~/.gemini`), one per locked plugin,
//! as `gemini extensions list` reads them: `extensions/NAME/gemini-extension.json` (name,
//! version, description, MCP servers), `skills/SKILL` (a link to the skill's folder in
//! the store), `commands/NAME.toml` (a Claude Code command as a Gemini prompt), and the
//! plugin's hooks, agents and policies (`gemini_parts.rs`).
//!
//! A plugin that is a Gemini CLI extension itself (`gemini-extension.json`) is written as
//! `gemini extensions link` leaves one: its install record, a link to its store entry.
//!
//! berth owns each plugin's `extensions/NAME/` (marked by a `.berth` file, so a plugin that
//! left the lock is removed too); other extensions are left alone.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use berth_lockfile_schema::toml_string;

use super::files::{marked, pretty, stdio_fields};
use super::gemini_parts;
use super::guard::is_component;
use super::own::as_claude_reads;
use super::plan::{MARK, Plan, Planned};
use super::{Destination, Harness};
use berth_plugin::error::PluginError;
use berth_plugin::mcp::McpServer;
use berth_plugin::model::GEMINI_EXTENSION;
use berth_plugin::model::Markdown;
use berth_plugin::skills::Skill;
use berth_runtime::set::{PluginInfo, PluginSet};

/// A server as Gemini CLI's `mcpServers` takes it, or why it cannot be.
fn server_json(server: &McpServer) -> Result<Value, String> {
    if !server.enabled {
        return Err("it is disabled, and Gemini CLI has no disabled servers".into());
    }
    let mut out = Map::new();
    match server.transport.as_str() {
        "stdio" => {
            server.command.as_ref().ok_or("it has no command")?;
            stdio_fields(server, &mut out);
        }
        transport => {
            let url = server.url.clone().ok_or("it has no URL")?;
            let key = if transport == "sse" { "url" } else { "httpUrl" };
            out.insert(key.into(), json!(url));
            if !server.headers.is_empty() {
                out.insert("headers".into(), Value::Object(server.headers.clone()));
            }
        }
    }
    if let Some(timeout) = server.timeout {
        out.insert("timeout".into(), json!((timeout * 1000.0).round() as u64));
    }
    if let Some(description) = &server.description {
        out.insert("description".into(), json!(description));
    }
    Ok(Value::Object(out))
}

/// Gemini CLI: its home folder, one extension per plugin.
#[derive(Debug, Clone, Copy)]
pub struct GeminiCli;

impl Harness for GeminiCli {
    fn id(&self) -> &'static str {
        "gemini"
    }

    fn display_name(&self) -> &'static str {
        "Gemini CLI"
    }

    fn folder(&self) -> &'static str {
        "A Gemini CLI home folder (`~/.gemini`): one extension per plugin with its MCP servers, skills, commands, hooks, agents and policies"
    }

    fn writes_the_sets_reading(&self) -> bool {
        true
    }

    fn reads_unwrapped_mcp(&self) -> bool {
        true
    }

    fn cannot_express(&self, set: &PluginSet, info: &PluginInfo) -> Vec<String> {
        let name = info.locked.name.as_str();
        if is_extension(info) {
            return linked_warnings(set, info);
        }
        let mut out = Vec::new();
        let own = as_claude_reads(set, info);
        out.extend(own.unpinned_warnings(name));
        for skill in &own.skills {
            match written_as(skill, name) {
                Written::Nowhere => out.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is not a skill folder; Gemini CLI reads `skills/NAME/SKILL.md` only, so it is not written",
                    skill.name, skill.source
                )),
                Written::NotAName => out.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is not written: its name is not one plain file name",
                    skill.name.escape_debug(),
                    skill.source
                )),
                Written::Folder => {
                    if let Some(missing) = missing_for_gemini(info, skill) {
                        out.push(format!(
                            "plugin `{name}`: skill `{}` (`{}`) has no `{missing}` in its front matter, so Gemini CLI skips it",
                            skill.name, skill.source
                        ));
                    }
                }
                Written::Command(_) => {}
            }
        }
        for (server_name, server) in &own.servers {
            if let Err(why) = server_json(server) {
                out.push(format!(
                    "plugin `{name}`: MCP server `{server_name}` is not written: {why}"
                ));
            }
        }
        out.extend(gemini_parts::hooks(info).1);
        out.extend(gemini_parts::agents(info).1);
        if set.lsp_servers.iter().any(|(_, _, p)| p == name) {
            out.push(format!(
                "plugin `{name}`: its LSP servers are not written: Gemini CLI has none"
            ));
        }
        out
    }

    fn plan(
        &self,
        set: &PluginSet,
        plugins: &[&PluginInfo],
        to: Destination<'_>,
    ) -> Result<Vec<(PathBuf, Plan)>, PluginError> {
        let mut plan = Plan {
            owned: marked(to.root, Path::new("extensions"), MARK),
            ..Plan::default()
        };
        for info in plugins {
            if is_extension(info) {
                linked(info, &mut plan);
            } else {
                extension(set, info, &mut plan);
            }
        }
        let written: Vec<&PluginInfo> = plugins
            .iter()
            .copied()
            .filter(|info| !is_extension(info))
            .collect();
        plan.warnings.extend(servers_apart(set, &written));
        Ok(vec![(to.root.to_path_buf(), plan)])
    }
}

/// What of `name` and `description` a skill folder's `SKILL.md` front matter lacks, which
/// Gemini CLI needs both of to discover it (the SDK names a nameless skill after its
/// folder; Gemini CLI skips it); `None` when both are there or the file was not kept.
fn missing_for_gemini(info: &PluginInfo, skill: &Skill) -> Option<&'static str> {
    let text = match info.model.as_deref()?.markdown(&skill.source)? {
        Markdown::Text(text) | Markdown::NotUtf8(text) => text,
    };
    let meta = berth_plugin::frontmatter::parse(text).ok()?.meta;
    ["name", "description"].into_iter().find(|key| {
        meta.get(*key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    })
}

/// How a skill of the set is written in an extension.
enum Written<'a> {
    /// As a link to its folder (a `SKILL.md` skill).
    Folder,
    /// As the command `NAME` (`commands/NAME.toml`).
    Command(&'a str),
    /// Not at all.
    Nowhere,
    /// Not at all: the name it would be written under is not one plain file name.
    NotAName,
}

fn written_as<'a>(skill: &'a Skill, plugin: &str) -> Written<'a> {
    let is_folder = skill
        .source
        .rsplit('/')
        .next()
        .is_some_and(|f| f.eq_ignore_ascii_case("skill.md"));
    if is_folder {
        return if is_component(&skill.name) {
            Written::Folder
        } else {
            Written::NotAName
        };
    }
    match skill.name.strip_prefix(&format!("{plugin}:")) {
        Some(command) if is_component(command) => Written::Command(command),
        Some(_) => Written::NotAName,
        None => Written::Nowhere,
    }
}

/// Whether the plugin is a Gemini CLI extension itself (`gemini-extension.json` at its
/// root): Gemini CLI then loads it as it is, not berth's reading of it.
fn is_extension(info: &PluginInfo) -> bool {
    std::fs::symlink_metadata(info.path.join(GEMINI_EXTENSION)).is_ok_and(|m| m.is_file())
}

/// Plans a plugin that is a Gemini CLI extension as `gemini extensions link` leaves one:
/// `extensions/NAME/` holding only its install record, a `link` to the store entry, which
/// Gemini CLI loads in place (its manifest, MCP servers, commands, context files, skills,
/// hooks, agents and policies, all as the extension has them).
fn linked(info: &PluginInfo, plan: &mut Plan) {
    let dir = PathBuf::from("extensions").join(&info.locked.name);
    plan.own(dir.clone(), "gemini");
    let record = json!({"source": info.path.display().to_string(), "type": "link"});
    plan.files.insert(
        dir.join(".gemini-extension-install.json"),
        Planned::File(pretty(&record)),
    );
}

/// What a linked extension cannot carry: runner lines the lock pins (Gemini CLI starts
/// the extension's own lines).
fn linked_warnings(set: &PluginSet, info: &PluginInfo) -> Vec<String> {
    let name = info.locked.name.as_str();
    if set.payloads.iter().any(|p| p.plugin == name) {
        vec![format!(
            "plugin `{name}` is a Gemini CLI extension, loaded as it is: Gemini CLI starts its own runner lines, not the packages the lock pins for them"
        )]
    } else {
        Vec::new()
    }
}

/// Plans the extension of one plugin.
fn extension(set: &PluginSet, info: &PluginInfo, plan: &mut Plan) {
    let name = info.locked.name.as_str();
    let dir = PathBuf::from("extensions").join(name);
    plan.own(dir.clone(), "gemini");
    let own = as_claude_reads(set, info);
    for skill in &own.skills {
        match written_as(skill, name) {
            Written::Folder => {
                let folder = Path::new(&skill.source).parent().unwrap_or(Path::new(""));
                plan.files.insert(
                    dir.join("skills").join(&skill.name),
                    Planned::Link(info.path.join(folder)),
                );
            }
            Written::Command(command) => {
                plan.files.insert(
                    dir.join("commands").join(format!("{command}.toml")),
                    Planned::File(command_toml(info, skill).into_bytes()),
                );
            }
            Written::Nowhere | Written::NotAName => {}
        }
    }
    let servers: Map<String, Value> = own
        .servers
        .iter()
        .filter_map(|(n, server)| server_json(server).ok().map(|json| (n.to_string(), json)))
        .collect();
    let mut manifest = json!({
        "name": name,
        "version": info.manifest.version,
    });
    if !info.manifest.description.is_empty() {
        manifest["description"] = json!(info.manifest.description);
    }
    if !servers.is_empty() {
        manifest["mcpServers"] = Value::Object(servers);
    }
    plan.files.insert(
        dir.join("gemini-extension.json"),
        Planned::File(pretty(&manifest)),
    );
    for (rel, planned) in gemini_parts::planned(info) {
        plan.files.insert(dir.join(rel), planned);
    }
}

/// A warning for each MCP server name two plugins give different definitions: Gemini CLI
/// keys the servers of all extensions by name and starts the first it reads (in the order
/// the folder lists them), skipping the other. The same definition twice is one server.
fn servers_apart(set: &PluginSet, plugins: &[&PluginInfo]) -> Vec<String> {
    let mut by_name: std::collections::BTreeMap<String, Vec<(&str, Value)>> = Default::default();
    for info in plugins {
        let name = info.locked.name.as_str();
        for (server, config) in &as_claude_reads(set, info).servers {
            if let Ok(json) = server_json(config) {
                by_name
                    .entry(server.to_string())
                    .or_default()
                    .push((name, json));
            }
        }
    }
    let mut out = Vec::new();
    for (server, defined) in by_name {
        for (i, (first, one)) in defined.iter().enumerate() {
            for (second, other) in defined.iter().skip(i + 1) {
                if one != other {
                    out.push(format!(
                        "plugins `{first}` and `{second}` both have an MCP server `{server}`, defined differently: Gemini CLI starts one server of a name across its extensions (the first it reads), so one of the two is not started"
                    ));
                }
            }
        }
    }
    out
}

/// A command of the set as a Gemini prompt: its description, and its own text (the set's
/// skill wraps it in a heading) with `$ARGUMENTS` as `{{args}}`. The set holds only
/// commands whose front matter it parsed, so the text is taken without parsing it again.
fn command_toml(info: &PluginInfo, skill: &Skill) -> String {
    let mut toml = String::new();
    if let Some(description) = &skill.description {
        toml.push_str(&format!("description = {}\n", toml_string(description)));
    }
    let body = match info.model.as_deref().map(|m| m.markdown(&skill.source)) {
        Some(Some(Markdown::Text(text))) => Some(berth_plugin::frontmatter::body(text)),
        Some(_) => None,
        // A set built without its models: the command's file, from the store.
        None => std::fs::read_to_string(info.path.join(&skill.source))
            .ok()
            .and_then(|text| berth_plugin::frontmatter::parse(&text).ok())
            .map(|doc| doc.content),
    }
    .unwrap_or_else(|| skill.content.clone());
    let prompt = body.replace("$ARGUMENTS", "{{args}}");
    toml.push_str(&format!("prompt = {}\n", toml_string(&prompt)));
    toml
}
