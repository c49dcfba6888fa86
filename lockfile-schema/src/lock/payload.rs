//! The lock's `[[payload]]` tables: the code a package runner would fetch at every start
//! (an MCP server's `npx -y pkg@^1`, `uvx mcp-server-fetch`), pinned with its whole
//! dependency closure and the NAR hash of the store entry that holds it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::LockedWheel;
use super::agent_wire::{LockedWheelWire, wheels_from_wire, write_wheels};
use super::npm::{LockedNpmPackage, LockedNpmPackageWire, check_registry, is_closure_path};
use super::write_fields;
use crate::hash::Sha256Hash;
use crate::runner::{Ecosystem, PayloadUse};

/// One locked payload: what one MCP server of one plugin runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedPayload {
    /// The plugin whose server or hook it is.
    pub plugin: String,
    /// The server's name, or the hook's event (`pre_tool_use`).
    pub server: String,
    /// What starts it: an MCP server, a hook or an LSP server.
    pub used_by: PayloadUse,
    /// The runner as written (`npx`, `uvx`, ...).
    pub runner: String,
    /// The package spec as written in the server's command line.
    pub spec: String,
    /// npm or Python.
    pub ecosystem: Ecosystem,
    /// The package's name.
    pub package: String,
    /// The version the spec resolved to.
    pub version: String,
    /// The registry (npm) or index (Python) it was resolved against, without credentials:
    /// a fetch looks its credentials up again in the machine's configuration. `None` in a
    /// lock written before berth recorded it.
    pub registry: Option<String>,
    /// What to run: npm, the script's path in the closure
    /// (`node_modules/pkg/bin/cli.js`); Python, the console script's name.
    pub entry: String,
    /// NAR hash of the closure's store entry.
    pub hash: Sha256Hash,
    /// The Python version (`major.minor`) a Python closure was resolved for.
    pub python_version: Option<String>,
    /// An npm closure's packages, in path order.
    pub npm: Vec<LockedNpmPackage>,
    /// A Python closure's wheels, sorted by name then file.
    pub wheels: Vec<LockedWheel>,
}

impl LockedPayload {
    /// The name of its store entry: `npm-<package>-<version>` or `py-<package>-<version>`,
    /// the scope's `@` and `/` made `-`.
    pub fn entry_name(&self) -> String {
        let prefix = match self.ecosystem {
            Ecosystem::Npm => "npm",
            Ecosystem::Python => "py",
        };
        let package = self.package.trim_start_matches('@').replace('/', "-");
        format!("{prefix}-{package}-{}", self.version)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '+') {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    }
}

/// One `[[payload]]` entry as it is on disk. Field order is the writer's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockedPayloadWire {
    /// The plugin whose MCP server runs it.
    #[schemars(length(min = 1))]
    pub plugin: String,
    /// The server's name, or for a hook its event.
    #[schemars(length(min = 1))]
    pub server: String,
    /// What starts it: `hook` or `lsp_server`; absent for an MCP server.
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^(mcp_server|hook|lsp_server)$"))]
    pub used_by: Option<String>,
    /// The runner as written: `npx`, `npm exec`, `bunx`, `pnpm dlx`, `uvx`, `uv tool run`,
    /// `pipx run`.
    #[schemars(length(min = 1))]
    pub runner: String,
    /// The package spec as written in the command line (`fake-mcp@^1`).
    #[schemars(length(min = 1))]
    pub spec: String,
    /// `npm` or `python`.
    #[schemars(regex(pattern = r"^(npm|python)$"))]
    pub ecosystem: String,
    /// The package's name.
    #[schemars(length(min = 1))]
    pub package: String,
    /// The exact version the spec resolved to.
    #[schemars(length(min = 1))]
    pub version: String,
    /// The npm registry or Python index it was resolved against (http or https, no
    /// credentials); absent in locks written before berth recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^https?://[^/@?#]+(/.*)?$"))]
    pub registry: Option<String>,
    /// npm: the script's path in the closure; Python: the console script's name.
    #[schemars(length(min = 1))]
    pub entry: String,
    /// NAR sha256 of the closure's store entry, SRI form.
    #[schemars(regex(pattern = r"^sha256-[A-Za-z0-9+/]{43}=$"))]
    pub hash: String,
    /// The Python version (`major.minor`) of a Python closure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^[0-9]+\.[0-9]+$"))]
    pub python_version: Option<String>,
    /// An npm closure: every package at its `node_modules` path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub npm: Vec<LockedNpmPackageWire>,
    /// A Python closure: every wheel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wheel: Vec<LockedWheelWire>,
}

impl TryFrom<LockedPayloadWire> for LockedPayload {
    type Error = String;

    fn try_from(w: LockedPayloadWire) -> Result<Self, String> {
        let ecosystem = Ecosystem::parse(&w.ecosystem)
            .ok_or_else(|| format!("`ecosystem = \"{}\"` is not `npm` or `python`", w.ecosystem))?;
        let hash = Sha256Hash::from_sri(&w.hash).map_err(|e| e.to_string())?;
        let used_by = match w.used_by.as_deref() {
            None => PayloadUse::McpServer,
            Some(text) => PayloadUse::parse(text).ok_or_else(|| {
                format!("`use = \"{text}\"` is not `mcp_server`, `hook` or `lsp_server`")
            })?,
        };
        let npm = w
            .npm
            .into_iter()
            .map(LockedNpmPackage::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        let wheels = wheels_from_wire(w.wheel)?;
        if let Some(registry) = &w.registry {
            check_registry(registry)?;
        }
        match ecosystem {
            Ecosystem::Npm => {
                if npm.is_empty() || !wheels.is_empty() {
                    return Err("an npm payload lists its `npm` packages and no wheels".into());
                }
                if !is_closure_path(&w.entry) {
                    return Err(format!(
                        "`entry = \"{}\"` is not a path in the closure",
                        w.entry
                    ));
                }
            }
            Ecosystem::Python => {
                if wheels.is_empty() || !npm.is_empty() || w.python_version.is_none() {
                    return Err("a Python payload lists its wheels and its `python_version`".into());
                }
                if w.entry.contains(['/', '\\']) || w.entry.starts_with('.') {
                    return Err(format!("`entry = \"{}\"` is not a script name", w.entry));
                }
            }
        }
        Ok(LockedPayload {
            plugin: w.plugin,
            server: w.server,
            used_by,
            runner: w.runner,
            spec: w.spec,
            ecosystem,
            package: w.package,
            version: w.version,
            registry: w.registry,
            entry: w.entry,
            hash,
            python_version: w.python_version,
            npm,
            wheels,
        })
    }
}

impl LockedPayload {
    /// The canonical `[[payload]]` text (with its leading blank line).
    pub(crate) fn write_toml(&self, out: &mut String) {
        out.push_str("\n[[payload]]\n");
        let hash = self.hash.to_sri();
        write_fields(
            out,
            &[
                ("plugin", Some(&self.plugin)),
                ("server", Some(&self.server)),
            ],
        );
        if self.used_by != PayloadUse::McpServer {
            out.push_str(&format!("use = \"{}\"\n", self.used_by.as_str()));
        }
        write_fields(
            out,
            &[
                ("runner", Some(&self.runner)),
                ("spec", Some(&self.spec)),
                ("ecosystem", Some(&self.ecosystem.as_str().to_owned())),
                ("package", Some(&self.package)),
                ("version", Some(&self.version)),
                ("registry", self.registry.as_ref()),
                ("entry", Some(&self.entry)),
                ("hash", Some(&hash)),
                ("python_version", self.python_version.as_ref()),
            ],
        );
        for p in &self.npm {
            p.write_toml(out);
        }
        write_wheels(out, "payload.wheel", &self.wheels);
    }
}

#[cfg(test)]
mod tests {
    use crate::lock::parse_lock;

    const PAYLOAD: &str = "version = 1\n\n\
        [[payload]]\nplugin = \"tools\"\nserver = \"fake\"\nrunner = \"npx\"\n\
        spec = \"fake-mcp@^1\"\necosystem = \"npm\"\npackage = \"fake-mcp\"\n\
        version = \"1.1.0\"\nregistry = \"https://registry.example/\"\n\
        entry = \"node_modules/fake-mcp/bin/server.js\"\n\
        hash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n\n\
        [[payload.npm]]\npath = \"node_modules/fake-mcp\"\nversion = \"1.1.0\"\n\
        url = \"https://registry.example/fake-mcp/-/fake-mcp-1.1.0.tgz\"\n\
        integrity = \"sha512-AAAA\"\n";

    #[test]
    fn a_payload_round_trips_through_the_canonical_writer() {
        let lock = parse_lock("plugins.lock", PAYLOAD).expect("valid");
        assert_eq!(lock.payloads.len(), 1);
        assert_eq!(lock.payloads[0].entry_name(), "npm-fake-mcp-1.1.0");
        let text = lock.to_toml();
        assert_eq!(parse_lock("plugins.lock", &text).expect("valid"), lock);
        assert!(text.contains("[[payload.npm]]"), "{text}");
        assert_eq!(
            lock.payloads[0].registry.as_deref(),
            Some("https://registry.example/")
        );
        // A lock from before the registry was recorded still reads.
        let older = PAYLOAD.replace("registry = \"https://registry.example/\"\n", "");
        let older = parse_lock("plugins.lock", &older).expect("valid");
        assert_eq!(older.payloads[0].registry, None);
        assert!(!older.to_toml().contains("registry ="));
    }

    #[test]
    fn a_payload_leaving_its_closure_or_fetched_from_a_file_is_refused() {
        for (from, to, why) in [
            (
                "path = \"node_modules/fake-mcp\"",
                "path = \"node_modules/../../x\"",
                "not a `node_modules/` path",
            ),
            (
                "url = \"https://",
                "url = \"file:///etc/",
                "not an http(s) URL",
            ),
            (
                "entry = \"node_modules/fake-mcp/bin/server.js\"",
                "entry = \"/bin/sh\"",
                "not a path in the closure",
            ),
            (
                "ecosystem = \"npm\"",
                "ecosystem = \"cargo\"",
                "not `npm` or `python`",
            ),
            (
                "registry = \"https://",
                "registry = \"https://u:tok@",
                "carry no credentials",
            ),
            (
                "registry = \"https://registry.example/\"",
                "registry = \"file:///srv/npm\"",
                "not an http(s) URL",
            ),
        ] {
            let text = PAYLOAD.replace(from, to);
            let err = parse_lock("plugins.lock", &text)
                .expect_err(why)
                .to_string();
            assert!(err.contains(why) && err.contains("server `fake`"), "{err}");
        }
    }
}
