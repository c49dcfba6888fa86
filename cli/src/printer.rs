//! All output goes through the printer: status and warnings to stderr (cargo style), data
//! to stdout.

use std::io::{IsTerminal, Write};

use berth_resolver::Reporter;

/// How much to say on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

#[derive(Debug)]
pub struct Printer {
    verbosity: Verbosity,
    color: bool,
}

impl Printer {
    pub fn new(verbosity: Verbosity) -> Self {
        let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Self { verbosity, color }
    }

    /// A right-aligned verb and a message, as cargo prints them.
    pub fn status(&self, verb: &str, message: &str) {
        if self.verbosity >= Verbosity::Normal {
            let verb = self.paint(verb, "1;32", 12);
            let _ = writeln!(std::io::stderr().lock(), "{verb} {message}");
        }
    }

    pub fn warn(&self, message: &str) {
        let label = self.paint("warning", "1;33", 0);
        let _ = writeln!(std::io::stderr().lock(), "{label}: {message}");
    }

    pub fn error(&self, message: &str) {
        let label = self.paint("error", "1;31", 0);
        let _ = writeln!(std::io::stderr().lock(), "{label}: {message}");
    }

    /// An indented follow-up line under an error or warning.
    pub fn note(&self, message: &str) {
        let _ = writeln!(std::io::stderr().lock(), "  {message}");
    }

    /// Data for stdout. A closed pipe (`berth plugins list | head`) ends quietly.
    pub fn data(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            std::process::exit(0);
        }
    }

    fn paint(&self, text: &str, code: &str, width: usize) -> String {
        if self.color {
            format!("\x1b[{code}m{text:>width$}\x1b[0m")
        } else {
            format!("{text:>width$}")
        }
    }
}

impl Reporter for Printer {
    fn status(&self, verb: &str, message: &str) {
        Printer::status(self, verb, message);
    }
    fn warn(&self, message: &str) {
        Printer::warn(self, message);
    }
}
