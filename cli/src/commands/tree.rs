//! `berth plugins tree`: the locked plugins as a tree of who needs whom, from the lock
//! alone.

use std::collections::HashSet;
use std::fmt::Write as _;

use anyhow::Result;
use berth_lockfile_schema::marketplace::DependencySpec;
use berth_lockfile_schema::{Lock, LockedPlugin, Pin, suggest};
use serde_json::{Value, json};

use super::short_pin;
use crate::args::TreeArgs;
use crate::context::{Context, Failure};

pub fn run(ctx: &Context, args: &TreeArgs) -> Result<()> {
    let lock = ctx.require_lock("")?;
    let graph = Graph { lock: &lock };
    let (roots, direction) = match &args.invert {
        None => (
            // The manifest's entries and what marketplaces auto-load: nothing needs them.
            lock.plugins
                .iter()
                .filter(|p| p.needed_by.is_empty())
                .collect::<Vec<_>>(),
            Direction::Dependencies,
        ),
        Some(name) => (vec![find(ctx, &lock, name)?], Direction::Dependents),
    };
    if args.output.json() {
        let plugins: Vec<Value> = roots
            .iter()
            .map(|p| graph.node_json(p, None, direction, &mut Vec::new()))
            .collect();
        let mut text = serde_json::to_string_pretty(&json!({ "plugins": plugins }))?;
        text.push('\n');
        ctx.printer.json(&text);
        return Ok(());
    }
    let mut out = String::new();
    let mut shown = HashSet::new();
    for root in roots {
        // A manifest entry that another one needs was drawn, with what it needs, above.
        if shown.contains(&std::ptr::from_ref(root)) {
            let _ = writeln!(out, "{} (*)", graph.line(root));
            continue;
        }
        let _ = writeln!(out, "{}", graph.line(root));
        graph.write_children(&mut out, root, "", direction, &mut shown);
    }
    ctx.printer.data(&out);
    Ok(())
}

/// Which way the tree grows from its roots.
#[derive(Debug, Clone, Copy)]
enum Direction {
    /// From a plugin to the plugins it needs.
    Dependencies,
    /// From a plugin to the plugins that need it (`--invert`).
    Dependents,
}

/// The locked plugin named `name`, or an error with the nearest names.
fn find<'a>(ctx: &Context, lock: &'a Lock, name: &str) -> Result<&'a LockedPlugin> {
    if let Some(plugin) = lock.plugins.iter().find(|p| p.name == name) {
        return Ok(plugin);
    }
    let near = suggest::nearest(name, lock.plugins.iter().map(|p| p.name.as_str()));
    let hint = if near.is_empty() {
        "; `berth plugins list` shows the locked plugins".to_owned()
    } else {
        suggest::did_you_mean(&near)
    };
    Err(Failure {
        message: format!("no plugin named `{name}` in `{}`{hint}", ctx.lock_label()),
        notes: Vec::new(),
    }
    .into())
}

/// One edge of the tree: the plugin at its end (`None`: the lock has no plugin for the
/// dependency, as for one a plain source declares), how it is asked for, and the range.
struct Edge<'a> {
    plugin: Option<&'a LockedPlugin>,
    key: String,
    range: Option<String>,
}

struct Graph<'a> {
    lock: &'a Lock,
}

impl<'a> Graph<'a> {
    /// The marketplace `plugin` was asked of (`PLUGIN@MARKETPLACE`), if any.
    fn marketplace_of(plugin: &LockedPlugin) -> Option<&str> {
        plugin.requested.as_deref()?.split_once('@').map(|(_, m)| m)
    }

    /// The locked plugin a dependency of `plugin` resolved to: the one asked for by the
    /// same `PLUGIN@MARKETPLACE` (the key the lock's closure uses).
    fn resolve(&self, plugin: &LockedPlugin, spec: &DependencySpec) -> Edge<'a> {
        let key = spec.in_marketplace(Self::marketplace_of(plugin)).key();
        Edge {
            plugin: self
                .lock
                .plugins
                .iter()
                .find(|p| p.requested.as_deref() == Some(key.as_str())),
            key,
            range: spec.range.clone(),
        }
    }

    fn children(&self, plugin: &LockedPlugin, direction: Direction) -> Vec<Edge<'a>> {
        match direction {
            Direction::Dependencies => plugin
                .dependencies
                .iter()
                .map(|spec| self.resolve(plugin, spec))
                .collect(),
            Direction::Dependents => self
                .lock
                .plugins
                .iter()
                .filter_map(|p| {
                    let spec = p.dependencies.iter().find(|spec| {
                        self.resolve(p, spec)
                            .plugin
                            .is_some_and(|d| std::ptr::eq(d, plugin))
                    })?;
                    Some(Edge {
                        plugin: Some(p),
                        key: p.requested.clone().unwrap_or_else(|| p.name.clone()),
                        range: spec.range.clone(),
                    })
                })
                .collect(),
        }
    }

    /// A plugin for people: its name, version and where it comes from.
    fn line(&self, plugin: &LockedPlugin) -> String {
        let mut line = plugin.name.clone();
        if let Some(version) = &plugin.plugin_version {
            let _ = write!(line, " v{version}");
        }
        match Self::marketplace_of(plugin) {
            Some(market) => {
                let at = self
                    .lock
                    .marketplaces
                    .iter()
                    .find(|m| m.name == market)
                    .and_then(|m| m.git.as_ref())
                    .map(|(_, rev)| {
                        format!("@{}", rev.to_string().chars().take(12).collect::<String>())
                    })
                    .unwrap_or_default();
                let _ = write!(line, " from {market}{at}");
            }
            None => {
                let _ = write!(line, " ({}", plugin.source);
                if let Some(r) = plugin.resolved_ref.as_ref().or(plugin.git_ref.as_ref()) {
                    let _ = write!(line, " {r}");
                }
                let _ = write!(line, " {})", short_pin(plugin));
            }
        }
        if let Some(market) = &plugin.auto_load {
            let _ = write!(line, " (auto-loaded by {market})");
        }
        line
    }

    /// The children of `plugin` under `prefix`, as `cargo tree` draws them: a plugin whose
    /// children were drawn before is marked `(*)`.
    fn write_children(
        &self,
        out: &mut String,
        plugin: &'a LockedPlugin,
        prefix: &str,
        direction: Direction,
        shown: &mut HashSet<*const LockedPlugin>,
    ) {
        let children = self.children(plugin, direction);
        if children.is_empty() {
            return;
        }
        if !shown.insert(plugin) {
            return;
        }
        let last = children.len() - 1;
        for (i, edge) in children.into_iter().enumerate() {
            let (branch, next) = if i == last {
                ("└── ", "    ")
            } else {
                ("├── ", "│   ")
            };
            let Some(child) = edge.plugin else {
                let _ = writeln!(out, "{prefix}{branch}{} (not in the lock)", edge.key);
                continue;
            };
            let repeated = shown.contains(&std::ptr::from_ref(child))
                && !self.children(child, direction).is_empty();
            let mark = if repeated { " (*)" } else { "" };
            let _ = writeln!(out, "{prefix}{branch}{}{mark}", self.line(child));
            if !repeated {
                self.write_children(out, child, &format!("{prefix}{next}"), direction, shown);
            }
        }
    }

    /// A plugin and its subtree as JSON; `path` holds the plugins above it, so a cycle
    /// (which `lock` refuses) cannot recurse for ever.
    fn node_json(
        &self,
        plugin: &'a LockedPlugin,
        range: Option<&str>,
        direction: Direction,
        path: &mut Vec<*const LockedPlugin>,
    ) -> Value {
        let market = Self::marketplace_of(plugin);
        let market_rev = market
            .and_then(|m| self.lock.marketplaces.iter().find(|l| l.name == m))
            .and_then(|m| m.git.as_ref())
            .map(|(_, rev)| rev.to_string());
        let rev = match &plugin.pin {
            Pin::Git(git) => Some(git.rev.to_string()),
            _ => None,
        };
        path.push(plugin);
        let mut children = Vec::new();
        for edge in self.children(plugin, direction) {
            children.push(match edge.plugin {
                Some(child) if path.contains(&std::ptr::from_ref(child)) => continue,
                Some(child) => self.node_json(child, edge.range.as_deref(), direction, path),
                None => json!({ "requested": edge.key, "range": edge.range, "locked": false }),
            });
        }
        path.pop();
        let key = match direction {
            Direction::Dependencies => "dependencies",
            Direction::Dependents => "needed_by",
        };
        let mut node = json!({
            "name": plugin.name,
            "version": plugin.plugin_version,
            "requested": plugin.requested,
            "range": range,
            "source": plugin.source,
            "ref": plugin.resolved_ref.as_ref().or(plugin.git_ref.as_ref()),
            "rev": rev,
            "hash": plugin.hash.to_sri(),
            "marketplace": market.map(|m| json!({ "name": m, "rev": market_rev })),
            "auto_load": plugin.auto_load,
            "locked": true,
        });
        node[key] = Value::Array(children);
        node
    }
}
