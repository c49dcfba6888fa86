//! Plugin dependencies, resolved through marketplaces: the closure of the plugins the
//! manifest asks for, every range a dependency is given intersected, a version picked
//! among the repository's `{plugin}--v{version}` tags (else the plugin's own `version`
//! must satisfy them), cycles and conflicts refused with the chain that leads to them.
//!
//! Claude Code's form: a dependency is `NAME` (in the declaring plugin's marketplace),
//! `NAME@MARKETPLACE`, or `{"name", "version", "marketplace"}`.

use std::collections::HashMap;

use berth_lockfile_schema::marketplace::MarketplaceRequest;
use berth_lockfile_schema::{Lock, LockedPlugin, PluginRequest, Source, SourceKind};
use semver::Version;

mod graph;

use graph::{clash, key_of, order, walk};

use crate::context::{Ctx, Resolved};
use crate::error::ResolveError;
use crate::sources::marketplace::ReadMarketplace;

/// Where a requirement on a plugin comes from: the chain of plugin names from a plugin
/// the manifest asks for, and the range (if any).
#[derive(Debug, Clone)]
struct Requirement {
    chain: Vec<String>,
    /// As written, for messages.
    range: Option<String>,
    /// As parsed (valid: a range that does not parse is dropped when read).
    req: Option<semver::VersionReq>,
}

impl Requirement {
    fn describe(&self, target: &str) -> String {
        format!(
            "{} → {target}{}",
            self.chain.join(" → "),
            self.range
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )
    }

    fn matches(&self, version: &Version) -> bool {
        self.req.as_ref().is_none_or(|req| req.matches(version))
    }
}

/// What the closure needs of the lock run: the manifest's marketplaces and a way to read
/// one (its catalog, at its locked commit or its `ref`).
pub(crate) struct Markets<'a> {
    pub(crate) declared: &'a [MarketplaceRequest],
    pub(crate) read: HashMap<String, ReadMarketplace>,
    pub(crate) locked: Vec<berth_lockfile_schema::marketplace::LockedMarketplace>,
}

impl Markets<'_> {
    fn catalog(&mut self, ctx: &Ctx<'_>, name: &str) -> Result<&ReadMarketplace, ResolveError> {
        if !self.read.contains_key(name) {
            let declared = self
                .declared
                .iter()
                .find(|m| m.name == name)
                .expect("checked by the caller");
            let previous = self.locked.iter().find(|m| m.name == name);
            let read = ctx.read_marketplace(declared, previous.filter(|m| m.git.is_some()))?;
            self.read.insert(name.to_owned(), read);
        }
        Ok(&self.read[name])
    }
}

/// The version a locked plugin has, for ranges: its tag `{name}--v{version}`, else its
/// declared version.
fn version_of(plugin: &LockedPlugin) -> Option<Version> {
    let from_tag = plugin
        .git_ref
        .as_deref()
        .and_then(|r| r.strip_prefix(&format!("{}--v", plugin.name)))
        .and_then(|v| Version::parse(v).ok());
    from_tag.or_else(|| {
        plugin
            .plugin_version
            .as_deref()
            .and_then(|v| Version::parse(v.trim_start_matches('v')).ok())
    })
}

impl Ctx<'_> {
    /// Adds the dependency closure of `roots` (the manifest's plugins, locked, in manifest
    /// order) and returns the lock's plugin list: each dependency before the first plugin
    /// that needs it, marked with who needs it. `previous` keeps the pins of dependencies
    /// still satisfied unless `upgrading` names them or their marketplace.
    pub(crate) fn lock_dependencies(
        &self,
        roots: Vec<LockedPlugin>,
        markets: &mut Markets<'_>,
        previous: Option<&Lock>,
        upgrading: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<LockedPlugin>, ResolveError> {
        if roots.iter().all(|r| r.dependencies.is_empty()) {
            return Ok(roots);
        }
        let root_keys: HashMap<String, usize> = roots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.requested.clone().map(|k| (k, i)))
            .collect();
        let mut picked: HashMap<String, LockedPlugin> = HashMap::new();
        let mut round = 0usize;
        loop {
            round += 1;
            let walk = walk(&roots, &picked);
            if let Some(cycle) = walk.cycle {
                return Err(ResolveError::Dependency {
                    message: format!(
                        "plugin dependencies form a cycle: {}; a plugin cannot need itself",
                        cycle.join(" → ")
                    ),
                });
            }
            let mut changed = false;
            // Dependencies picked before and picked anew this round (a range moved them).
            let mut moved: Vec<String> = Vec::new();
            // A conflict waits for the round where nothing else moves: by then every
            // range on the plugin is known, and the error names them all.
            let mut conflict = None;
            for key in &walk.order {
                let requirements = &walk.requirements[key];
                if let Some(&i) = root_keys.get(key) {
                    // Asked for by the manifest: its pin stands, and must satisfy every range.
                    if let Err(e) = check_version(key, &roots[i], requirements) {
                        conflict.get_or_insert(e);
                    }
                    continue;
                }
                if picked
                    .get(key)
                    .is_some_and(|p| satisfies_all(p, requirements))
                {
                    continue;
                }
                let kept = previous
                    .and_then(|l| {
                        l.plugins
                            .iter()
                            .find(|p| !p.is_requested() && p.requested.as_deref() == Some(key))
                    })
                    .filter(|p| {
                        let market = key.rsplit('@').next().unwrap_or_default();
                        !upgrading(&p.name) && !upgrading(market) && satisfies_all(p, requirements)
                    });
                let plugin = match kept {
                    Some(p) => p.clone(),
                    None => match self.resolve_dependency(key, requirements, markets)? {
                        Ok(plugin) => plugin,
                        Err(e) => {
                            conflict.get_or_insert(e);
                            continue;
                        }
                    },
                };
                if picked.insert(key.clone(), plugin).is_some() {
                    moved.push(format!("`{key}`"));
                }
                changed = true;
            }
            picked.retain(|k, _| walk.requirements.contains_key(k));
            if changed {
                // Each round reaches one level deeper, or moves a pin a range asks to move:
                // a graph of n dependencies settles within a few rounds per dependency.
                let bound = 2 * walk.order.len() + 8;
                if round > bound {
                    return Err(ResolveError::Dependency {
                        message: format!(
                            "plugin dependencies did not settle after {round} rounds over {} dependencies: the version ranges on {} keep picking other versions of each other; pin those versions in the plugins' `dependencies`",
                            walk.order.len(),
                            if moved.is_empty() {
                                "them".to_owned()
                            } else {
                                moved.join(", ")
                            }
                        ),
                    });
                }
                continue;
            }
            if let Some(conflict) = conflict {
                return Err(conflict);
            }
            // The manifest's order stands between the plugins it asks for: one that needs
            // a later one merges before it, which the user should hear of.
            for (i, root) in roots.iter().enumerate() {
                for target in walk.needs.get(&key_of(root)).into_iter().flatten() {
                    if let Some(&j) = root_keys.get(target)
                        && j > i
                    {
                        self.reporter.warn(&format!(
                            "plugin `{}` needs `{}`, which comes after it in the manifest; move `{}` first so it merges before the plugins that need it",
                            root.name, roots[j].name, roots[j].name
                        ));
                    }
                }
            }
            let out = order(roots, &picked, &walk);
            clash(&out, &picked)?;
            return Ok(out);
        }
    }

    /// Locks the plugin `key` (`NAME@MARKETPLACE`) names, at the highest `{name}--v{version}`
    /// tag every requirement allows, else as its catalog entry gives it (its version then
    /// checked against them).
    fn resolve_dependency(
        &self,
        key: &str,
        requirements: &[Requirement],
        markets: &mut Markets<'_>,
    ) -> Result<Result<LockedPlugin, ResolveError>, ResolveError> {
        let (name, market) = key
            .split_once('@')
            .expect("dependency keys name a marketplace");
        let needed = |r: &Requirement| r.describe(key);
        let chains: Vec<String> = requirements.iter().map(needed).collect();
        if !markets.declared.iter().any(|m| m.name == market) {
            return Err(ResolveError::Dependency {
                message: format!(
                    "missing dependency `{key}`: the manifest declares no marketplace `{market}` (needed: {}); add it with `berth marketplace add {market} SOURCE`",
                    chains.join("; ")
                ),
            });
        }
        let declared = markets
            .declared
            .iter()
            .find(|m| m.name == market)
            .expect("checked above")
            .clone();
        let read = markets.catalog(self, market)?.clone();
        if !read.catalog.plugins.iter().any(|e| e.name == name) {
            return Err(ResolveError::Dependency {
                message: format!(
                    "missing dependency `{key}`: marketplace `{market}` lists no plugin `{name}` (needed: {})",
                    chains.join("; ")
                ),
            });
        }
        let pick = PluginRequest::new(key, None, None, None)
            .map_err(|message| ResolveError::Dependency { message })?;
        let mut derived = self.derive(&read, &declared, &pick)?;
        let ranged = requirements.iter().any(|r| r.range.is_some());
        let mut tagged = false;
        if ranged && derived.request.parsed_source().kind() == SourceKind::Git {
            let prefix = format!("{name}--v");
            let mut versions: Vec<(Version, String)> = self
                .tag_names(derived.request.parsed_source())?
                .into_iter()
                .filter_map(|t| {
                    let v = Version::parse(t.strip_prefix(&prefix)?).ok()?;
                    Some((v, t))
                })
                .collect();
            versions.sort();
            if !versions.is_empty() {
                let Some((_, tag)) = versions
                    .iter()
                    .rev()
                    .find(|(v, _)| requirements.iter().all(|r| r.matches(v)))
                else {
                    return Ok(Err(conflict(
                        key,
                        requirements,
                        &versions
                            .iter()
                            .rev()
                            .take(5)
                            .map(|(v, _)| v.to_string())
                            .collect::<Vec<_>>(),
                    )));
                };
                derived.request = PluginRequest::new(
                    &derived.request.source,
                    Some(tag),
                    None,
                    derived.request.repo_path.as_deref(),
                )
                .map_err(|message| ResolveError::Dependency { message })?;
                tagged = true;
            }
        }
        let mut resolved: Resolved = self.resolve_derived(&derived)?;
        resolved.plugin.requested = Some(key.to_owned());
        crate::ops::declare(&mut resolved, &derived);
        let plugin = resolved.plugin;
        if !tagged && let Err(e) = check_version(key, &plugin, requirements) {
            return Ok(Err(e));
        }
        Ok(Ok(plugin))
    }

    /// The tags of a git source's repository (listed once per run).
    fn tag_names(&self, source: &Source) -> Result<Vec<String>, ResolveError> {
        let (remote, cache) = self.remote(source)?;
        let db =
            crate::sources::git::GitDb::for_remote(self.store, &remote, &cache, self.reporter)?;
        let tags = self.tags(&db, &remote, &cache)?;
        db.finish()?;
        Ok(tags.into_iter().map(|(t, _)| t).collect())
    }
}

fn satisfies_all(plugin: &LockedPlugin, requirements: &[Requirement]) -> bool {
    if requirements.iter().all(|r| r.range.is_none()) {
        return true;
    }
    version_of(plugin).is_some_and(|v| requirements.iter().all(|r| r.matches(&v)))
}

fn check_version(
    key: &str,
    plugin: &LockedPlugin,
    requirements: &[Requirement],
) -> Result<(), ResolveError> {
    if satisfies_all(plugin, requirements) {
        return Ok(());
    }
    let version = version_of(plugin).map_or_else(|| "no version".to_owned(), |v| v.to_string());
    Err(conflict(key, requirements, &[version]))
}

fn conflict(key: &str, requirements: &[Requirement], available: &[String]) -> ResolveError {
    let chains: Vec<String> = requirements
        .iter()
        .filter(|r| r.range.is_some())
        .map(|r| r.describe(key))
        .collect();
    ResolveError::Dependency {
        message: format!(
            "no version of `{key}` satisfies every plugin that needs it: {}; it has {}",
            chains.join("; "),
            if available.is_empty() {
                "none".to_owned()
            } else {
                available.join(", ")
            }
        ),
    }
}
