//! What `berth plugins diff` reports: the JSON document, and its forms for people (a
//! terminal listing and a pull-request comment).
//!
//! Plugin content reaches people here, so both forms are escaped as a whole when done
//! (`escape_for_display`: controls, bidirectional and invisible characters), and the
//! markdown form sets what a plugin wrote either in a code span (`code`) or as text that
//! renders as itself (`md_text`: no HTML, no entity, no emphasis, link or heading). A new
//! line of the report needs nothing more than going through `diff_lines::lines`.

use std::fmt::Write as _;

use berth_lockfile_schema::{ArchivePin, GitPin, LockedPayload, LockedPlugin, Pin};
use berth_review::{SurfaceDiff, escape_for_display};
use serde::Serialize;

use super::diff_lines::lines;
use super::diff_provenance::ProvenanceChange;

/// The document `--json` prints (docs/governance.md describes it).
#[derive(Debug, Serialize)]
pub struct LockDiff {
    /// The document's format version.
    pub version: u32,
    /// The old lock: a file, or `REV:PATH`.
    pub from: String,
    /// The new lock.
    pub to: String,
    /// Every plugin whose content differs, in the new lock's order, then the removed ones.
    pub plugins: Vec<PluginDiff>,
    /// Every MCP server package (a runner's payload) whose pinned version moved, was
    /// pinned or was dropped, in the new lock's order, then the dropped ones.
    pub payloads: Vec<PayloadDiff>,
}

/// One MCP server's package whose pin changed.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct PayloadDiff {
    /// The plugin.
    pub plugin: String,
    /// The MCP server.
    pub server: String,
    /// The runner as written (`npx`, `uvx`).
    pub runner: String,
    /// The package.
    pub package: String,
    /// The old pinned version; `null` when it was not pinned.
    pub from: Option<String>,
    /// The new pinned version; `null` when it is no longer pinned.
    pub to: Option<String>,
    /// The file of the old closure that runs, when it differs from the new one's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_entry: Option<String>,
    /// The file of the new closure that runs, when it differs from the old one's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_entry: Option<String>,
    /// The npm packages of its closure whose version moved to one built from another
    /// repository or workflow, or without the provenance the old one had.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<ProvenanceChange>,
}

impl PayloadDiff {
    /// The payloads whose pins differ between `old` and `new`, paired by plugin and server.
    pub fn between(old: &[LockedPayload], new: &[LockedPayload]) -> Vec<Self> {
        let key = |p: &LockedPayload| (p.plugin.clone(), p.server.clone());
        // Everything the lock pins of a payload, what runs (`entry`) and the line
        // (`runner`, `spec`) included.
        let view = |p: &LockedPayload| {
            (
                p.package.clone(),
                p.version.clone(),
                p.hash,
                p.entry.clone(),
                p.runner.clone(),
                p.spec.clone(),
            )
        };
        let mut out = Vec::new();
        for after in new {
            let before = old.iter().find(|p| key(p) == key(after));
            if before.is_some_and(|b| view(b) == view(after)) {
                continue;
            }
            let entry_moved = before.is_some_and(|b| b.entry != after.entry);
            out.push(PayloadDiff {
                plugin: after.plugin.clone(),
                server: after.server.clone(),
                runner: after.runner.clone(),
                package: after.package.clone(),
                from: before.map(|b| b.version.clone()),
                to: Some(after.version.clone()),
                from_entry: before.filter(|_| entry_moved).map(|b| b.entry.clone()),
                to_entry: entry_moved.then(|| after.entry.clone()),
                provenance: before
                    .map(|b| ProvenanceChange::between(b, after))
                    .unwrap_or_default(),
            });
        }
        for before in old.iter().filter(|b| !new.iter().any(|a| key(a) == key(b))) {
            out.push(PayloadDiff {
                plugin: before.plugin.clone(),
                server: before.server.clone(),
                runner: before.runner.clone(),
                package: before.package.clone(),
                from: Some(before.version.clone()),
                to: None,
                from_entry: None,
                to_entry: None,
                provenance: Vec::new(),
            });
        }
        out
    }

    /// `fake-mcp 1.1.0 -> 1.2.0`, `fake-mcp pinned at 1.1.0`, `fake-mcp no longer pinned`,
    /// `fake-mcp 1.0.0 runs lib/other.js (was bin/server.js)`.
    fn change(&self) -> String {
        let runs = match (&self.from_entry, &self.to_entry) {
            (Some(a), Some(b)) => format!(", runs `{b}` (was `{a}`)"),
            _ => String::new(),
        };
        let version = match (&self.from, &self.to) {
            (Some(a), Some(b)) if a == b => format!("{} {a}", self.package),
            (Some(a), Some(b)) => format!("{} {a} -> {b}", self.package),
            (None, Some(b)) => format!("{} pinned at {b}", self.package),
            (Some(a), None) => format!("{} {a} no longer pinned", self.package),
            (None, None) => self.package.clone(),
        };
        let provenance: String = self
            .provenance
            .iter()
            .map(|c| format!("; {}", c.describe()))
            .collect();
        format!("{version}{runs}{provenance}")
    }
}

/// One plugin that was added, removed or moved.
#[derive(Debug, Serialize)]
pub struct PluginDiff {
    /// Its locked name.
    pub name: String,
    /// `added`, `removed` or `moved`.
    pub status: &'static str,
    /// Its old pin (removed and moved plugins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<PinView>,
    /// Its new pin (added and moved plugins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<PinView>,
    /// Whether what it runs or grants changed (see `SurfaceDiff::changes_what_runs`).
    pub runs_different_code: bool,
    /// What it may run and what it tells the agent, old against new.
    pub changes: SurfaceDiff,
    /// Who signed its source, old against new, when that changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<super::diff_signer::SignerDiff>,
}

/// What a lock entry was made from.
#[derive(Debug, Serialize)]
pub struct PinView {
    /// The source as locked.
    pub source: String,
    /// The commit (git sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// sha256 of the downloaded archive (archive sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_hash: Option<String>,
    /// The plugin's own version, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The content hash.
    pub hash: String,
}

impl PinView {
    pub fn of(plugin: &LockedPlugin) -> Self {
        let (rev, archive_hash) = match &plugin.pin {
            Pin::Git(GitPin { rev, .. }) => (Some(rev.to_string()), None),
            Pin::Archive(ArchivePin { archive_hash, .. }) => (None, Some(archive_hash.to_sri())),
            _ => (None, None),
        };
        Self {
            source: plugin.source.clone(),
            rev,
            archive_hash,
            version: plugin.plugin_version.clone(),
            hash: plugin.hash.to_sri(),
        }
    }
}

fn pin_text(pin: &PinView) -> String {
    let at = pin
        .rev
        .as_deref()
        .map(|r| r.chars().take(12).collect())
        .unwrap_or_else(|| pin.hash.chars().take(19).collect::<String>());
    match &pin.version {
        Some(v) => format!("{v} ({at})"),
        None => at,
    }
}

fn heading(p: &PluginDiff) -> String {
    match (&p.old, &p.new) {
        // The same files: only what its MCP servers answered differs.
        (Some(old), Some(new)) if old.hash == new.hash && old.rev == new.rev => {
            format!("{} (same files; what its MCP servers offer)", pin_text(new))
        }
        (Some(old), Some(new)) => format!("{} -> {}", pin_text(old), pin_text(new)),
        (None, Some(new)) => format!("{} from {}", pin_text(new), new.source),
        (Some(old), None) => format!("was {} from {}", pin_text(old), old.source),
        (None, None) => String::new(),
    }
}

/// What a change to prose alone says, in a plugin that runs code.
const ONLY_PROSE: &str = "only prose changed: the text of skills, commands, agents or notes, which its approval covers because a hook or server of the plugin may read it";

/// Whether only prose changed in a plugin that runs code.
fn only_prose(p: &PluginDiff) -> bool {
    !p.runs_different_code && !p.changes.prose_files.is_empty()
}

/// For a terminal.
pub fn text(report: &LockDiff) -> String {
    let mut out = String::new();
    for p in &report.payloads {
        let _ = writeln!(
            out,
            "package of {}'s MCP server {} ({}): {}",
            p.plugin,
            p.server,
            p.runner,
            p.change()
        );
    }
    if report.plugins.is_empty() {
        let _ = writeln!(
            out,
            "No plugin's content differs between `{}` and `{}`.",
            report.from, report.to
        );
        return escape_for_display(&out).into_owned();
    }
    for p in &report.plugins {
        let _ = writeln!(out, "{} {}: {}", p.status, p.name, heading(p));
        if let Some(signer) = &p.signer {
            let _ = writeln!(out, "  ! signer: {}", signer.text());
        }
        let lines = lines(&p.changes);
        if lines.is_empty() {
            let _ = writeln!(
                out,
                "    (only the text of skills, commands or agents differs)"
            );
        } else if only_prose(p) {
            let _ = writeln!(out, "    ({ONLY_PROSE})");
        }
        for l in lines {
            let _ = writeln!(out, "  {} {}: {}", l.sign, l.what, l.literal);
        }
    }
    escape_for_display(&out).into_owned()
}

/// A code span that holds `text` whatever backticks it has.
fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", text.replace('\n', " "))
}

/// Markdown text that renders as `text` itself: `<`, `>` and `&` as entities (no HTML, no
/// `&#x202e;`), the punctuation of emphasis, links, code, tables, strikethrough, headings
/// and math backslash-escaped, line breaks as spaces.
fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// [`md_text`] for a paragraph of its own: nothing at its start makes it a list, a rule or
/// a code block.
fn md_paragraph(text: &str) -> String {
    let text = md_text(text.trim_start());
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if text.starts_with(['-', '+', '=']) {
        format!("\\{text}")
    } else if digits > 0
        && text[digits..].starts_with(['.', ')'])
        && text[digits + 1..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
    {
        format!("{}\\{}", &text[..digits], &text[digits..])
    } else {
        text
    }
}

/// For a pull-request comment.
pub fn markdown(report: &LockDiff) -> String {
    let mut out = String::from("## berth: plugin changes\n\n");
    if !report.payloads.is_empty() {
        let _ = writeln!(out, "MCP server packages (what `npx`/`uvx` lines run):\n");
        for p in &report.payloads {
            let _ = writeln!(
                out,
                "- {} of plugin {} ({}): {}",
                code(&p.server),
                code(&p.plugin),
                code(&p.runner),
                md_text(&p.change())
            );
        }
        out.push('\n');
    }
    if report.plugins.is_empty() {
        let _ = writeln!(
            out,
            "No plugin's content differs between {} and {}.",
            code(&report.from),
            code(&report.to)
        );
        return escape_for_display(&out).into_owned();
    }
    let runs = |p: &PluginDiff| p.runs_different_code;
    let count = report.plugins.iter().filter(|p| runs(p)).count();
    let _ = writeln!(
        out,
        "{} plugin{} changed; **{count}** change{} what runs (hooks, servers, executables, scripts and other files that are not prose, shell lines, tools).\n",
        report.plugins.len(),
        if report.plugins.len() == 1 { "" } else { "s" },
        if count == 1 { "s" } else { "" },
    );
    for p in &report.plugins {
        let _ = writeln!(
            out,
            "### {} {}{}\n",
            code(&p.name),
            p.status,
            if runs(p) {
                " ⚠️ runs different code"
            } else {
                ""
            }
        );
        let _ = writeln!(out, "{}\n", md_paragraph(&heading(p).replace("->", "→")));
        if let Some(signer) = &p.signer {
            let _ = writeln!(
                out,
                "- **signer changed**: {}",
                md_text(&signer.text().replace("->", "→"))
            );
        }
        let lines = lines(&p.changes);
        if lines.is_empty() {
            let _ = writeln!(out, "- only the text of skills, commands or agents differs");
        } else if only_prose(p) {
            let _ = writeln!(out, "- {ONLY_PROSE}");
        }
        for l in lines {
            let sign = match l.sign {
                '+' => "**added**",
                '-' => "**removed**",
                _ => "**changed**",
            };
            let _ = writeln!(out, "- {sign} {}: {}", md_text(&l.what), code(&l.literal));
        }
        out.push('\n');
    }
    escape_for_display(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{code, md_paragraph, md_text};

    #[test]
    fn markdown_renders_plugin_text_as_itself() {
        assert_eq!(
            md_text("hook on [Bash](http://x) <!-- &#x202e; *a* `b` $x$"),
            "hook on \\[Bash\\](http://x) &lt;\\!-- &amp;\\#x202e; \\*a\\* \\`b\\` \\$x\\$"
        );
        assert_eq!(md_paragraph("- 1.0 (abc)"), "\\- 1.0 (abc)");
        assert_eq!(md_paragraph("1. x"), "1\\. x");
        assert_eq!(md_paragraph("1.0.0 (abc)"), "1.0.0 (abc)");
        // A command with backticks keeps its code span: a longer fence, padded.
        assert_eq!(code("echo `id` ``x``"), "``` echo `id` ``x`` ```");
        assert_eq!(code("`id`"), "`` `id` ``");
    }
}
