//! Agent Plugins 1.0: one folder per locked plugin in the layout Cursor, VS Code and the
//! OpenHands SDK read (`plugin.json` with `$schema`, `skills/`, `mcp.json`,
//! `dev.openhands/{commands,agents,hooks}`), every skill, command and agent a read-only
//! copy of the verified store entry's files (the SDK does not follow links out of a
//! plugin), the JSON files written from the set (plugin roots filled in).
//!
//! berth owns each plugin's folder (marked by a `.berth` file, so a plugin that left the
//! lock is removed too); anything else in `DIR` is left alone.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::files::{Plan, Planned, marked, one_per_name, pretty, regular_files, stdio_fields};
use crate::error::RuntimeError;
use crate::hooks::{matchers_to_json, pascal_case};
use crate::mcp::McpServer;
use crate::set::PluginSet;

const MARKER: &str = ".berth";
const PLUGIN_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
const MCP_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// `value` without its `null` fields, recursively.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// A server as an Agent Plugins `mcp.json` holds it.
fn server_json(server: &McpServer) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(server.transport));
    stdio_fields(server, &mut out);
    if let Some(url) = &server.url {
        out.insert("url".into(), json!(url));
    }
    if !server.headers.is_empty() {
        out.insert("headers".into(), Value::Object(server.headers.clone()));
    }
    Value::Object(out)
}

/// The layout of `set` under `root` (absolute): `root/NAME/` per plugin.
pub fn plan(set: &PluginSet, root: &Path) -> Result<Plan, RuntimeError> {
    let mut plan = Plan {
        owned: marked(root, Path::new(""), MARKER),
        ..Plan::default()
    };
    for info in one_per_name(set, "Agent Plugins", &mut plan.warnings) {
        let name = info.locked.name.as_str();
        let dir = PathBuf::from(name);
        if !plan.owned.contains(&dir) {
            plan.owned.push(dir.clone());
        }
        plan.files.insert(
            dir.join(MARKER),
            Planned::File(
                b"Written by `berth materialize agent-plugins`; replaced by the next run.\n"
                    .to_vec(),
            ),
        );
        let mut manifest = json!({
            "$schema": PLUGIN_SCHEMA,
            "name": name,
            "version": info.manifest.version,
        });
        if !info.manifest.description.is_empty() {
            manifest["description"] = json!(info.manifest.description);
        }
        plan.files
            .insert(dir.join("plugin.json"), Planned::File(pretty(&manifest)));
        let prefix = format!("{name}:");
        for (skill, _) in set.skills.iter().filter(|(_, p)| p == name) {
            let file = skill.source.rsplit('/').next().unwrap_or(&skill.source);
            if file.eq_ignore_ascii_case("skill.md") {
                let folder = Path::new(&skill.source).parent().unwrap_or(Path::new(""));
                let mut files = Vec::new();
                regular_files(&info.path.join(folder), Path::new(""), &mut files)?;
                for rel in files {
                    plan.files.insert(
                        dir.join("skills").join(&skill.name).join(&rel),
                        Planned::Copy(info.path.join(folder).join(&rel)),
                    );
                }
            } else if let Some(command) = skill.name.strip_prefix(&prefix) {
                plan.files.insert(
                    dir.join("dev.openhands/commands")
                        .join(format!("{command}.md")),
                    Planned::Copy(info.path.join(&skill.source)),
                );
            } else if skill.source.starts_with("skills/") && !skill.source[7..].contains('/') {
                // A flat `skills/NAME.md`, which Agent Plugins readers take too.
                plan.files.insert(
                    dir.join(&skill.source),
                    Planned::Copy(info.path.join(&skill.source)),
                );
            } else {
                plan.warnings.push(format!(
                    "plugin `{name}`: skill `{}` (`{}`) is neither a skill folder nor `skills/NAME.md`, so it is not written",
                    skill.name, skill.source
                ));
            }
        }
        for (agent, _) in set.agents.iter().filter(|(_, p)| p == name) {
            let file = agent.source.rsplit('/').next().unwrap_or(&agent.source);
            plan.files.insert(
                dir.join("dev.openhands/agents").join(file),
                Planned::Copy(info.path.join(&agent.source)),
            );
        }
        let mut servers = Map::new();
        for (server_name, server, _) in set.mcp_servers.iter().filter(|(_, _, p)| p == name) {
            let json = server_json(server);
            if !server.literal && json.to_string().contains("${") {
                plan.warnings.push(format!(
                    "plugin `{name}`: MCP server `{server_name}` holds `${{VAR}}` placeholders, which Agent Plugins servers do not fill; written as it is"
                ));
            }
            servers.insert(server_name.clone(), json);
        }
        if !servers.is_empty() {
            let mcp = json!({"$schema": MCP_SCHEMA, "mcpServers": servers});
            plan.files
                .insert(dir.join("mcp.json"), Planned::File(pretty(&mcp)));
        }
        let mut hooks = Map::new();
        for (event, matchers) in &set.hooks {
            let mine: Vec<_> = matchers.iter().filter(|(_, p)| p == name).collect();
            if !mine.is_empty() {
                let list = matchers_to_json(mine.iter().map(|(m, _)| (m, None)));
                hooks.insert(pascal_case(event), without_nulls(list));
            }
        }
        if !hooks.is_empty() {
            plan.files.insert(
                dir.join("dev.openhands/hooks/hooks.json"),
                Planned::File(pretty(&json!({ "hooks": hooks }))),
            );
        }
        if set.lsp_servers.iter().any(|(_, _, p)| p == name) {
            plan.warnings.push(format!(
                "plugin `{name}`: its LSP servers are not written: Agent Plugins 1.0 has none"
            ));
        }
    }
    Ok(plan)
}
