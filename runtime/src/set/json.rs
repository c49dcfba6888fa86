//! The plugin set as the JSON document of docs/spec.md section 5, in a fixed order: the
//! same lock and store give the same bytes.

use std::path::Path;

use berth_lockfile_schema::{GitPin, Pin};
use serde_json::{Map, Value, json};

use super::{PluginInfo, PluginSet};
use berth_plugin::hooks::matchers_to_json;
use berth_plugin::skills::Skill;

impl PluginSet {
    /// The set as the JSON document of docs/spec.md section 5, in a fixed order: the same
    /// lock and store give the same bytes.
    pub fn to_json_value(&self) -> Value {
        let plugins: Vec<Value> = self.plugins.iter().map(plugin_json).collect();
        let skills: Vec<Value> = self
            .skills
            .iter()
            .map(|(s, plugin)| skill_json(s, plugin))
            .collect();
        let mut servers = Map::new();
        for (name, s, plugin) in &self.mcp_servers {
            let mut server = s.to_json();
            server["plugin"] = Value::String(plugin.clone());
            servers.insert(name.clone(), server);
        }
        let mut hooks = Map::new();
        for (event, matchers) in &self.hooks {
            hooks.insert(
                (*event).to_owned(),
                matchers_to_json(matchers.iter().map(|(m, p)| (m, Some(p.as_str())))),
            );
        }
        let agents: Vec<Value> = self
            .agents
            .iter()
            .map(|(a, plugin)| {
                let mut agent = a.to_json();
                agent["plugin"] = Value::String(plugin.clone());
                agent
            })
            .collect();
        let mut lsp = Map::new();
        for (name, server, plugin) in &self.lsp_servers {
            let mut server = server.clone();
            if let Value::Object(map) = &mut server {
                map.insert("plugin".to_owned(), Value::String(plugin.clone()));
            }
            lsp.insert(name.clone(), server);
        }
        // The parts are moved in, not serialised again as `json!` would (a copy of the
        // whole document).
        let mut doc = Map::new();
        for (key, value) in [
            ("plugins", Value::Array(plugins)),
            ("skills", Value::Array(skills)),
            ("mcp_servers", Value::Object(servers)),
            ("hooks", Value::Object(hooks)),
            ("agents", Value::Array(agents)),
            ("lsp_servers", Value::Object(lsp)),
            ("warnings", json!(self.warnings)),
        ] {
            doc.insert(key.to_owned(), value);
        }
        Value::Object(doc)
    }

    /// The JSON text: two-space indented, one trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.to_json_value())
            .expect("a plugin set always serialises");
        text.push('\n');
        text
    }

    /// Where each plugin is seen (its link in the set's view, ending in its name), in
    /// lock order.
    pub fn plugin_roots(&self) -> Vec<&Path> {
        self.plugins.iter().map(|p| p.root.as_path()).collect()
    }
}

fn plugin_json(p: &PluginInfo) -> Value {
    let rev = match &p.locked.pin {
        Pin::Git(GitPin { rev, .. }) => Some(rev.to_string()),
        _ => None,
    };
    let mut out = json!({
        "name": p.locked.name,
        "version": p.manifest.version,
        "description": p.manifest.description,
        "source": p.locked.source,
        "rev": rev,
        "hash": p.locked.hash.to_sri(),
        "path": p.path.to_string_lossy(),
        "root": p.root.to_string_lossy(),
        "format": p.manifest.format.as_str(),
        "entry_command": p.manifest.entry_command.as_ref().map(|c| format!("/{}:{c}", p.locked.name)),
    });
    if let Some(market) = &p.locked.auto_load {
        out["auto_load"] = json!(market);
    }
    if p.locked.standalone_skill {
        out["standalone_skill"] = json!(true);
    }
    out
}

fn skill_json(s: &Skill, plugin: &str) -> Value {
    json!({
        "name": s.name,
        "description": s.description,
        "content": s.content,
        "triggers": s.triggers,
        "plugin": plugin,
        "trigger": s.trigger.as_str(),
        "type": s.kind,
        "paths": s.paths,
        "inputs": s.inputs,
        "allowed_tools": s.allowed_tools,
        "license": s.license,
        "compatibility": s.compatibility,
        "metadata": s.metadata,
        "disable_model_invocation": s.disable_model_invocation,
        "source": s.source,
        "mcp_tools": s.mcp_tools,
        "resources": s.resources,
    })
}
