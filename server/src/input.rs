//! What the server refuses in a request's text fields before doing any work: values
//! longer than [`MAX_FIELD_BYTES`], and control or bidirectional formatting characters.
//!
//! Sources, refs and paths end up in logs, error messages, lockfiles and file names. A
//! 900,000-character source once reached the git cache as a file name (a 500); an escape
//! sequence rewrites the terminal that shows the log, and a bidi control makes a reviewer
//! read a different source than the one fetched.

use berth_lockfile_schema::{Lock, LockedPlugin};

use crate::api::{AgentSourceBody, PluginSourceBody};
use crate::error::AppError;

/// The longest source (and `ref`, `repo_path`, ...) a request may carry, in bytes.
pub const MAX_FIELD_BYTES: usize = 4096;

/// The invisible characters that change the order text is shown in (Unicode's bidi
/// controls and marks), besides the control characters `char::is_control` knows.
const BIDI_FORMATTING: [char; 12] = [
    '\u{061C}', // ARABIC LETTER MARK
    '\u{200E}', // LEFT-TO-RIGHT MARK
    '\u{200F}', // RIGHT-TO-LEFT MARK
    '\u{202A}', // LEFT-TO-RIGHT EMBEDDING
    '\u{202B}', // RIGHT-TO-LEFT EMBEDDING
    '\u{202C}', // POP DIRECTIONAL FORMATTING
    '\u{202D}', // LEFT-TO-RIGHT OVERRIDE
    '\u{202E}', // RIGHT-TO-LEFT OVERRIDE
    '\u{2066}', // LEFT-TO-RIGHT ISOLATE
    '\u{2067}', // RIGHT-TO-LEFT ISOLATE
    '\u{2068}', // FIRST STRONG ISOLATE
    '\u{2069}', // POP DIRECTIONAL ISOLATE
];

/// Whether `c` may not appear in a field: C0 and C1 controls (NUL, ESC, `\n`, ...), DEL,
/// and bidi formatting.
fn is_refused(c: char) -> bool {
    c.is_control() || BIDI_FORMATTING.contains(&c)
}

/// Checks one field; `what` names it for the message (`plugins[0].source`).
pub(crate) fn check_field(what: &str, value: &str) -> Result<(), AppError> {
    if value.len() > MAX_FIELD_BYTES {
        // Not repeated back: the value is the problem.
        return Err(AppError::bad_request(format!(
            "`{what}` is {} bytes long; at most {MAX_FIELD_BYTES} bytes are accepted",
            value.len()
        )));
    }
    if let Some(c) = value.chars().find(|c| is_refused(*c)) {
        return Err(AppError::bad_request(format!(
            "`{what}` contains the control character U+{:04X}; sources, refs and paths may not contain control or bidirectional formatting characters",
            u32::from(c)
        )));
    }
    Ok(())
}

/// Checks every text field of the plugins of a request body.
pub(crate) fn check_plugin_bodies(plugins: &[PluginSourceBody]) -> Result<(), AppError> {
    for (i, p) in plugins.iter().enumerate() {
        check_field(&format!("plugins[{i}].source"), &p.source)?;
        check_optional(&format!("plugins[{i}].ref"), p.git_ref.as_deref())?;
        check_optional(&format!("plugins[{i}].repo_path"), p.repo_path.as_deref())?;
    }
    Ok(())
}

/// Checks every text field of a request's agent package.
pub(crate) fn check_agent(agent: &AgentSourceBody) -> Result<(), AppError> {
    check_field("agent.source", &agent.source)?;
    check_optional("agent.ref", agent.git_ref.as_deref())?;
    check_optional("agent.entry_point", agent.entry_point.as_deref())?;
    check_optional("agent.python", agent.python.as_deref())
}

/// Checks the requested and fetched fields of every entry of a lockfile a client sent.
pub(crate) fn check_lock(lock: &Lock) -> Result<(), AppError> {
    for (i, plugin) in lock.plugins.iter().enumerate() {
        check_locked(&format!("lockfile: plugin[{i}]"), plugin)?;
    }
    if let Some(agent) = &lock.agent {
        check_field("lockfile: agent.source", &agent.source)?;
        check_optional("lockfile: agent.ref", agent.git_ref.as_deref())?;
        check_optional("lockfile: agent.python", agent.python.as_deref())?;
        if let Some(tree) = &agent.tree {
            check_locked("lockfile: agent", tree)?;
        }
    }
    Ok(())
}

fn check_locked(what: &str, plugin: &LockedPlugin) -> Result<(), AppError> {
    check_field(&format!("{what}.source"), &plugin.source)?;
    check_optional(&format!("{what}.ref"), plugin.git_ref.as_deref())?;
    check_optional(&format!("{what}.version"), plugin.version.as_deref())?;
    check_optional(
        &format!("{what}.resolved_ref"),
        plugin.resolved_ref.as_deref(),
    )?;
    check_optional(&format!("{what}.repo_path"), plugin.repo_path.as_deref())?;
    for (field, value) in plugin.pin.text_fields() {
        check_field(&format!("{what}.{field}"), value)?;
    }
    Ok(())
}

fn check_optional(what: &str, value: Option<&str>) -> Result<(), AppError> {
    value.map_or(Ok(()), |v| check_field(what, v))
}

#[cfg(test)]
mod tests {
    use super::{BIDI_FORMATTING, MAX_FIELD_BYTES, check_field};

    #[test]
    fn controls_and_bidi_formatting_are_refused() {
        for c in [
            '\0', '\t', '\n', '\r', '\u{1b}', '\u{7f}', '\u{80}', '\u{85}', '\u{9f}',
        ]
        .into_iter()
        .chain(BIDI_FORMATTING)
        {
            let source = format!("github:acme/to{c}ols");
            let error = check_field("source", &source).expect_err("refused");
            assert_eq!(error.status.as_u16(), 400, "U+{:04X}", u32::from(c));
            assert!(
                error.message.contains(&format!("U+{:04X}", u32::from(c))),
                "{}",
                error.message
            );
        }
        // Letters of any script pass.
        for source in ["github:acme/tools", "./plugins/café", "./plugins/مرحبا"] {
            assert!(check_field("source", source).is_ok(), "{source}");
        }
    }

    #[test]
    fn fields_over_4_kib_are_refused() {
        let at_limit = "a".repeat(MAX_FIELD_BYTES);
        assert!(check_field("source", &at_limit).is_ok());
        let over = "a".repeat(MAX_FIELD_BYTES + 1);
        let error = check_field("source", &over).expect_err("refused");
        assert_eq!(error.status.as_u16(), 400);
        assert!(!error.message.contains(&over));
    }
}
