//! `plugins.approvals.toml`: which capability surface of each plugin was approved, by whom
//! and when. Written canonically (sorted by plugin), so it diffs and merges like code.

use serde::Deserialize;

use crate::diagnostic::Diagnostic;
use crate::lock::toml_string;

/// The format version this berth writes and reads.
pub const APPROVALS_VERSION: i64 = 1;

const HEADER: &str =
    "# This file is written by `berth plugins approve`; review changes to it like code.\n";

/// One plugin's approval.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// The plugin's locked name.
    pub plugin: String,
    /// The digest of its surface (`sha256:HEX`) when it was approved.
    pub surface: String,
    /// Who approved it.
    pub by: String,
    /// When, RFC 3339 in UTC.
    pub at: String,
}

/// Every approval, sorted by plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    approvals: Vec<Approval>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: i64,
    #[serde(default)]
    approval: Vec<Approval>,
}

/// Parses an approvals file; `label` names it in messages.
pub fn parse_approvals(text: &str, label: &str) -> Result<Approvals, Diagnostic> {
    let wire: Wire = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        Diagnostic::at(
            label,
            text,
            offset,
            format!(
                "not an approvals file: {}; `berth plugins approve` writes it",
                e.message().trim_end()
            ),
        )
    })?;
    if wire.version != APPROVALS_VERSION {
        return Err(Diagnostic::at(
            label,
            text,
            text.find("version").unwrap_or(0),
            format!(
                "approvals file version {} is not {APPROVALS_VERSION}, the one this berth reads; upgrade berth",
                wire.version
            ),
        ));
    }
    let mut approvals = Approvals::default();
    for approval in wire.approval {
        if approvals.get(&approval.plugin).is_some() {
            let needle = format!("plugin = {}", toml_string(&approval.plugin));
            return Err(Diagnostic::at(
                label,
                text,
                text.rfind(&needle).unwrap_or(0),
                format!(
                    "plugin `{}` is approved twice; keep one `[[approval]]` for it (`berth plugins approve {}` writes the current one)",
                    approval.plugin, approval.plugin
                ),
            ));
        }
        approvals.record(approval);
    }
    Ok(approvals)
}

impl Approvals {
    /// The approval of `plugin`, if it has one.
    pub fn get(&self, plugin: &str) -> Option<&Approval> {
        self.approvals.iter().find(|a| a.plugin == plugin)
    }

    /// Records `approval`, replacing the plugin's earlier one.
    pub fn record(&mut self, approval: Approval) {
        match self
            .approvals
            .binary_search_by(|a| a.plugin.as_str().cmp(&approval.plugin))
        {
            Ok(i) => self.approvals[i] = approval,
            Err(i) => self.approvals.insert(i, approval),
        }
    }

    /// Every approval, sorted by plugin.
    pub fn iter(&self) -> impl Iterator<Item = &Approval> {
        self.approvals.iter()
    }

    /// The canonical text.
    pub fn to_toml(&self) -> String {
        let mut out = format!("{HEADER}version = {APPROVALS_VERSION}\n");
        for a in &self.approvals {
            out.push_str(&format!(
                "\n[[approval]]\nplugin = {}\nsurface = {}\nby = {}\nat = {}\n",
                toml_string(&a.plugin),
                toml_string(&a.surface),
                toml_string(&a.by),
                toml_string(&a.at)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(plugin: &str, surface: &str) -> Approval {
        Approval {
            plugin: plugin.to_owned(),
            surface: surface.to_owned(),
            by: "Alice \"A\" <alice@example.com>".to_owned(),
            at: "2026-11-25T06:00:00Z".to_owned(),
        }
    }

    #[test]
    fn round_trips_byte_for_byte_sorted() {
        let mut approvals = Approvals::default();
        approvals.record(approval("zeta", "sha256:01"));
        approvals.record(approval("alpha", "sha256:02"));
        let text = approvals.to_toml();
        assert!(text.find("alpha").expect("a") < text.find("zeta").expect("z"));
        let parsed = parse_approvals(&text, "a.toml").expect("valid");
        assert_eq!(parsed, approvals);
        assert_eq!(parsed.to_toml(), text);
        approvals.record(approval("zeta", "sha256:03"));
        assert_eq!(
            approvals.get("zeta").map(|a| a.surface.as_str()),
            Some("sha256:03")
        );
        assert_eq!(approvals.iter().count(), 2);
    }

    #[test]
    fn bad_files_are_refused() {
        let twice = "version = 1\n[[approval]]\nplugin = \"a\"\nsurface = \"s\"\nby = \"b\"\nat = \"t\"\n[[approval]]\nplugin = \"a\"\nsurface = \"s\"\nby = \"b\"\nat = \"t\"\n";
        let e = parse_approvals(twice, "a.toml").expect_err("twice");
        assert_eq!(e.line, 8, "{e}");
        assert!(e.message.contains("approved twice"), "{e}");
        let e = parse_approvals("version = 2\n", "a.toml").expect_err("version");
        assert!(e.message.contains("upgrade berth"), "{e}");
        let e = parse_approvals("version = 1\nextra = 1\n", "a.toml").expect_err("unknown");
        assert_eq!(e.line, 2, "{e}");
    }
}
