//! Plugin dependencies, resolved through marketplaces: the closure of the plugins the
//! manifest asks for, every range a dependency is given intersected, a version picked
//! among the repository's `{plugin}--v{version}` tags (else the plugin's own `version`
//! must satisfy them), cycles and conflicts refused with the chain that leads to them.
//!
//! Claude Code's form: a dependency is `NAME` (in the declaring plugin's marketplace),
//! `NAME@MARKETPLACE`, or `{"name", "version", "marketplace"}`.

use std::collections::HashMap;

use berth_lockfile_schema::marketplace::{LockedMarketplace, MarketplaceRequest};
use berth_lockfile_schema::{Lock, LockedPlugin, PluginRequest};
use semver::Version;

mod graph;

use graph::{Walk, clash, key_of, order, walk};

use crate::context::Env;
use crate::error::ResolveError;
use crate::ops::Upgrade;
use crate::payload::resolve_signed;
use crate::sources::load;
use crate::sources::marketplace::{ReadMarketplace, derive, read_marketplace_at};

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
    pub(crate) locked: Vec<LockedMarketplace>,
}

impl Markets<'_> {
    fn catalog(&mut self, env: &Env<'_>, name: &str) -> Result<&ReadMarketplace, ResolveError> {
        if !self.read.contains_key(name) {
            let declared = self
                .declared
                .iter()
                .find(|m| m.name == name)
                .expect("checked by the caller");
            let previous = self.locked.iter().find(|m| m.name == name);
            let read = read_marketplace_at(env, declared, previous.filter(|m| m.git.is_some()))?;
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

/// Adds the dependency closure of `roots` (the manifest's plugins, locked, in manifest
/// order) and returns the lock's plugin list: each dependency before the first plugin
/// that needs it, marked with who needs it. `previous` keeps the pins of dependencies
/// still satisfied unless `upgrade` covers them or their marketplace.
pub(crate) fn lock_dependencies(
    env: &Env<'_>,
    roots: Vec<LockedPlugin>,
    markets: &mut Markets<'_>,
    previous: Option<&Lock>,
    upgrade: &Upgrade,
) -> Result<Vec<LockedPlugin>, ResolveError> {
    if roots.iter().all(|r| r.dependencies.is_empty()) {
        return Ok(roots);
    }
    let mut closure = Closure {
        env,
        markets,
        previous,
        upgrade,
        root_keys: roots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.requested.clone().map(|k| (k, i)))
            .collect(),
        picked: HashMap::new(),
    };
    let mut round = 0usize;
    loop {
        round += 1;
        let walk = walk(&roots, &closure.picked);
        if let Some(cycle) = &walk.cycle {
            return Err(ResolveError::Dependency {
                message: format!(
                    "plugin dependencies form a cycle: {}; a plugin cannot need itself",
                    cycle.join(" → ")
                ),
            });
        }
        let settled = closure.pick_round(&roots, &walk)?;
        if settled.changed {
            // Each round reaches one level deeper, or moves a pin a range asks to move:
            // a graph of n dependencies settles within a few rounds per dependency.
            check_bound(round, &walk, &settled.moved)?;
            continue;
        }
        if let Some(conflict) = settled.conflict {
            return Err(conflict);
        }
        closure.warn_order(&roots, &walk);
        let out = order(roots, &closure.picked, &walk);
        clash(&out, &closure.picked)?;
        return Ok(out);
    }
}

/// Refuses a closure still moving after `round` rounds.
fn check_bound(round: usize, walk: &Walk, moved: &[String]) -> Result<(), ResolveError> {
    let bound = 2 * walk.order.len() + 8;
    if round <= bound {
        return Ok(());
    }
    Err(ResolveError::Dependency {
        message: format!(
            "plugin dependencies did not settle after {round} rounds over {} dependencies: the version ranges on {} keep picking other versions of each other; pin those versions in the plugins' `dependencies`",
            walk.order.len(),
            if moved.is_empty() {
                "them".to_owned()
            } else {
                moved.join(", ")
            }
        ),
    })
}

/// The closure being settled: what the run needs to pick dependencies, and what it
/// picked so far.
struct Closure<'e, 'm, 'a> {
    env: &'e Env<'e>,
    markets: &'m mut Markets<'a>,
    previous: Option<&'e Lock>,
    upgrade: &'e Upgrade,
    /// The manifest's plugins asked for from a marketplace, by `NAME@MARKETPLACE`.
    root_keys: HashMap<String, usize>,
    /// The dependencies picked, by `NAME@MARKETPLACE`.
    picked: HashMap<String, LockedPlugin>,
}

/// What one round of picking did.
struct Round {
    /// Whether a pick was added or moved.
    changed: bool,
    /// Dependencies picked before and picked anew this round (a range moved them).
    moved: Vec<String>,
    /// The first conflict found: it waits for the round where nothing else moves, when
    /// every range on the plugin is known and the error names them all.
    conflict: Option<ResolveError>,
}

impl Closure<'_, '_, '_> {
    /// Picks each dependency the walk reached whose pick does not satisfy every range on
    /// it, and drops the picks nothing needs any more.
    fn pick_round(&mut self, roots: &[LockedPlugin], walk: &Walk) -> Result<Round, ResolveError> {
        let mut round = Round {
            changed: false,
            moved: Vec::new(),
            conflict: None,
        };
        for key in &walk.order {
            let requirements = &walk.requirements[key];
            if let Some(&i) = self.root_keys.get(key) {
                // Asked for by the manifest: its pin stands, and must satisfy every range.
                if let Err(e) = check_version(key, &roots[i], requirements) {
                    round.conflict.get_or_insert(e);
                }
                continue;
            }
            if self
                .picked
                .get(key)
                .is_some_and(|p| satisfies_all(p, requirements))
            {
                continue;
            }
            let plugin = match self.kept(key, requirements) {
                Some(p) => p.clone(),
                None => match self.resolve_dependency(key, requirements)? {
                    Ok(plugin) => plugin,
                    Err(e) => {
                        round.conflict.get_or_insert(e);
                        continue;
                    }
                },
            };
            if self.picked.insert(key.clone(), plugin).is_some() {
                round.moved.push(format!("`{key}`"));
            }
            round.changed = true;
        }
        self.picked.retain(|k, _| walk.requirements.contains_key(k));
        Ok(round)
    }

    /// The previous lock's pin of dependency `key`, while it satisfies every range and
    /// neither it nor its marketplace is upgraded.
    fn kept(&self, key: &str, requirements: &[Requirement]) -> Option<&LockedPlugin> {
        self.previous
            .and_then(|l| {
                l.plugins
                    .iter()
                    .find(|p| !p.is_requested() && p.requested.as_deref() == Some(key))
            })
            .filter(|p| {
                let market = key.rsplit('@').next().unwrap_or_default();
                !self.upgrade.covers(&p.name)
                    && !self.upgrade.covers(market)
                    && satisfies_all(p, requirements)
            })
    }

    /// The manifest's order stands between the plugins it asks for: one that needs a
    /// later one merges before it, which the user should hear of.
    fn warn_order(&self, roots: &[LockedPlugin], walk: &Walk) {
        for (i, root) in roots.iter().enumerate() {
            for target in walk.needs.get(&key_of(root)).into_iter().flatten() {
                if let Some(&j) = self.root_keys.get(target)
                    && j > i
                {
                    self.env.reporter.warn(&format!(
                        "plugin `{}` needs `{}`, which comes after it in the manifest; move `{}` first so it merges before the plugins that need it",
                        root.name, roots[j].name, roots[j].name
                    ));
                }
            }
        }
    }

    /// Locks the plugin `key` (`NAME@MARKETPLACE`) names, at the highest
    /// `{name}--v{version}` tag every requirement allows, else as its catalog entry gives
    /// it (its version then checked against them).
    fn resolve_dependency(
        &mut self,
        key: &str,
        requirements: &[Requirement],
    ) -> Result<Result<LockedPlugin, ResolveError>, ResolveError> {
        let env = self.env;
        let (name, market) = key
            .split_once('@')
            .expect("dependency keys name a marketplace");
        let (declared, read) = self.catalog_with(key, name, market, requirements)?;
        let pick = PluginRequest::new(key, None, None, None)
            .map_err(|message| ResolveError::Dependency { message })?;
        let mut derived = derive(env, &read, &declared, &pick)?;
        let ranged = requirements.iter().any(|r| r.range.is_some());
        let tags = if ranged {
            load(env, derived.request.parsed_source())?.tags()?
        } else {
            None
        };
        let candidates = match tags.and_then(|tags| pick_tag(key, name, tags, requirements)) {
            Some(Ok(candidates)) => candidates,
            Some(Err(conflict)) => return Ok(Err(conflict)),
            None => Vec::new(),
        };
        let tagged = !candidates.is_empty();
        let mut resolved = None;
        // Under a release-age cutoff a tag made after it is refused as an exact pin: the
        // next one down is tried.
        for (i, tag) in candidates.iter().enumerate() {
            derived.request = PluginRequest::new(
                &derived.request.source,
                Some(tag),
                None,
                derived.request.repo_path.as_deref(),
            )
            .map_err(|message| ResolveError::Dependency { message })?;
            match resolve_signed(env, &derived) {
                Err(ResolveError::TooNew(_)) if i + 1 < candidates.len() => continue,
                result => {
                    let found = result?;
                    if i > 0 {
                        self.held_back(key, tag, &candidates[0]);
                    }
                    resolved = Some(found);
                    break;
                }
            }
        }
        let mut resolved = match resolved {
            Some(resolved) => resolved,
            None => resolve_signed(env, &derived)?,
        };
        resolved.plugin.requested = Some(key.to_owned());
        derived.declare(&mut resolved);
        let plugin = resolved.plugin;
        if !tagged && let Err(e) = check_version(key, &plugin, requirements) {
            return Ok(Err(e));
        }
        Ok(Ok(plugin))
    }

    /// Says that the release-age cutoff passed over dependency `key`'s tag `newest` for
    /// `tag`.
    fn held_back(&self, key: &str, tag: &str, newest: &str) {
        if let Some(cutoff) = &self.env.cutoff {
            self.env.reporter.status(
                "Held back",
                &format!(
                    "`{key}` at {tag}: {newest} is newer than the cutoff {}",
                    cutoff.describe()
                ),
            );
        }
    }

    /// The declaration and catalog of `market`, which must list plugin `name`.
    fn catalog_with(
        &mut self,
        key: &str,
        name: &str,
        market: &str,
        requirements: &[Requirement],
    ) -> Result<(MarketplaceRequest, ReadMarketplace), ResolveError> {
        let chains: Vec<String> = requirements.iter().map(|r| r.describe(key)).collect();
        let Some(declared) = self.markets.declared.iter().find(|m| m.name == market) else {
            return Err(ResolveError::Dependency {
                message: format!(
                    "missing dependency `{key}`: the manifest declares no marketplace `{market}` (needed: {}); add it with `berth marketplace add {market} SOURCE`",
                    chains.join("; ")
                ),
            });
        };
        let declared = declared.clone();
        let read = self.markets.catalog(self.env, market)?.clone();
        if !read.catalog.plugins.iter().any(|e| e.name == name) {
            return Err(ResolveError::Dependency {
                message: format!(
                    "missing dependency `{key}`: marketplace `{market}` lists no plugin `{name}` (needed: {})",
                    chains.join("; ")
                ),
            });
        }
        Ok((declared, read))
    }
}

/// Every `{name}--v{version}` tag every requirement allows, highest first; a conflict when
/// there are such tags and none fits; `None` when there are none.
fn pick_tag(
    key: &str,
    name: &str,
    tags: Vec<String>,
    requirements: &[Requirement],
) -> Option<Result<Vec<String>, ResolveError>> {
    let prefix = format!("{name}--v");
    let mut versions: Vec<(Version, String)> = tags
        .into_iter()
        .filter_map(|t| {
            let v = Version::parse(t.strip_prefix(&prefix)?).ok()?;
            Some((v, t))
        })
        .collect();
    versions.sort();
    if versions.is_empty() {
        return None;
    }
    let fitting: Vec<String> = versions
        .iter()
        .rev()
        .filter(|(v, _)| requirements.iter().all(|r| r.matches(v)))
        .map(|(_, tag)| tag.clone())
        .collect();
    if !fitting.is_empty() {
        return Some(Ok(fitting));
    }
    Some(Err(conflict(
        key,
        requirements,
        &versions
            .iter()
            .rev()
            .take(5)
            .map(|(v, _)| v.to_string())
            .collect::<Vec<_>>(),
    )))
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
