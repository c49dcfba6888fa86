//! OpenCode: a configuration folder (`~/.config/opencode`, or a project's `.opencode/`)
//! holding, per locked plugin, what OpenCode reads of its own: `skills/NAME/SKILL` (a link
//! to the skill's folder in the store), `commands/NAME/COMMAND.md` (a link to the command's
//! file: OpenCode names it `NAME/COMMAND`), `agents/NAME/AGENT.md` (the agent as a
//! sub-agent, its front matter in OpenCode's terms) and the plugin's MCP servers in
//! `opencode.json`'s `mcp`, whose other keys are kept.
//!
//! berth owns each plugin's `skills/NAME/`, `commands/NAME/` and `agents/NAME/` (marked by
//! a `.berth` file, so a plugin that left the lock is removed too) and `berth/`, whose
//! `mcp-servers.json` names the servers it wrote into `opencode.json`, so the next run
//! replaces those and no other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::claude_config::{object, read_object};
use super::entry::is_file;
use super::files::{marked, pretty};
use super::guard::{is_component, read_entry_file};
use super::opencode_forms::{agent_file, agent_warnings, nested_skills, server_json};
use super::own::{agents_as_claude_reads, as_claude_reads};
use super::plan::{MARK, Plan, Planned};
use super::{Destination, Harness};
use berth_plugin::error::PluginError;
use berth_plugin::model::Markdown;
use berth_plugin::skills::Skill;
use berth_runtime::set::{PluginInfo, PluginSet};

const CONFIG: &str = "opencode.json";
/// berth's own folder, and the record of the servers it wrote into `opencode.json`.
const RECORD_DIR: &str = "berth";
const RECORD: &str = "berth/mcp-servers.json";
/// The folders of plugin components, one owned folder per plugin in each.
const KINDS: [&str; 3] = ["agents", "commands", "skills"];

/// OpenCode: its configuration folder, each plugin's components in folders of its name.
#[derive(Debug, Clone, Copy)]
pub struct OpenCode;

impl Harness for OpenCode {
    fn id(&self) -> &'static str {
        "opencode"
    }

    fn display_name(&self) -> &'static str {
        "OpenCode"
    }

    fn folder(&self) -> &'static str {
        "An OpenCode configuration folder (`~/.config/opencode`, or a project's `.opencode`): each plugin's skills, commands and agents in folders of its name, its MCP servers in `opencode.json`, whose other keys are kept"
    }

    fn writes_the_sets_reading(&self) -> bool {
        true
    }

    fn reads_unwrapped_mcp(&self) -> bool {
        true
    }

    fn cannot_express(&self, set: &PluginSet, info: &PluginInfo) -> Vec<String> {
        let name = info.locked.name.as_str();
        let own = as_claude_reads(set, info);
        let mut out = own.unpinned_warnings(name);
        for skill in &own.skills {
            match written_as(skill, name) {
                Written::Nowhere => out.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is not a skill folder; OpenCode reads `SKILL.md` in a folder only, so it is not written",
                    skill.name, skill.source
                )),
                Written::NotAName => out.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is not written: its name is not one plain file name",
                    skill.name.escape_debug(),
                    skill.source
                )),
                Written::Folder if lacks_name(info, skill) => out.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) has no `name` in its front matter, so OpenCode skips it",
                    skill.name, skill.source
                )),
                Written::Folder => {
                    let folder = Path::new(&skill.source).parent().unwrap_or(Path::new(""));
                    for (path, nested) in nested_skills(info, folder) {
                        out.push(format!(
                            "plugin `{name}`: skill `{}` holds another skill in its folder, `{nested}` (`{}/{path}`): OpenCode reads it as a skill of its own, Claude Code does not",
                            skill.name,
                            folder.display()
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
        for agent in agents_as_claude_reads(set, info) {
            out.extend(agent_warnings(name, &agent));
        }
        let hooks: usize = set
            .hooks
            .iter()
            .map(|(_, matchers)| matchers.iter().filter(|(_, p)| p == name).count())
            .sum();
        if hooks > 0 {
            out.push(format!(
                "plugin `{name}`: its {hooks} hook matcher(s) are not written: OpenCode's hooks are JavaScript plugins, not commands"
            ));
        } else if claude_reads_hooks(info) {
            out.push(format!(
                "plugin `{name}`: its hooks (Claude Code's `hooks/hooks.json` or manifest `hooks`) are not written: OpenCode's hooks are JavaScript plugins, not commands"
            ));
        }
        if set.lsp_servers.iter().any(|(_, _, p)| p == name) {
            out.push(format!(
                "plugin `{name}`: its LSP servers are not written: OpenCode's `lsp` takes file extensions, not Claude Code's languages"
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
            owned: KINDS
                .iter()
                .flat_map(|kind| marked(to.root, Path::new(kind), MARK))
                .collect(),
            ..Plan::default()
        };
        plan.own(PathBuf::from(RECORD_DIR), "opencode");
        let mut skills = BTreeMap::new();
        let mut servers = Servers::default();
        for info in plugins {
            components(set, info, &mut skills, &mut plan);
            for (server, config) in &as_claude_reads(set, info).servers {
                if let Ok(json) = server_json(config) {
                    servers.add(&info.locked.name, server, json, &mut plan.warnings);
                }
            }
        }
        for (plugin, link, target) in skills.into_values() {
            plan.own(PathBuf::from("skills").join(&plugin), "opencode");
            plan.files.insert(link, Planned::Link(target));
        }
        config(to.root, servers, &mut plan)?;
        Ok(vec![(to.root.to_path_buf(), plan)])
    }
}

/// How a skill of the set is written.
enum Written<'a> {
    /// As a link to its folder (a `SKILL.md` skill).
    Folder,
    /// As a link to the command's file, named `COMMAND`.
    Command(&'a str),
    /// Not at all.
    Nowhere,
    /// Not at all: the name it would be written under is not one plain file name.
    NotAName,
}

fn written_as<'a>(skill: &'a Skill, plugin: &str) -> Written<'a> {
    let file = skill.source.rsplit('/').next().unwrap_or_default();
    if file.eq_ignore_ascii_case("skill.md") {
        return if is_component(&skill.name) {
            Written::Folder
        } else {
            Written::NotAName
        };
    }
    match skill.name.strip_prefix(&format!("{plugin}:")) {
        Some(command) if is_component(command) && file.ends_with(".md") => {
            Written::Command(command)
        }
        Some(_) => Written::NotAName,
        None => Written::Nowhere,
    }
}

/// Whether a skill folder's `SKILL.md` front matter lacks `name`, which OpenCode needs to
/// read it (the SDK names a nameless skill after its folder); `false` when the file was
/// not kept.
fn lacks_name(info: &PluginInfo, skill: &Skill) -> bool {
    let Some(Markdown::Text(text) | Markdown::NotUtf8(text)) = info
        .model
        .as_deref()
        .and_then(|m| m.markdown(&skill.source))
    else {
        return false;
    };
    berth_plugin::frontmatter::parse(text).is_ok_and(|doc| {
        doc.meta
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    })
}

/// Each skill name OpenCode sees once: the plugin that wrote it, its link and its target.
type Skills = BTreeMap<String, (String, PathBuf, PathBuf)>;

/// Plans one plugin's commands and agents, and adds its skills to `skills` (OpenCode
/// keeps one skill per name: the later plugin's, warned).
fn components(set: &PluginSet, info: &PluginInfo, skills: &mut Skills, plan: &mut Plan) {
    let name = info.locked.name.as_str();
    for skill in &as_claude_reads(set, info).skills {
        match written_as(skill, name) {
            Written::Folder => {
                let folder = Path::new(&skill.source).parent().unwrap_or(Path::new(""));
                let link = Path::new("skills").join(name).join(&skill.name);
                let earlier = skills.insert(
                    skill.name.clone(),
                    (name.to_owned(), link, info.path.join(folder)),
                );
                if let Some((other, ..)) = earlier.filter(|(other, ..)| other != name) {
                    plan.warnings.push(format!(
                        "plugin `{other}`: skill `{}` is not written: plugin `{name}` has a skill of that name, and OpenCode keeps one per name (the later plugin's)",
                        skill.name
                    ));
                }
            }
            Written::Command(command) => {
                let dir = Path::new("commands").join(name);
                plan.own(dir.clone(), "opencode");
                plan.files.insert(
                    dir.join(format!("{command}.md")),
                    Planned::Link(info.path.join(&skill.source)),
                );
            }
            Written::Nowhere | Written::NotAName => {}
        }
    }
    for agent in agents_as_claude_reads(set, info) {
        if !is_component(&agent.name) {
            continue;
        }
        let dir = Path::new("agents").join(name);
        plan.own(dir.clone(), "opencode");
        plan.files.insert(
            dir.join(format!("{}.md", agent.name)),
            Planned::File(agent_file(&agent).into_bytes()),
        );
    }
}

/// The servers written into `opencode.json`: one per name, the later plugin's.
#[derive(Default)]
struct Servers {
    by_name: BTreeMap<String, (String, Value)>,
}

impl Servers {
    /// Adds `plugin`'s server `name`; a name an earlier plugin gave another definition is
    /// warned, naming both.
    fn add(&mut self, plugin: &str, name: &str, json: Value, warnings: &mut Vec<String>) {
        let earlier = self
            .by_name
            .insert(name.to_owned(), (plugin.to_owned(), json.clone()));
        if let Some((other, before)) = earlier
            && before != json
        {
            warnings.push(format!(
                "plugin `{other}`: MCP server `{name}` is not written: plugin `{plugin}` defines a server of that name otherwise, and OpenCode keeps one per name (the later plugin's)"
            ));
        }
    }
}

/// `opencode.json` with berth's servers in `mcp` (those it wrote before replaced, a server
/// of the user's with one of their names kept and warned), and the record of them.
fn config(root: &Path, servers: Servers, plan: &mut Plan) -> Result<(), PluginError> {
    let existed = super::guard::read_unlinked(root, Path::new(CONFIG))?.is_some();
    let mut config = read_object(root, CONFIG)?;
    let before: Vec<String> = super::guard::read_unlinked(root, Path::new(RECORD))?
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let had_mcp = config.contains_key("mcp");
    let mcp = object(&mut config, "mcp");
    mcp.retain(|name, _| !before.contains(name));
    let mut written = Vec::new();
    for (name, (plugin, json)) in servers.by_name {
        if mcp.contains_key(&name) {
            plan.warnings.push(format!(
                "plugin `{plugin}`: MCP server `{name}` is not written: `{CONFIG}` has a server of that name berth did not write"
            ));
            continue;
        }
        mcp.insert(name.clone(), json);
        written.push(name);
    }
    if mcp.is_empty() && !had_mcp {
        config.remove("mcp");
    }
    if !existed && !config.is_empty() {
        // What OpenCode adds to the file it loads, so that it does not rewrite it.
        config.insert(
            "$schema".to_owned(),
            json!("https://opencode.ai/config.json"),
        );
    }
    plan.files.insert(
        PathBuf::from(RECORD),
        Planned::File(pretty(&json!(written))),
    );
    if existed || !config.is_empty() {
        plan.files
            .insert(PathBuf::from(CONFIG), Planned::Json(Value::Object(config)));
    }
    Ok(())
}

/// Whether Claude Code runs hooks of the plugin (`hooks/hooks.json`, or `hooks` in its
/// `.claude-plugin/plugin.json`), which the set, reading another manifest, may not hold.
fn claude_reads_hooks(info: &PluginInfo) -> bool {
    let manifest = read_entry_file(&info.path, Path::new(".claude-plugin/plugin.json"))
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    is_file(info, Path::new("hooks/hooks.json"))
        || manifest.is_some_and(|m| m.get("hooks").is_some_and(|h| !h.is_null()))
}
