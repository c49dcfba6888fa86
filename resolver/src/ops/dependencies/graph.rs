//! The graph of picked plugins and their dependencies: walking it from the manifest's
//! plugins, refusing a cycle or a clash with the chain that leads to it, and the order the
//! lock lists them in.

use std::collections::{BTreeMap, HashMap, HashSet};

use berth_lockfile_schema::LockedPlugin;

use super::Requirement;
use crate::error::ResolveError;

/// The closure as far as it is picked: every requirement on each plugin, discovery order,
/// who needs whom, and a cycle if there is one.
pub(super) struct Walk {
    pub(super) requirements: BTreeMap<String, Vec<Requirement>>,
    pub(super) order: Vec<String>,
    pub(super) needs: HashMap<String, Vec<String>>,
    pub(super) cycle: Option<Vec<String>>,
}

/// The key a root or a picked plugin is known by: `NAME@MARKETPLACE` when it has one,
/// else its name.
pub(super) fn key_of(plugin: &LockedPlugin) -> String {
    plugin
        .requested
        .clone()
        .unwrap_or_else(|| plugin.name.clone())
}

/// Refuses a dependency named like another plugin of the lock from elsewhere (another
/// marketplace, or a plain source): two plugins of one name replace each other's skills
/// and commands in the set, so one would silently stand in for the other.
pub(super) fn clash(
    out: &[LockedPlugin],
    picked: &HashMap<String, LockedPlugin>,
) -> Result<(), ResolveError> {
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

pub(super) fn walk(roots: &[LockedPlugin], picked: &HashMap<String, LockedPlugin>) -> Walk {
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
pub(super) fn order(
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
