//! All output goes through the printer: status and warnings to stderr (cargo style), data
//! to stdout. What it prints for people is escaped first (`escape_for_display`): plugin
//! content in a message, a table or a report never reaches a terminal as a raw escape
//! sequence, carriage return, bidirectional control or invisible character. JSON goes
//! through [`Printer::json`], which keeps it the same document.

use std::io::{IsTerminal, Write};

use berth_resolver::{Reporter, Task};
use berth_review::{escape_for_display, escape_json};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

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
    /// Progress bars for running fetches, on a terminal only.
    bars: Option<MultiProgress>,
}

impl Printer {
    /// `color`: whether stderr gets ANSI colors (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`).
    pub fn new(verbosity: Verbosity, color: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        // A terminal indicatif will not draw on (`TERM=dumb`) would swallow the lines
        // printed above the bars: plain lines there.
        let bars = (terminal && verbosity == Verbosity::Normal)
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
            .filter(|bars| !bars.is_hidden());
        Self {
            verbosity,
            color,
            bars,
        }
    }

    /// A right-aligned verb and a message, as cargo prints them.
    pub fn status(&self, verb: &str, message: &str) {
        if self.verbosity >= Verbosity::Normal {
            let message = escape_for_display(message);
            let line = format!("{} {message}", self.paint(verb, "1;32", 12));
            self.line(&line);
        }
    }

    /// A line on stderr, above any progress bars. With bars, they are cleared, the line
    /// written with its newline and the bars drawn again below it: `MultiProgress::println`
    /// would pad the line with spaces to the terminal's width instead of ending it, which
    /// is what a copy of the terminal then holds.
    fn line(&self, line: &str) {
        let write = || {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        };
        match &self.bars {
            Some(bars) => bars.suspend(write),
            None => write(),
        }
    }

    /// A step shown only with `-v`.
    pub fn detail(&self, verb: &str, message: &str) {
        if self.verbosity >= Verbosity::Verbose {
            let message = escape_for_display(message);
            let line = format!("{} {message}", self.paint(verb, "1;36", 12));
            self.line(&line);
        }
    }

    /// A warning; `-q` leaves it out (only errors then).
    pub fn warn(&self, message: &str) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        let label = self.paint("warning", "1;33", 0);
        self.line(&format!("{label}: {}", escape_for_display(message)));
    }

    pub fn error(&self, message: &str) {
        let label = self.paint("error", "1;31", 0);
        let message = escape_for_display(message);
        let _ = writeln!(std::io::stderr().lock(), "{label}: {message}");
    }

    /// An indented follow-up line under an error or warning.
    pub fn note(&self, message: &str) {
        let message = escape_for_display(message);
        let _ = writeln!(std::io::stderr().lock(), "  {message}");
    }

    /// Text for people on stdout (a listing, a table, a report), escaped.
    pub fn data(&self, text: &str) {
        self.stdout(&escape_for_display(text));
    }

    /// A JSON document on stdout, its hidden characters written as JSON escapes.
    pub fn json(&self, text: &str) {
        self.stdout(&escape_json(text));
    }

    /// Writes to stdout. A closed pipe (`berth plugins list | head`) ends quietly.
    fn stdout(&self, text: &str) {
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
    fn detail(&self, verb: &str, message: &str) {
        Printer::detail(self, verb, message);
    }
    /// On a terminal, a bar (bytes when the size is known, else a spinner) for as long as
    /// the step runs, then its status line; elsewhere just the status line.
    fn task(&self, verb: &str, message: &str, total: Option<u64>) -> Box<dyn Task + '_> {
        let Some(bars) = &self.bars else {
            self.status(verb, message);
            if self.verbosity >= Verbosity::Verbose {
                return Box::new(Timed {
                    printer: self,
                    what: format!("{} {message}", verb.to_lowercase()),
                    started: std::time::Instant::now(),
                });
            }
            return Box::new(Plain);
        };
        let bar = match total {
            Some(total) => ProgressBar::new(total).with_style(
                ProgressStyle::with_template(
                    "{prefix:>12.cyan.bold} {msg} [{bar:24}] {bytes}/{total_bytes}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{prefix:>12.cyan.bold} {msg} {spinner}")
                    .expect("a valid template"),
            ),
        };
        let bar = bars.add(
            bar.with_prefix(verb.to_owned())
                .with_message(escape_for_display(message).into_owned()),
        );
        // Drawn at once, not at the first tick: work that ends within one still shows.
        bar.tick();
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Box::new(Bar {
            bar,
            printer: self,
            line: Some((verb.to_owned(), message.to_owned())),
        })
    }
    /// On a terminal, a spinner for as long as the step runs, cleared when it ends.
    fn progress(&self, verb: &str, message: &str) -> Box<dyn Task + '_> {
        let Some(bars) = &self.bars else {
            return Box::new(Plain);
        };
        let bar = bars.add(
            ProgressBar::new_spinner()
                .with_style(
                    ProgressStyle::with_template(
                        "{prefix:>12.cyan.bold} {msg} {spinner} {elapsed}",
                    )
                    .expect("a valid template"),
                )
                .with_prefix(verb.to_owned())
                .with_message(escape_for_display(message).into_owned()),
        );
        // Drawn at once, not at the first tick: work that ends within one still shows.
        bar.tick();
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Box::new(Bar {
            bar,
            printer: self,
            line: None,
        })
    }
}

struct Plain;

impl Task for Plain {}

/// A step under `-v`: its time is printed when it ends.
struct Timed<'a> {
    printer: &'a Printer,
    what: String,
    started: std::time::Instant,
}

impl Task for Timed<'_> {}

impl Drop for Timed<'_> {
    fn drop(&mut self) {
        let secs = self.started.elapsed().as_secs_f64();
        self.printer
            .detail("Finished", &format!("{} in {secs:.2}s", self.what));
    }
}

struct Bar<'a> {
    bar: ProgressBar,
    printer: &'a Printer,
    /// The status line printed when the step ends, if it is news.
    line: Option<(String, String)>,
}

impl Task for Bar<'_> {
    fn advance(&self, bytes: u64) {
        self.bar.inc(bytes);
    }
}

impl Drop for Bar<'_> {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
        if let Some((verb, message)) = &self.line {
            self.printer.status(verb, message);
        }
    }
}
