//! The manifest's `[agent]` table: the custom agent package (docs/spec.md section 8), written the
//! way pip takes it.

use super::PluginRequest;
use crate::agent::{AGENT_ENTRY_POINT_GROUP, normalize_package_name};
use crate::redact::redact;
use crate::source::{Source, SourceKind};

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
