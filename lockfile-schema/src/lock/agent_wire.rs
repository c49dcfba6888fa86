//! The lock's `[agent]` table as it is on disk, its validation into [`LockedAgent`] and its
//! canonical text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::{LockedAgent, LockedWheel};
use super::{LockedPlugin, LockedPluginWire, write_fields};
use crate::agent::{EntryPoint, WheelFile, normalize_package_name};
use crate::manifest::{AgentOrigin, AgentRequest};

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
        let tree = tree_from_wire(&request, &w)?;
        let wheels = wheels_from_wire(w.wheel)?;
        check_wheels(&wheels, tree.is_some(), &w.package)?;
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

/// The locked source tree of a git or archive agent source (read as a plugin entry
/// would be); `None` for a package from the index, which has none of its fields.
fn tree_from_wire(
    request: &AgentRequest,
    w: &LockedAgentWire,
) -> Result<Option<LockedPlugin>, String> {
    if let AgentOrigin::Index { .. } = request.origin() {
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
        return Ok(None);
    }
    let plugin = LockedPluginWire {
        requested: None,
        plugin_version: None,
        dependencies: Vec::new(),
        needed_by: Vec::new(),
        auto_load: None,
        standalone_skill: false,
        definition: None,
        signature: None,
        npm: None,
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
    Ok(Some(LockedPlugin::try_from(plugin)?))
}

/// Refuses a closure whose wheels do not fit its source: exactly one built wheel (no
/// `url`) for a source tree, none for an index package, and a wheel of `package` itself.
fn check_wheels(wheels: &[LockedWheel], has_tree: bool, package: &str) -> Result<(), String> {
    let built = wheels.iter().filter(|w| w.url.is_none()).count();
    match (has_tree, built) {
        (false, 0) | (true, 1) => {}
        (false, _) => {
            return Err(
                "a wheel without `url` belongs only to git and archive agent sources".into(),
            );
        }
        (true, _) => {
            return Err("a git or archive agent source has exactly one wheel without `url` (the one built from it)".into());
        }
    }
    if !wheels.iter().any(|wh| wh.name == package) {
        return Err(format!("no wheel of the package `{package}` itself"));
    }
    Ok(())
}

/// Validates a closure's `wheel` entries.
pub(super) fn wheels_from_wire(wire: Vec<LockedWheelWire>) -> Result<Vec<LockedWheel>, String> {
    let mut wheels = Vec::with_capacity(wire.len());
    for (i, wheel) in wire.into_iter().enumerate() {
        let label = format!("wheel {} (`{}`)", i + 1, wheel.file);
        if !is_sha256_hex(&wheel.sha256) {
            return Err(format!("{label}: `sha256` is not 64 lower-case hex digits"));
        }
        let Some(file) = WheelFile::parse(&wheel.file) else {
            return Err(format!("{label}: `file` is not a wheel file name"));
        };
        if wheel.name.is_empty() || normalize_package_name(&wheel.name) != wheel.name {
            return Err(format!("{label}: `name` is not a normalised package name"));
        }
        wheels.push(LockedWheel {
            name: wheel.name,
            version: wheel.version,
            file,
            url: wheel.url,
            sha256: wheel.sha256,
        });
    }
    Ok(wheels)
}

/// Writes a closure's wheels as `[[TABLE]]` entries.
pub(super) fn write_wheels(out: &mut String, table: &str, wheels: &[LockedWheel]) {
    for wheel in wheels {
        out.push_str(&format!("\n[[{table}]]\n"));
        write_fields(
            out,
            &[
                ("name", Some(&wheel.name)),
                ("version", Some(&wheel.version)),
                ("file", Some(&wheel.file.to_string())),
                ("url", wheel.url.as_ref()),
                ("sha256", Some(&wheel.sha256)),
            ],
        );
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
        write_wheels(out, "agent.wheel", &self.wheels);
    }
}
