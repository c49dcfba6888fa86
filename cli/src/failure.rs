//! How berth fails: a message with follow-up lines, a bare exit status, and an error's
//! text without repeating a cause the message already holds.

use berth_resolver::EntryError;

/// A failure with follow-up lines: the `error:` line, then one line per detail.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub notes: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

impl Failure {
    /// One entry failing reads as that entry's error; several are named on the first line
    /// and detailed below it.
    pub fn from_entries(what: &str, mut errors: Vec<EntryError>) -> Self {
        let unreachable = errors
            .iter()
            .any(|e| matches!(*e.error, berth_resolver::ResolveError::Unreachable { .. }));
        let mut failure = if errors.len() == 1 {
            let e = errors.remove(0);
            Self {
                message: e.to_string(),
                notes: Vec::new(),
            }
        } else {
            let labels: Vec<&str> = errors.iter().map(|e| e.label.as_str()).collect();
            Self {
                message: format!("{what} {} plugins: {}", errors.len(), labels.join(", ")),
                notes: errors.iter().map(ToString::to_string).collect(),
            }
        };
        if unreachable {
            failure.notes.push(UNREACHABLE_HINT.to_owned());
        }
        failure
    }
}

/// What to try when a host could not be reached at all.
const UNREACHABLE_HINT: &str = "hint: check the network and any proxy (`HTTPS_PROXY`); `--offline` uses only what the store and git cache hold, `--substituter URL` tries a binary cache first, and `BERTH_GITHUB_URL` points `github:` at a mirror";

/// What to do when berth could not write a file (the error names it).
pub const READ_ONLY_HINT: &str = "hint: that folder is read-only to berth; a read-only store still serves `plugins sync --frozen` (when it holds every entry), `plugins show`, `run` and `materialize`; to add to it, point `BERTH_STORE` (or `--store`) at a folder you can write";

/// Whether `error` is a file that could not be written: a read-only file system or a
/// folder this user may not write, as an error in its chain or in the text of an entry's
/// error (which carries its cause as text).
pub fn could_not_write(error: &anyhow::Error) -> bool {
    let in_chain = error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(berth_store::is_read_only)
    });
    let in_text = |text: &str| text.contains("(os error 30)") || text.contains("(os error 13)");
    in_chain
        || match error.downcast_ref::<Failure>() {
            Some(failure) => in_text(&failure.message) || failure.notes.iter().any(|n| in_text(n)),
            None => in_text(&error_text(error)),
        }
}

/// `error` and its causes, joined by `: ` as `{:#}` joins them, without a cause whose text
/// the message before it already holds (an error that quotes its own `#[source]`).
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
    }
    text
}

/// Ends berth with this exit status and no message (the command already said everything,
/// as `hooks run` does when an event is blocked).
#[derive(Debug)]
pub struct Exit(pub u8);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for Exit {}

#[cfg(test)]
mod tests {
    use super::error_text;

    /// An error that quotes its own source in its message.
    #[derive(Debug)]
    struct Quoting(std::io::Error);

    impl std::fmt::Display for Quoting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cache `c`: {}", self.0)
        }
    }

    impl std::error::Error for Quoting {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_the_message_already_says_is_not_said_again() {
        let io = || std::io::Error::other("read-only");
        assert_eq!(
            error_text(&anyhow::Error::new(Quoting(io()))),
            "cache `c`: read-only"
        );
        let wrapped = anyhow::Error::new(io()).context("could not push");
        assert_eq!(error_text(&wrapped), "could not push: read-only");
    }
}
