//! One module per command: each turns its arguments into settings and calls the libraries.

pub mod agent;
pub mod approve;
pub mod audit;
pub mod diff;
mod diff_lines;
mod diff_provenance;
mod diff_report;
mod diff_signer;
pub mod edit;
pub mod hooks;
pub mod import;
pub mod init;
pub mod list;
pub mod lock;
pub mod marketplace;
pub mod materialize;
mod newest;
pub mod observe;
pub mod outdated;
pub mod run;
pub mod serve;
pub mod show;
pub mod store;
pub mod sync;
pub mod tree;
pub mod verify;

use berth_lockfile_schema::{GitPin, Lock, LockedPlugin, Pin};

/// `1 plugin`, `3 plugins`.
pub fn plugins(n: usize) -> String {
    if n == 1 {
        "1 plugin".to_owned()
    } else {
        format!("{n} plugins")
    }
}

/// What a lock holds, for summary lines: `3 plugins`, `1 plugin and agent `x` 1.0.0`.
pub fn contents(lock: &Lock) -> String {
    match &lock.agent {
        None => plugins(lock.plugins.len()),
        Some(agent) => format!(
            "{} and agent `{}` {}",
            plugins(lock.plugins.len()),
            agent.package,
            agent.version
        ),
    }
}

/// Columns, each padded to its widest cell, one row a line after `indent` (trailing
/// spaces trimmed).
pub fn table<const N: usize>(out: &mut String, rows: &[[String; N]], indent: &str) {
    use std::fmt::Write as _;
    let widths: Vec<usize> = (0..N)
        .map(|col| {
            rows.iter()
                .map(|r| r[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = indent.to_owned();
        for (col, cell) in row.iter().enumerate() {
            if col + 1 == N {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ", w = widths[col]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// The short form of a pin for status lines: a commit's first 12 digits or a hash.
pub fn short_pin(plugin: &LockedPlugin) -> String {
    match &plugin.pin {
        Pin::Git(GitPin { rev, .. }) => rev.chars().take(12).collect(),
        _ => {
            let sri = plugin.hash.to_sri();
            sri.chars().take(19).collect()
        }
    }
}

/// One entry that differs between two locks: a status verb and what happened.
pub struct Change {
    pub verb: &'static str,
    pub text: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb.to_lowercase(), self.text)
    }
}

/// What changed between two locks, one line per entry, for status output and `--check`.
pub fn describe_changes(old: Option<&Lock>, new: &Lock) -> Vec<Change> {
    let old_plugins = old.map_or(&[][..], |l| &l.plugins[..]);
    let mut changes = Vec::new();
    // Each new entry is paired with the old one of its name and source (the one at its
    // place first): an entry removed before it moves it up, and that is no change of it.
    let mut paired = vec![false; old_plugins.len()];
    for (i, plugin) in new.plugins.iter().enumerate() {
        let same = |j: &usize| {
            old_plugins
                .get(*j)
                .is_some_and(|b| b.name == plugin.name && b.source == plugin.source)
        };
        let found = std::iter::once(i)
            .chain(0..old_plugins.len())
            .find(|j| same(j) && !paired[*j]);
        if let Some(j) = found {
            paired[j] = true;
        }
        match found.map(|j| &old_plugins[j]) {
            Some(before) if before == plugin => {}
            Some(before) => {
                changes.push(Change {
                    verb: "Updating",
                    text: format!(
                        "{} {} -> {}",
                        plugin.name,
                        short_pin(before),
                        short_pin(plugin)
                    ),
                });
            }
            _ => changes.push(Change {
                verb: "Adding",
                text: format!("{} {}", plugin.name, short_pin(plugin)),
            }),
        }
    }
    for (plugin, _) in old_plugins.iter().zip(&paired).filter(|(_, p)| !**p) {
        changes.push(Change {
            verb: "Removing",
            text: plugin.name.clone(),
        });
    }
    match (old.and_then(|l| l.agent.as_ref()), &new.agent) {
        (Some(before), Some(after)) if before == after => {}
        (Some(before), Some(after)) => changes.push(Change {
            verb: "Updating",
            text: format!(
                "agent {} {} ({}) -> {} {} ({})",
                before.package,
                before.version,
                before.entry_point,
                after.package,
                after.version,
                after.entry_point
            ),
        }),
        (None, Some(after)) => changes.push(Change {
            verb: "Adding",
            text: format!(
                "agent {} {} ({})",
                after.package, after.version, after.entry_point
            ),
        }),
        (Some(before), None) => changes.push(Change {
            verb: "Removing",
            text: format!("agent {}", before.package),
        }),
        (None, None) => {}
    }
    changes
}
