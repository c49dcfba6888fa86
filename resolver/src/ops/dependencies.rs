//! Plugin dependencies, resolved through marketplaces: the closure of the plugins the
//! manifest asks for, every range a dependency is given intersected, a version picked
//! among the repository's `{plugin}--v{version}` tags (else the plugin's own `version`
//! must satisfy them), cycles and conflicts refused with the chain that leads to them.
//!
//! Claude Code's form: a dependency is `NAME` (in the declaring plugin's marketplace),
//! `NAME@MARKETPLACE`, or `{"name", "version", "marketplace"}`.

use std::collections::{BTreeMap, HashMap, HashSet};

use berth_lockfile_schema::marketplace::MarketplaceRequest;
use berth_lockfile_schema::{Lock, LockedPlugin, PluginRequest, Source, SourceKind};
use semver::Version;

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
            crate::sources::git::GitDb::open(self.store, &cache, &remote.url.shown, self.reporter)?;
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

/// The closure as far as it is picked: every requirement on each plugin, discovery order,
/// who needs whom, and a cycle if there is one.
struct Walk {
    requirements: BTreeMap<String, Vec<Requirement>>,
    order: Vec<String>,
    needs: HashMap<String, Vec<String>>,
    cycle: Option<Vec<String>>,
}

/// The key a root or a picked plugin is known by: `NAME@MARKETPLACE` when it has one,
/// else its name.
fn key_of(plugin: &LockedPlugin) -> String {
    plugin
        .requested
        .clone()
        .unwrap_or_else(|| plugin.name.clone())
}

/// Refuses a dependency named like another plugin of the lock from elsewhere (another
/// marketplace, or a plain source): two plugins of one name replace each other's skills
/// and commands in the set, so one would silently stand in for the other.
fn clash(out: &[LockedPlugin], picked: &HashMap<String, LockedPlugin>) -> Result<(), ResolveError> {
    for (key, dependency) in picked {
        let Some(other) = out
            .iter()
            .find(|p| p.name == dependency.name && key_of(p) != *key)
        else {
            continue;
        };
        let who: Vec<String> = out
            .iter()
            .find(|p| key_of(p) == *key)
            .map(|p| p.needed_by.iter().map(|n| format!("`{n}`")).collect())
            .unwrap_or_default();
        return Err(ResolveError::Dependency {
            message: format!(
                "two plugins named `{}`: {} needs `{key}`, and the lock also has `{}` as `{}`; one would replace the other's skills and commands, so berth refuses the clash. Ask for `{key}` in the manifest instead of `{}`, or drop what needs it",
                dependency.name,
                if who.is_empty() {
                    "a plugin".to_owned()
                } else {
                    who.join(" and ")
                },
                other.name,
                key_of(other),
                key_of(other)
            ),
        });
    }
    Ok(())
}

fn walk(roots: &[LockedPlugin], picked: &HashMap<String, LockedPlugin>) -> Walk {
    let mut w = Walk {
        requirements: BTreeMap::new(),
        order: Vec::new(),
        needs: HashMap::new(),
        cycle: None,
    };
    let by_key: HashMap<String, &LockedPlugin> = roots
        .iter()
        .map(|r| (key_of(r), r))
        .chain(picked.iter().map(|(k, p)| (k.clone(), p)))
        .collect();
    fn visit(
        key: &str,
        chain: &mut Vec<String>,
        keys: &mut Vec<String>,
        by_key: &HashMap<String, &LockedPlugin>,
        w: &mut Walk,
        done: &mut HashSet<String>,
    ) {
        let Some(plugin) = by_key.get(key) else {
            return;
        };
        for dep in &plugin.dependencies {
            if dep.marketplace.is_none() {
                continue;
            }
            let target = dep.key();
            w.needs
                .entry(key.to_owned())
                .or_default()
                .push(target.clone());
            let requirement = Requirement {
                chain: chain.clone(),
                range: dep.range.clone(),
                req: dep.version_req(),
            };
            if !w.requirements.contains_key(&target) {
                w.order.push(target.clone());
            }
            w.requirements
                .entry(target.clone())
                .or_default()
                .push(requirement);
            if let Some(at) = keys.iter().position(|k| *k == target) {
                if w.cycle.is_none() {
                    let mut cycle: Vec<String> = keys[at..].to_vec();
                    cycle.push(target.clone());
                    w.cycle = Some(cycle);
                }
                continue;
            }
            if done.contains(&target) {
                continue;
            }
            if let Some(next) = by_key.get(&target) {
                chain.push(next.name.clone());
                keys.push(target.clone());
                visit(&target, chain, keys, by_key, w, done);
                keys.pop();
                chain.pop();
                done.insert(target.clone());
            }
        }
    }
    let mut done = HashSet::new();
    for root in roots {
        let key = key_of(root);
        let mut chain = vec![root.name.clone()];
        let mut keys = vec![key.clone()];
        visit(&key, &mut chain, &mut keys, &by_key, &mut w, &mut done);
    }
    w
}

/// The lock's plugin list: the roots in manifest order, each dependency just before the
/// first plugin that needs it (its own dependencies before it), marked with who needs it.
fn order(
    roots: Vec<LockedPlugin>,
    picked: &HashMap<String, LockedPlugin>,
    walk: &Walk,
) -> Vec<LockedPlugin> {
    let mut needed_by: HashMap<&str, Vec<String>> = HashMap::new();
    let name_of = |key: &str| -> String {
        roots
            .iter()
            .find(|r| key_of(r) == key)
            .map(|r| r.name.clone())
            .or_else(|| picked.get(key).map(|p| p.name.clone()))
            .unwrap_or_else(|| key.to_owned())
    };
    for (from, targets) in &walk.needs {
        for target in targets {
            let list = needed_by.entry(target.as_str()).or_default();
            let name = name_of(from);
            if !list.contains(&name) {
                list.push(name);
            }
        }
    }
    let mut out: Vec<LockedPlugin> = Vec::new();
    let mut emitted: HashSet<String> = HashSet::new();
    fn emit(
        key: &str,
        picked: &HashMap<String, LockedPlugin>,
        walk: &Walk,
        needed_by: &HashMap<&str, Vec<String>>,
        emitted: &mut HashSet<String>,
        out: &mut Vec<LockedPlugin>,
    ) {
        for target in walk.needs.get(key).into_iter().flatten() {
            if emitted.contains(target) {
                continue;
            }
            if let Some(plugin) = picked.get(target) {
                emitted.insert(target.clone());
                emit(target, picked, walk, needed_by, emitted, out);
                let mut plugin = plugin.clone();
                let mut by = needed_by.get(target.as_str()).cloned().unwrap_or_default();
                by.sort();
                plugin.needed_by = by;
                out.push(plugin);
            }
        }
    }
    for root in roots {
        let key = key_of(&root);
        emit(&key, picked, walk, &needed_by, &mut emitted, &mut out);
        emitted.insert(key);
        let mut root = root;
        root.needed_by = Vec::new();
        out.push(root);
    }
    out
}
