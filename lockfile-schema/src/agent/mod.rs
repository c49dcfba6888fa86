//! The custom agent package (docs/spec.md section 8): the manifest's `[agent]` request and the
//! lock's `[agent]` table with its `[[agent.wheel]]` closure.
//!
//! An agent is a pip-installable Python package exposing a factory in the
//! `openhands.agents` entry-point group, written the way pip takes it: a requirement on the
//! index (`my-agent==1.0.0`), a git repository (`git+https://…` with `ref`) or a source
//! archive (`https://…/x.zip`). Git and archive sources are pinned like plugins (the source
//! tree is a store entry) and built once into a wheel; every distribution of the closure is
//! a wheel locked by its sha256.

//!
//! This module holds the agent's vocabulary that both sides use (its entry-point group,
//! package names, entry points, wheel file names); the request is in
//! [`crate::manifest`] and the locked table in [`crate::lock`].

mod wheel_file;

pub use wheel_file::WheelFile;

/// The entry-point group an agent package must offer.
pub const AGENT_ENTRY_POINT_GROUP: &str = "openhands.agents";

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

#[cfg(test)]
mod tests;
