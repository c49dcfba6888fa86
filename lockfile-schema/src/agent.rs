//! The custom agent package (SPEC section 8): the manifest's `[agent]` request and the
//! lock's `[agent]` table with its `[[agent.wheel]]` closure.
//!
//! An agent is a pip-installable Python package exposing a factory in the
//! `openhands.agents` entry-point group, written the way pip takes it: a requirement on the
//! index (`my-agent==1.0.0`), a git repository (`git+https://…` with `ref`) or a source
//! archive (`https://…/x.zip`). Git and archive sources are pinned like plugins (the source
//! tree is a store entry) and built once into a wheel; every distribution of the closure is
//! a wheel locked by its sha256.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::lock::{LockedPlugin, LockedPluginWire, differ, write_fields};
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
    pub file: String,
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

/// The lock's `[agent]` table as it is on disk. Field order is the writer's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockedAgentWire {
    /// The manifest's `source`, credentials removed.
    #[schemars(length(min = 1))]
    pub source: String,
    /// The manifest's `ref`, if it gave one (git sources).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub git_ref: Option<String>,
    /// The manifest's `python` requirement, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub python: Option<String>,
    /// The package's name, normalised (PEP 503).
    #[schemars(length(min = 1))]
    pub package: String,
    /// The package's version.
    #[schemars(length(min = 1))]
    pub version: String,
    /// The chosen entry point of the `openhands.agents` group, `name = module:attr`.
    #[schemars(length(min = 3))]
    pub entry_point: String,
    /// The Python version (`major.minor`) the closure was resolved for.
    #[schemars(regex(pattern = r"^[0-9]+\.[0-9]+$"))]
    pub python_version: String,
    /// What was fetched (git and archive sources), credentials removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub url: Option<String>,
    /// The resolved commit (git sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^[0-9a-f]{40}$"))]
    pub rev: Option<String>,
    /// sha256 of the downloaded archive (archive sources), SRI form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^sha256-[A-Za-z0-9+/]{43}=$"))]
    pub archive_hash: Option<String>,
    /// NAR hash of the package's source tree (git and archive sources), SRI form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^sha256-[A-Za-z0-9+/]{43}=$"))]
    pub hash: Option<String>,
    /// Every wheel of the dependency closure, the package's own included.
    #[serde(default)]
    pub wheel: Vec<LockedWheelWire>,
}

/// One `[[agent.wheel]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockedWheelWire {
    /// The distribution's name, normalised (PEP 503).
    #[schemars(length(min = 1))]
    pub name: String,
    /// Its version.
    #[schemars(length(min = 1))]
    pub version: String,
    /// The wheel's file name.
    #[schemars(regex(pattern = r"^[^/\\]+\.whl$"))]
    pub file: String,
    /// Where it is downloaded from, credentials removed. Absent for the wheel berth builds
    /// from the agent's git or archive source (rebuilt from the locked tree and checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub url: Option<String>,
    /// sha256 of the file, lower-case hex.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl TryFrom<LockedAgentWire> for LockedAgent {
    type Error = String;

    fn try_from(w: LockedAgentWire) -> Result<Self, String> {
        let request = AgentRequest::new(&w.source, w.git_ref.as_deref(), None, w.python.as_deref())
            .map_err(|(_, m)| m)?;
        let entry_point = EntryPoint::parse(&w.entry_point).ok_or_else(|| {
            format!(
                "`entry_point = \"{}\"` is not `name = module:attr`",
                w.entry_point
            )
        })?;
        if normalize_package_name(&w.package) != w.package || w.package.is_empty() {
            return Err(format!(
                "`package = \"{}\"` is not a normalised package name",
                w.package
            ));
        }
        let tree = match request.origin() {
            AgentOrigin::Index { .. } => {
                for (key, present) in [
                    ("url", w.url.is_some()),
                    ("rev", w.rev.is_some()),
                    ("archive_hash", w.archive_hash.is_some()),
                    ("hash", w.hash.is_some()),
                ] {
                    if present {
                        return Err(format!("`{key}` does not belong to an index agent source"));
                    }
                }
                None
            }
            AgentOrigin::Tree(_) => {
                let plugin = LockedPluginWire {
                    name: w.package.clone(),
                    source: w.source.clone(),
                    git_ref: w.git_ref.clone(),
                    version: None,
                    resolved_ref: None,
                    repo_path: None,
                    url: w.url.clone(),
                    rev: w.rev.clone(),
                    archive_hash: w.archive_hash.clone(),
                    path: None,
                    hash: w.hash.clone().ok_or("`hash` is missing")?,
                };
                Some(LockedPlugin::try_from(plugin)?)
            }
        };
        let mut wheels = Vec::with_capacity(w.wheel.len());
        for (i, wheel) in w.wheel.into_iter().enumerate() {
            let label = format!("wheel {} (`{}`)", i + 1, wheel.file);
            if !is_sha256_hex(&wheel.sha256) {
                return Err(format!("{label}: `sha256` is not 64 lower-case hex digits"));
            }
            if !wheel.file.ends_with(".whl") || wheel.file.contains(['/', '\\']) {
                return Err(format!("{label}: `file` is not a wheel file name"));
            }
            if wheel.name.is_empty() || normalize_package_name(&wheel.name) != wheel.name {
                return Err(format!("{label}: `name` is not a normalised package name"));
            }
            wheels.push(LockedWheel {
                name: wheel.name,
                version: wheel.version,
                file: wheel.file,
                url: wheel.url,
                sha256: wheel.sha256,
            });
        }
        let built = wheels.iter().filter(|w| w.url.is_none()).count();
        match (&tree, built) {
            (None, 0) | (Some(_), 1) => {}
            (None, _) => {
                return Err(
                    "a wheel without `url` belongs only to git and archive agent sources".into(),
                );
            }
            (Some(_), _) => {
                return Err("a git or archive agent source has exactly one wheel without `url` (the one built from it)".into());
            }
        }
        if !wheels.iter().any(|wh| wh.name == w.package) {
            return Err(format!("no wheel of the package `{}` itself", w.package));
        }
        let major_minor = w.python_version.split_once('.').is_some_and(|(a, b)| {
            !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
        });
        if !major_minor {
            return Err(format!(
                "`python_version = \"{}\"` is not `major.minor`",
                w.python_version
            ));
        }
        Ok(LockedAgent {
            source: w.source,
            git_ref: w.git_ref,
            python: w.python,
            package: w.package,
            version: w.version,
            entry_point,
            python_version: w.python_version,
            tree,
            wheels,
        })
    }
}

impl LockedAgent {
    /// The canonical `[agent]` text of the lockfile (with its leading blank line).
    pub(crate) fn write_toml(&self, out: &mut String) {
        out.push_str("\n[agent]\n");
        // A git or archive source is pinned as a plugin entry is: reuse its wire form.
        let tree = self.tree.as_ref().map(LockedPluginWire::from);
        let pin = |f: fn(&LockedPluginWire) -> Option<&String>| tree.as_ref().and_then(f);
        let entry_point = self.entry_point.to_string();
        write_fields(
            out,
            &[
                ("source", Some(&self.source)),
                ("ref", self.git_ref.as_ref()),
                ("python", self.python.as_ref()),
                ("package", Some(&self.package)),
                ("version", Some(&self.version)),
                ("entry_point", Some(&entry_point)),
                ("python_version", Some(&self.python_version)),
                ("url", pin(|t| t.url.as_ref())),
                ("rev", pin(|t| t.rev.as_ref())),
                ("archive_hash", pin(|t| t.archive_hash.as_ref())),
                ("hash", pin(|t| Some(&t.hash))),
            ],
        );
        for wheel in &self.wheels {
            out.push_str("\n[[agent.wheel]]\n");
            write_fields(
                out,
                &[
                    ("name", Some(&wheel.name)),
                    ("version", Some(&wheel.version)),
                    ("file", Some(&wheel.file)),
                    ("url", wheel.url.as_ref()),
                    ("sha256", Some(&wheel.sha256)),
                ],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_in_the_three_forms() {
        let index = AgentRequest::new("My_Custom.Agent==1.0.0", None, None, None).expect("index");
        assert_eq!(
            index.origin(),
            &AgentOrigin::Index {
                package: "my-custom-agent".into()
            }
        );
        let git = AgentRequest::new(
            "git+https://github.com/user/my-custom-agent.git",
            Some("v1"),
            Some("my-agent"),
            Some(">=3.11"),
        )
        .expect("git");
        assert!(
            matches!(git.origin(), AgentOrigin::Tree(r) if r.parsed_source().kind() == SourceKind::Git)
        );
        let zip = AgentRequest::new(
            "https://example.com/agents/my-custom-agent.zip",
            None,
            None,
            None,
        )
        .expect("zip");
        assert!(
            matches!(zip.origin(), AgentOrigin::Tree(r) if r.parsed_source().kind() == SourceKind::Archive)
        );
    }

    #[test]
    fn bad_requests_name_their_field() {
        let field = |s: &str, r: Option<&str>, e: Option<&str>, p: Option<&str>| {
            AgentRequest::new(s, r, e, p).expect_err(s).0
        };
        assert_eq!(
            field("https://github.com/u/a.git", None, None, None),
            "source"
        );
        assert_eq!(field("./agent", None, None, None), "source");
        assert_eq!(field("my agent", None, None, None), "source");
        assert_eq!(field("my-agent==1", Some("main"), None, None), "ref");
        assert_eq!(
            field("my-agent==1", None, Some("a = b:c"), None),
            "entry_point"
        );
        assert_eq!(
            field("my-agent==1", None, None, Some("python3;rm")),
            "python"
        );
        assert_eq!(
            field("https://example.com/a.zip", Some("main"), None, None),
            "source"
        );
    }

    #[test]
    fn entry_points_parse() {
        let ep = EntryPoint::parse("my-agent = my_agent.agent:create").expect("valid");
        assert_eq!(ep.name, "my-agent");
        assert_eq!(ep.value, "my_agent.agent:create");
        assert_eq!(ep.to_string(), "my-agent = my_agent.agent:create");
        assert!(EntryPoint::parse("x = 1bad:y").is_none());
        assert!(EntryPoint::parse("no-equals").is_none());
    }

    #[test]
    fn names_normalise() {
        assert_eq!(normalize_package_name("Foo__Bar.baz-"), "foo-bar-baz-");
        assert_eq!(normalize_package_name("agent_helper"), "agent-helper");
    }

    const LOCK: &str = r#"# This file is generated by `berth plugins lock`. Do not edit it by hand.
version = 1

[agent]
source = "git+https://example.com/my-custom-agent.git"
ref = "v1.0.0"
python = ">=3.11"
package = "my-custom-agent"
version = "1.0.0"
entry_point = "my-agent = my_custom_agent.agent:create"
python_version = "3.11"
url = "https://example.com/my-custom-agent.git"
rev = "3ad07f06c4b1d6a1f7e0d7f2a9c1b4e5d6f7a8b9"
hash = "sha256-HDfQGvQL4ugGkd48w99EN3ppmvuxfGjwgJZLL9Bx/BM="

[[agent.wheel]]
name = "agent-helper"
version = "0.3.0"
file = "agent_helper-0.3.0-py3-none-any.whl"
url = "https://pypi.example.com/files/agent_helper-0.3.0-py3-none-any.whl"
sha256 = "0000000000000000000000000000000000000000000000000000000000000001"

[[agent.wheel]]
name = "my-custom-agent"
version = "1.0.0"
file = "my_custom_agent-1.0.0-py3-none-any.whl"
sha256 = "0000000000000000000000000000000000000000000000000000000000000002"
"#;

    #[test]
    fn a_locked_agent_round_trips_canonically() {
        let lock = crate::parse_lock("plugins.lock", LOCK).expect("valid lock");
        let agent = lock.agent.as_ref().expect("agent");
        assert_eq!(agent.entry_point.name, "my-agent");
        let built = agent.wheels.iter().find(|w| w.url.is_none());
        assert_eq!(built.map(|w| w.name.as_str()), Some("my-custom-agent"));
        assert!(matches!(
            agent.tree.as_ref().map(|t| &t.pin),
            Some(crate::Pin::Git { .. })
        ));
        assert_eq!(lock.to_toml(), LOCK);
    }

    #[test]
    fn bad_agent_tables_are_named() {
        for (from, to, why) in [
            (
                "sha256 = \"0000000000000000000000000000000000000000000000000000000000000001\"",
                "sha256 = \"xyz\"",
                "64 lower-case hex",
            ),
            (
                "entry_point = \"my-agent = my_custom_agent.agent:create\"",
                "entry_point = \"my-agent\"",
                "name = module:attr",
            ),
            (
                "python_version = \"3.11\"",
                "python_version = \"three\"",
                "major.minor",
            ),
            (
                "hash = \"sha256-HDfQGvQL4ugGkd48w99EN3ppmvuxfGjwgJZLL9Bx/BM=\"\n",
                "",
                "`hash` is missing",
            ),
        ] {
            assert!(LOCK.contains(from), "{from}");
            let text = LOCK.replace(from, to);
            let err = crate::parse_lock("plugins.lock", &text)
                .expect_err(why)
                .to_string();
            assert!(err.contains("`[agent]`") && err.contains(why), "{err}");
        }
    }

    #[test]
    fn the_manifest_agent_table_is_read_and_compared() {
        let text = "[agent]\nsource = \"git+https://example.com/my-custom-agent.git\"\nref = \"v1.0.0\"\npython = \">=3.11\"\nentry_point = \"my-agent\"\n";
        let manifest = crate::parse_manifest("plugins.toml", text)
            .expect("valid")
            .manifest;
        let request = manifest.agent.as_ref().expect("agent");
        assert_eq!(request.line, 2);
        let lock = crate::parse_lock("plugins.lock", LOCK).expect("valid lock");
        assert!(lock.staleness(&manifest).is_empty());
        let other = crate::parse_manifest("plugins.toml", &text.replace("my-agent\"", "other\""))
            .expect("valid")
            .manifest;
        let stale = lock.staleness(&other);
        assert_eq!(stale.len(), 1);
        assert!(
            stale[0].to_string().contains("`entry_point` is `other`"),
            "{}",
            stale[0]
        );
        let bad = crate::parse_manifest("plugins.toml", "[agent]\nsource = \"./here\"\n")
            .expect_err("local");
        assert!(bad.to_string().contains("plugins.toml:2:"), "{bad}");
        let typo = crate::parse_manifest(
            "plugins.toml",
            "[agent]\nsource = \"a==1\"\nentry-point = \"x\"\n",
        )
        .expect("valid");
        assert!(
            typo.warnings[0]
                .to_string()
                .contains("did you mean `entry_point`")
        );
    }
}
