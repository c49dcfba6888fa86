//! Adding one plugin's components to the set, in lock order: skills (commands among them)
//! and servers by name (the later wins, at the first one's position), hooks concatenated
//! per event, sub-agents by name (the first wins).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::{PluginInfo, PluginSet};
use crate::loading::{Job, Loaded};
use berth_plugin::agents::Agent;
use berth_plugin::components::{Components, Hooks};
use berth_plugin::error::PluginError;
use berth_plugin::mcp::McpServer;
use berth_plugin::skills::Skill;

/// What the set says of a skill or server whose name a later plugin takes.
pub const OVERRIDES: &str = "overrides the one from plugin";

impl PluginSet {
    /// Adds what `loaded` read of `job`'s plugin (stored at `entry`); more than
    /// `max_skills` skills is an error naming the plugin that passed the limit.
    pub(super) fn merge(
        &mut self,
        job: Job<'_>,
        entry: PathBuf,
        loaded: Loaded,
        max_skills: Option<usize>,
    ) -> Result<(), PluginError> {
        let Loaded {
            manifest,
            components:
                Components {
                    skills,
                    commands,
                    hooks,
                    servers,
                    agents,
                    lsp,
                },
            model,
            mut warnings,
        } = loaded;
        let name = job.locked.name.as_str();
        self.warnings.append(&mut warnings);
        let commands = commands.iter().map(|c| c.to_skill(name));
        if job.locked.standalone_skill {
            self.merge_standalone_skills(name, job.locked.auto_load.as_deref(), skills);
        } else {
            self.merge_skills(name, skills.into_iter().chain(commands));
        }
        if let Some(max) = max_skills
            && self.skills.len() > max
        {
            return Err(PluginError::TooManySkills {
                message: format!(
                    "Total skills ({}) exceeds maximum ({max}): plugin `{name}` brings the set over the limit; raise it with `--max-skills`",
                    self.skills.len()
                ),
            });
        }
        self.merge_servers(name, servers);
        self.merge_hooks(name, hooks);
        self.merge_lsp(name, lsp);
        self.merge_agents(name, agents);
        self.plugins.push(PluginInfo {
            locked: job.locked.clone(),
            manifest,
            path: entry,
            root: job.exposed,
            data_dir: job.data_dir,
            model: model.map(Arc::new),
            tree: job.tree,
        });
        Ok(())
    }

    /// A marketplace's standalone skill joins below what is there: the SDK merges them
    /// into the agent's skills with the agent's (and an earlier marketplace's) winning,
    /// before any plugin, whose skills then override them.
    fn merge_standalone_skills(&mut self, name: &str, market: Option<&str>, skills: Vec<Skill>) {
        for skill in skills {
            match self.skills.iter().find(|(s, _)| s.name == skill.name) {
                Some((_, first)) => self.warnings.push(format!(
                    "standalone skill `{name}` of marketplace `{}`: skill `{}` is not loaded: the standalone skill `{first}` loaded first has its name",
                    market.unwrap_or_default(),
                    skill.name
                )),
                None => self.skills.push((skill, name.to_owned())),
            }
        }
    }

    fn merge_skills(&mut self, name: &str, skills: impl Iterator<Item = Skill>) {
        for skill in skills {
            match self.skills.iter_mut().find(|(s, _)| s.name == skill.name) {
                Some(slot) => {
                    self.warnings.push(format!(
                        "plugin `{name}`: skill `{}` {OVERRIDES} `{}`",
                        skill.name, slot.1
                    ));
                    let lost = std::mem::replace(slot, (skill, name.to_owned())).1;
                    note_overridden(&mut self.overridden, name, lost);
                }
                None => self.skills.push((skill, name.to_owned())),
            }
        }
    }

    fn merge_servers(&mut self, name: &str, servers: Vec<(String, McpServer)>) {
        for (server_name, server) in servers {
            match self
                .mcp_servers
                .iter_mut()
                .find(|(n, _, _)| *n == server_name)
            {
                Some(slot) => {
                    self.warnings.push(format!(
                        "plugin `{name}`: MCP server `{server_name}` {OVERRIDES} `{}`",
                        slot.2
                    ));
                    slot.1 = server;
                    let lost = std::mem::replace(&mut slot.2, name.to_owned());
                    note_overridden(&mut self.overridden, name, lost);
                }
                None => self
                    .mcp_servers
                    .push((server_name, server, name.to_owned())),
            }
        }
    }

    fn merge_hooks(&mut self, name: &str, hooks: Hooks) {
        for (event, matchers) in hooks {
            let slot = self
                .hooks
                .iter_mut()
                .find(|(e, _)| *e == event)
                .expect("every event has a slot");
            slot.1
                .extend(matchers.into_iter().map(|m| (m, name.to_owned())));
        }
    }

    fn merge_lsp(&mut self, name: &str, lsp: Vec<(String, Value)>) {
        for (server_name, server) in lsp {
            match self
                .lsp_servers
                .iter_mut()
                .find(|(n, _, _)| *n == server_name)
            {
                Some(slot) => {
                    self.warnings.push(format!(
                        "plugin `{name}`: LSP server `{server_name}` {OVERRIDES} `{}`",
                        slot.2
                    ));
                    slot.1 = server;
                    slot.2 = name.to_owned();
                }
                None => self
                    .lsp_servers
                    .push((server_name, server, name.to_owned())),
            }
        }
    }

    fn merge_agents(&mut self, name: &str, agents: Vec<Agent>) {
        for agent in agents {
            match self.agents.iter().find(|(a, _)| a.name == agent.name) {
                Some((_, first)) => self.warnings.push(format!(
                    "plugin `{name}`: agent `{}` is already defined by plugin `{first}`; the first definition is kept",
                    agent.name
                )),
                None => self.agents.push((agent, name.to_owned())),
            }
        }
    }
}

/// Records that `lost` lost a component to `name` (a plugin overriding its own is not).
fn note_overridden(overridden: &mut Vec<String>, name: &str, lost: String) {
    if lost != name && !overridden.contains(&lost) {
        overridden.push(lost);
    }
}
