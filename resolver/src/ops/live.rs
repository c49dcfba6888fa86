//! What a lock keeps alive in the store, for `berth store gc`: its plugins' entries, the git
//! caches and archives they are fetched from, its agent's wheels and source tree, and its
//! MCP servers' package closures. Which
//! locks are live (the roots) is the caller's to say.

use berth_lockfile_schema::Lock;
use berth_store::{Live, entry_name};

use crate::sources::kind_of;

/// Adds everything `lock` uses to `live`.
pub fn mark_live(live: &mut Live, lock: &Lock) {
    if let Some(agent) = &lock.agent {
        live.wheels
            .extend(agent.wheels.iter().map(|w| w.sha256.clone()));
    }
    for payload in &lock.payloads {
        live.entries.insert(format!(
            "{}-{}",
            payload.hash.to_nix32(),
            entry_name(&payload.entry_name())
        ));
    }
    // What observed MCP servers offered, kept while a lock records it.
    for tools in &lock.tools {
        if let Some(manifest) = &tools.manifest {
            live.entries.insert(format!(
                "{}-{}",
                manifest.to_nix32(),
                entry_name(berth_lockfile_schema::TOOLS_ENTRY_NAME)
            ));
        }
    }
    let tree = lock.agent.as_ref().and_then(|a| a.tree.as_ref());
    for plugin in lock.plugins.iter().chain(tree) {
        live.entries.insert(format!(
            "{}-{}",
            plugin.hash.to_nix32(),
            entry_name(&plugin.name)
        ));
        kind_of(&plugin.pin).mark_live(live);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_lockfile_schema::parse_lock;

    #[test]
    fn a_lock_marks_its_entries_caches_and_archives() {
        let text = "version = 1\n\n\
            [[plugin]]\nname = \"g\"\nsource = \"https://example.com/g.git\"\n\
            url = \"https://example.com/g.git\"\nrev = \"0123456789abcdef0123456789abcdef01234567\"\n\
            hash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n\n\
            [[plugin]]\nname = \"l\"\nsource = \"./l\"\npath = \"./l\"\n\
            hash = \"sha256-AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\"\n";
        let lock = parse_lock("test.lock", text).expect("valid lock");
        let mut live = Live::default();
        mark_live(&mut live, &lock);
        assert_eq!(live.entries.len(), 2);
        for plugin in &lock.plugins {
            let name = format!("{}-{}", plugin.hash.to_nix32(), plugin.name);
            assert!(live.entries.contains(&name), "{name}: {live:?}");
        }
        assert_eq!(
            live.git_caches.iter().collect::<Vec<_>>(),
            [&crate::git_cache_name("https://example.com/g.git")]
        );
        assert!(live.archives.is_empty() && live.wheels.is_empty());
    }
}
