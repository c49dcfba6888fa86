//! What other harnesses would run from a set's plugins that the OpenHands set leaves out:
//! hooks of events or files the SDK does not read, servers from manifests it does not
//! take, and what cannot be modelled. `berth plugins show` lists them, so the set a user
//! reads is never mistaken for all that a plugin runs.

use std::path::PathBuf;

use berth_lockfile_schema::governance::Capability;

use super::shape::ROOT_PLACEHOLDER;
use super::walk::files_and_links;
use berth_plugin::error::PluginError;
use berth_plugin::expand::expand_roots;
use berth_plugin::model::Reader;
use berth_plugin::root::PluginRoot;
use berth_plugin::runs::{Runs, runs_of};
use berth_runtime::set::{PluginInfo, PluginSet};

/// What every harness would run of a plugin of the set, from the model the set read.
fn runs_of_plugin(info: &PluginInfo) -> Result<Runs, PluginError> {
    let root =
        PluginRoot::new(&info.locked.name, &info.path)?.exposed_at(PathBuf::from(ROOT_PLACEHOLDER));
    let mut model = info.model.as_deref().cloned().unwrap_or_default();
    let mut reader = Reader::new(&root, info.locked.definition.as_ref(), &mut model);
    let all = files_and_links(root.path())?;
    let rels: Vec<&str> = all.iter().map(|f| f.rel.as_str()).collect();
    runs_of(&mut reader, &rels)
}

/// One thing a harness other than OpenHands would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beyond {
    /// The plugin.
    pub plugin: String,
    /// `hook`, `MCP server`, `LSP server`, or the capability of what cannot be modelled.
    pub kind: String,
    /// The event (hooks), the server's name, or the file.
    pub name: String,
    /// The command, URL, or what could not be modelled.
    pub what: String,
    /// The file defining it.
    pub source: String,
}

/// What the plugins of `set` would make Claude Code, Codex or another harness run that
/// `set` does not hold, plugin by plugin: what every harness reads ([`berth_plugin::runs`]) of the
/// model the set read, only what the set did not read being read now.
pub fn beyond_set(set: &PluginSet) -> Result<Vec<Beyond>, PluginError> {
    let mut out = Vec::new();
    // Each plugin read on its own, a few at once (every file of each is listed).
    let read = berth_runtime::parallel::try_map(&set.plugins, 1, runs_of_plugin)?;
    for (info, surface) in set.plugins.iter().zip(read) {
        let name = &info.locked.name;
        let root = info.root.to_string_lossy();
        let in_set = |event: &str, command: &str| {
            set.hooks.iter().any(|(e, matchers)| {
                *e == event
                    && matchers.iter().any(|(m, plugin)| {
                        plugin == name
                            && m.hooks.iter().any(|h| {
                                h.command == command || h.prompt.as_deref() == Some(command)
                            })
                    })
            })
        };
        for hook in &surface.hooks {
            if !in_set(&hook.event, &expand_roots(&hook.command, &root)) {
                out.push(Beyond {
                    plugin: name.clone(),
                    kind: "hook".to_owned(),
                    name: hook.event.clone(),
                    what: hook.command.clone(),
                    source: hook.source.clone(),
                });
            }
        }
        let server_in_set = |server: &str| {
            set.mcp_servers
                .iter()
                .any(|(n, _, plugin)| plugin == name && n == server)
        };
        for (key, server) in &surface.mcp_servers {
            if key.contains('#') || server_in_set(key) {
                continue;
            }
            let what = match (&server.command, &server.url) {
                (Some(command), _) => std::iter::once(command.as_str())
                    .chain(server.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                (None, url) => url.clone().unwrap_or_default(),
            };
            out.push(Beyond {
                plugin: name.clone(),
                kind: "MCP server".to_owned(),
                name: key.clone(),
                what,
                source: server.source.clone(),
            });
        }
        for key in surface.lsp_servers.keys() {
            let held = set
                .lsp_servers
                .iter()
                .any(|(n, _, plugin)| plugin == name && n == key);
            if !key.contains('#') && !held {
                out.push(Beyond {
                    plugin: name.clone(),
                    kind: "LSP server".to_owned(),
                    name: key.clone(),
                    what: surface.lsp_servers[key].shown.to_string(),
                    source: String::new(),
                });
            }
        }
        out.extend(unmodeled_rows(name, &surface.unmodeled));
    }
    Ok(out)
}

/// What plugin `name` has that cannot be modelled, one row for what counts as several
/// capabilities, naming them.
fn unmodeled_rows(name: &str, unmodeled: &[berth_plugin::runs::Unmodeled]) -> Vec<Beyond> {
    let mut rows: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for u in unmodeled {
        match rows
            .iter_mut()
            .find(|(source, what, _)| *source == u.source && *what == u.what)
        {
            Some((_, _, capabilities)) => capabilities.push(u.capability.as_str()),
            None => rows.push((&u.source, &u.what, vec![u.capability.as_str()])),
        }
    }
    rows.into_iter()
        .map(|(source, what, capabilities)| {
            let counted = if capabilities.len() == Capability::ALL.len() {
                "every capability".to_owned()
            } else {
                capabilities.join(", ")
            };
            Beyond {
                plugin: name.to_owned(),
                kind: format!("{counted} (cannot be modelled)"),
                name: source.to_owned(),
                what: what.to_owned(),
                source: source.to_owned(),
            }
        })
        .collect()
}

/// What the review reads of one plugin of a set, for `berth plugins show --json`: the
/// capabilities its surface has (what any harness would run, unknown keys counted), whether
/// it runs code, and what berth cannot model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Reviewed {
    /// The capabilities it has, in `Capability::ALL`'s order.
    pub capabilities: Vec<&'static str>,
    /// Whether it runs code (see [`Surface::runs_code`](super::Surface::runs_code)).
    pub runs_code: bool,
    /// The hooks any harness would run, monitors, status lines and `headersHelper`
    /// commands included.
    pub hooks: Vec<berth_plugin::runs::HookEntry>,
    /// What berth cannot model, each counted as its capability.
    pub unmodeled: Vec<berth_plugin::runs::Unmodeled>,
}

/// [`Reviewed`] for every plugin of `set`, by name, from the models the set read.
pub fn reviewed_set(
    set: &PluginSet,
) -> Result<std::collections::BTreeMap<String, Reviewed>, PluginError> {
    let mut out = std::collections::BTreeMap::new();
    // Each plugin's surface read on its own (every file of it), a few at once.
    let surfaces = berth_runtime::parallel::try_map(&set.plugins, 1, |info| {
        let model = info.model.as_deref().cloned().unwrap_or_default();
        super::surface_from(
            &info.locked.name,
            &info.path,
            info.locked.definition.as_ref(),
            model,
        )
    })?;
    for (info, surface) in set.plugins.iter().zip(surfaces) {
        let name = &info.locked.name;
        let capabilities = Capability::ALL
            .into_iter()
            .filter(|c| surface.has(*c))
            .map(|c| c.as_str())
            .collect();
        out.insert(
            name.clone(),
            Reviewed {
                capabilities,
                runs_code: surface.runs_code(),
                hooks: surface.hooks.clone(),
                unmodeled: surface.unmodeled.clone(),
            },
        );
    }
    Ok(out)
}
