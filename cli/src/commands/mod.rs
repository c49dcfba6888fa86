//! One module per command: each turns its arguments into settings and calls the libraries.

pub mod list;
pub mod lock;
pub mod sync;
pub mod verify;

use berth_lockfile_schema::{Lock, LockedPlugin, Pin};

/// The short form of a pin for status lines: a commit's first 12 digits or a hash.
pub fn short_pin(plugin: &LockedPlugin) -> String {
    match &plugin.pin {
        Pin::Git { rev, .. } => rev.chars().take(12).collect(),
        Pin::Archive { .. } | Pin::Local { .. } => {
            let sri = plugin.hash.to_sri();
            sri.chars().take(19).collect()
        }
    }
}

/// What changed between two locks, one line per entry, for status output and `--check`.
pub fn describe_changes(old: Option<&Lock>, new: &Lock) -> Vec<String> {
    let old_plugins = old.map_or(&[][..], |l| &l.plugins[..]);
    let mut lines = Vec::new();
    for (i, plugin) in new.plugins.iter().enumerate() {
        match old_plugins.get(i) {
            Some(before) if before == plugin => {}
            Some(before) if before.name == plugin.name && before.source == plugin.source => {
                lines.push(format!(
                    "`{}` {} -> {}",
                    plugin.name,
                    short_pin(before),
                    short_pin(plugin)
                ));
            }
            _ => lines.push(format!("`{}` {} (new)", plugin.name, short_pin(plugin))),
        }
    }
    for plugin in old_plugins.iter().skip(new.plugins.len()) {
        lines.push(format!("`{}` (removed)", plugin.name));
    }
    lines
}
