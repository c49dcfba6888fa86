//! The custom agent package (SPEC section 8): the manifest's `[agent]` request and the
//! lock's `[agent]` table with its `[[agent.wheel]]` closure.
//!
//! An agent is a pip-installable Python package exposing a factory in the
//! `openhands.agents` entry-point group, written the way pip takes it: a requirement on the
//! index (`my-agent==1.0.0`), a git repository (`git+https://…` with `ref`) or a source
//! archive (`https://…/x.zip`). Git and archive sources are pinned like plugins (the source
//! tree is a store entry) and built once into a wheel; every distribution of the closure is
//! a wheel locked by its sha256.

mod wheel_file;
mod wire;

pub use wheel_file::WheelFile;
pub use wire::{LockedAgentWire, LockedWheelWire};

use crate::lock::{LockedPlugin, differ};
use crate::manifest::PluginRequest;
use crate::source::{Source, SourceKind, redact};

/// The entry-point group an agent package must offer.
pub const AGENT_ENTRY_POINT_GROUP: &str = "openhands.agents";

/// The manifest's `[agent]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRequest {
    /// `source` as written (may hold `${VAR}` or credentials: print [`AgentRequest::display_source`]).
    pub source: String,
    /// `ref` (git sources only).
    pub git_ref: Option<String>,
    /// `entry_point`: which name of the `openhands.agents` group to use.
    pub entry_point: Option<String>,
    /// `python`: a version requirement for the interpreter (`>=3.11`, `3.12`).
    pub python: Option<String>,
    /// The line of the `source` key (0 outside a manifest file).
    pub line: usize,
    origin: AgentOrigin,
}

/// Where an agent package comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOrigin {
    /// A requirement resolved against the package index.
    Index {
        /// The package name, normalised (PEP 503).
        package: String,
    },
    /// A git repository or source archive holding the package's source tree, fetched like
    /// a plugin and built into a wheel.
    Tree(Box<PluginRequest>),
}

impl AgentRequest {
    /// Parses and checks an `[agent]` request. On error, returns the field at fault and why.
    pub fn new(
        source: &str,
        git_ref: Option<&str>,
        entry_point: Option<&str>,
        python: Option<&str>,
    ) -> Result<Self, (&'static str, String)> {
        let origin = parse_agent_source(source, git_ref)?;
        if let Some(name) = entry_point
            && (name.is_empty()
                || name.trim() != name
                || name.contains(['=', '[', ']', '\n'])
                || name.chars().any(char::is_control))
        {
            return Err((
                "entry_point",
                format!(
                    "`entry_point = \"{name}\"` is not an entry-point name; write the name only (the part before `=` in the package's `{AGENT_ENTRY_POINT_GROUP}` group)"
                ),
            ));
        }
        if let Some(python) = python
            && (python.trim().is_empty()
                || !python
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || " .,*=<>!~+".contains(c)))
        {
            return Err((
                "python",
                format!(
                    "`python = \"{python}\"` is not a Python version requirement; write for example `>=3.11` or `3.12`"
                ),
            ));
        }
        Ok(Self {
            source: source.to_owned(),
            git_ref: git_ref.map(str::to_owned),
            entry_point: entry_point.map(str::to_owned),
            python: python.map(str::to_owned),
            line: 0,
            origin,
        })
    }

    /// Sets the line of the `source` key, for messages.
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = line;
        self
    }

    /// Where the package comes from.
    pub fn origin(&self) -> &AgentOrigin {
        &self.origin
    }

    /// The source with credentials removed.
    pub fn display_source(&self) -> String {
        redact(&self.source).text
    }
}

fn parse_agent_source(
    source: &str,
    git_ref: Option<&str>,
) -> Result<AgentOrigin, (&'static str, String)> {
    let text = source.trim();
    if text.is_empty() {
        return Err(("source", "`source` of `[agent]` is empty".into()));
    }
    let shown = redact(text).text;
    if text.contains("://") || text.starts_with("git+") {
        let request = PluginRequest::new(text, git_ref, None, None).map_err(|m| ("source", m))?;
        match request.parsed_source() {
            Source::Local { .. } => unreachable!("a URL is never a local source"),
            s if s.kind() == SourceKind::Git && !text.starts_with("git+") => {
                return Err((
                    "source",
                    format!(
                        "agent source `{shown}` is neither `git+URL` nor an archive URL: write `git+{shown}` for a git repository, or give the URL of a `.zip` or `.tar.gz` of the package"
                    ),
                ));
            }
            _ => {}
        }
        return Ok(AgentOrigin::Tree(Box::new(request)));
    }
    if text.starts_with(['.', '/', '~']) {
        return Err((
            "source",
            format!(
                "agent source `{shown}` is a local folder, which berth cannot pin; use `git+file://…` for a local repository, or publish the package to an index"
            ),
        ));
    }
    let package = requirement_name(text).ok_or_else(|| {
        (
            "source",
            format!(
                "agent source `{shown}` is not a requirement (`my-agent==1.0.0`), a `git+URL` or an archive URL"
            ),
        )
    })?;
    if git_ref.is_some() {
        return Err((
            "ref",
            format!(
                "`ref` only applies to `git+` agent sources; pin `{package}` with `=={{version}}` in `source`"
            ),
        ));
    }
    Ok(AgentOrigin::Index { package })
}

/// The normalised project name of a PEP 508 requirement without a URL (`name[extra]>=1,<2`).
fn requirement_name(text: &str) -> Option<String> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
        .unwrap_or(text.len());
    let (name, rest) = text.split_at(end);
    let valid_name = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix('[') {
        Some(extras) => {
            let (inside, after) = extras.split_once(']')?;
            if !inside
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-, ".contains(c))
            {
                return None;
            }
            after
        }
        None => rest,
    };
    let rest = rest.trim();
    let valid_spec = rest.is_empty()
        || rest.split(',').all(|clause| {
            let clause = clause.trim();
            let version = clause.trim_start_matches(['=', '<', '>', '!', '~']);
            version.len() < clause.len()
                && !version.trim().is_empty()
                && version
                    .trim()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".*+!-_".contains(c))
        });
    (valid_name && valid_spec).then(|| normalize_package_name(name))
}

/// PEP 503 normalisation: lower case, runs of `-`, `_` and `.` become one `-`.
pub fn normalize_package_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_sep = false;
    for c in name.chars() {
        if "-_.".contains(c) {
            if !in_sep {
                out.push('-');
            }
            in_sep = true;
        } else {
            out.push(c.to_ascii_lowercase());
            in_sep = false;
        }
    }
    out
}

/// An entry point: `name = module:attr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPoint {
    /// The name in the group.
    pub name: String,
    /// `module:attr` (or `module`).
    pub value: String,
}

impl EntryPoint {
    /// Parses `name = module:attr`.
    pub fn parse(text: &str) -> Option<Self> {
        let (name, value) = text.split_once('=')?;
        let (name, value) = (name.trim(), value.trim());
        let module_ok = |m: &str| {
            !m.is_empty()
                && m.split('.').all(|p| {
                    !p.is_empty()
                        && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                        && !p.starts_with(|c: char| c.is_ascii_digit())
                })
        };
        let ok = match value.split_once(':') {
            Some((module, attr)) => module_ok(module) && module_ok(attr.trim()),
            None => module_ok(value),
        };
        (ok && !name.is_empty() && !name.contains(['[', ']'])).then(|| Self {
            name: name.to_owned(),
            value: value.replace(' ', ""),
        })
    }
}

impl std::fmt::Display for EntryPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {}", self.name, self.value)
    }
}

/// One wheel of the locked closure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedWheel {
    /// The distribution's name, normalised.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The wheel's file name.
    pub file: WheelFile,
    /// Where it is downloaded from, credentials removed; `None` for the wheel berth built
    /// from the agent's own git or archive source.
    pub url: Option<String>,
    /// sha256 of the file, lower-case hex (pip's `--hash=sha256:` form).
    pub sha256: String,
}

/// The lock's `[agent]` table, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedAgent {
    /// The requested source, credentials removed.
    pub source: String,
    /// The requested `ref`.
    pub git_ref: Option<String>,
    /// The requested `python` requirement.
    pub python: Option<String>,
    /// The package's name, normalised.
    pub package: String,
    /// The package's version.
    pub version: String,
    /// The chosen entry point of the `openhands.agents` group.
    pub entry_point: EntryPoint,
    /// The interpreter version the closure was resolved for (`3.11`).
    pub python_version: String,
    /// For git and archive sources: the source tree's pin, as a plugin entry named after
    /// the package (its store entry is what the wheel is built from).
    pub tree: Option<LockedPlugin>,
    /// Every wheel of the closure, sorted by name then file.
    pub wheels: Vec<LockedWheel>,
}

impl LockedAgent {
    /// Whether this lock entry is what `request` asks for: equal `source`, `ref` and
    /// `python`, and the requested entry-point name, if any, is the locked one.
    pub fn satisfies(&self, request: &AgentRequest) -> bool {
        self.differences(request).is_empty()
    }

    /// The ways this entry differs from `request`, for messages.
    pub fn differences(&self, r: &AgentRequest) -> Vec<String> {
        let mut what = Vec::new();
        let source = r.display_source();
        differ(&mut what, "source", Some(&self.source), Some(&source));
        differ(
            &mut what,
            "ref",
            self.git_ref.as_deref(),
            r.git_ref.as_deref(),
        );
        differ(
            &mut what,
            "python",
            self.python.as_deref(),
            r.python.as_deref(),
        );
        if let Some(name) = &r.entry_point
            && *name != self.entry_point.name
        {
            what.push(format!(
                "`entry_point` is `{name}` in the manifest but `{}` in the lock",
                self.entry_point.name
            ));
        }
        what
    }
}

#[cfg(test)]
mod tests;
