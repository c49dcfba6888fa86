//! What a capability surface holds: the surface and its entries (hooks, MCP servers,
//! components), its approval digest and what it says about capabilities. `surface.rs`
//! builds one from a store entry.

use std::collections::BTreeMap;

use serde::Serialize;

use super::walk::sha256_hex;
use berth_lockfile_schema::governance::Capability;
use berth_lockfile_schema::runner::PayloadUse;
pub use berth_plugin::runs::{HookEntry, LspEntry, McpEntry, Unmodeled};

/// Where the surface says the plugin is: the loaders write this in place of the plugin's
/// folder, so a surface is the same wherever the store is.
pub const ROOT_PLACEHOLDER: &str = "${CLAUDE_PLUGIN_ROOT}";

/// Where the surface says the plugin's data folder is (Agent Plugins `${PLUGIN_DATA}`).
pub const DATA_PLACEHOLDER: &str = "${PLUGIN_DATA}";

/// A plugin's capability surface. Every collection has a fixed order, so equal plugins
/// give equal surfaces and equal JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Surface {
    /// Every hook any harness would load (hooks files, manifests inline or by path, the
    /// marketplace entry, markdown front matter), monitors and status lines, sorted by
    /// event, matcher and command.
    pub hooks: Vec<HookEntry>,
    /// MCP servers by name: the plugin's under their own name; a sub-agent's or a skill's
    /// as `<defining file>#<name>` (e.g. `agents/reviewer.md#db`).
    pub mcp_servers: BTreeMap<String, McpEntry>,
    /// LSP servers by name, as written with object keys sorted (environment values
    /// hidden).
    pub lsp_servers: BTreeMap<String, LspEntry>,
    /// Every regular file with an execute bit, every file under `bin/`, every file of a
    /// manifest's `workflows`, and every executable a manifest declares for a harness to
    /// fetch (`binaries`): relative path -> lowercase hex SHA-256 (declared ones:
    /// `declared sha256:<hex>`).
    pub executables: BTreeMap<String, String>,
    /// Every regular file a hook command, an MCP server's command or arguments, or an LSP
    /// server's command or arguments names: relative path -> lowercase hex SHA-256.
    pub named_files: BTreeMap<String, String>,
    /// Every file and symlink of the plugin that is not prose (see `prose.rs`), and every
    /// prose file a command names: relative path -> lowercase hex SHA-256, with ` +x` when
    /// it is executable; a symlink as `-> TARGET`.
    pub files: BTreeMap<String, String>,
    /// Skills by name.
    pub skills: BTreeMap<String, Component>,
    /// Commands by name (the file's stem; the agent sees `<plugin>:<name>`).
    pub commands: BTreeMap<String, Component>,
    /// Sub-agents by name.
    pub agents: BTreeMap<String, Component>,
    /// The packages the lock pins for its runner lines (`npx`, `uvx`): by MCP server name,
    /// `hook:<event>` for a hook, `lsp_server:<name>` for an LSP server; see
    /// [`Surface::pin_packages`].
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub packages: BTreeMap<String, PackagePin>,
    /// What each observed MCP server offered the model (the lock's `[[tools]]`), by
    /// server; see [`Surface::pin_tools`].
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_tools: BTreeMap<String, super::tools::ToolsPin>,
    /// What a harness may run that berth cannot model; each counts as its capability.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmodeled: Vec<Unmodeled>,
    /// The parts of each prose file that run or grant (shell lines, granting front matter
    /// keys), by path.
    #[serde(skip)]
    pub prose_runs: BTreeMap<String, Vec<String>>,
    /// Every prose file: relative path -> lowercase hex SHA-256. Approved whole only when
    /// the plugin runs code ([`Surface::runs_code`]), which may read it.
    #[serde(skip)]
    pub prose: BTreeMap<String, String>,
    /// What the plugin's marketplace entry defines of it (canonical JSON), when it does.
    #[serde(skip)]
    pub definition: Option<String>,
    /// What could not be read, or was read in an unexpected way, naming plugin and file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A package a runner line starts, as the lock pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackagePin {
    /// The runner as written (`npx`, `uvx`).
    pub runner: String,
    /// The line's package spec as written (`fake-mcp@1.0.0`).
    pub spec: String,
    /// The package.
    pub package: String,
    /// The pinned version.
    pub version: String,
    /// The file of the closure that runs (`node_modules/fake-mcp/bin/server.js`).
    pub entry: String,
    /// The closure's NAR hash (SRI).
    pub hash: String,
}

/// A skill, command or sub-agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Component {
    /// Lowercase hex SHA-256 of the defining file; for a `SKILL.md` skill, of its whole
    /// folder (see [`surface_of`](super::surface_of)).
    pub digest: String,
    /// A skill's or command's `allowed-tools`, a sub-agent's `tools`; `None` when not given.
    pub tools: Option<Vec<String>>,
    /// The shell lines its text runs (`` !`cmd` ``, ```` ```! ```` blocks), as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shell: Vec<String>,
}

/// What [`Surface::approval_digest`] covers.
#[derive(Serialize)]
struct Approved<'a> {
    version: u32,
    files: &'a BTreeMap<String, String>,
    prose: &'a BTreeMap<String, Vec<String>>,
    definition: Option<&'a str>,
    packages: &'a BTreeMap<String, PackagePin>,
    /// Left out when empty, so a plugin with no observed server keeps its digest.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    tools: &'a BTreeMap<String, super::tools::ToolsPin>,
    /// Every prose file, in a plugin that runs code; left out in one that runs nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    prose_files: Option<&'a BTreeMap<String, String>>,
}

/// The version of what an approval digest covers; a new version asks for every approval
/// again once. 3: every prose file of a plugin that runs code, links with their target's
/// content, and Gemini CLI's spans among the running parts of prose.
pub const APPROVAL_DIGEST_VERSION: u32 = 3;

impl Surface {
    /// `sha256:` and the hex SHA-256 of the compact JSON of what runs or grants: every
    /// file and symlink that is not prose (content, exec bit, link target and the content
    /// it names), the running and granting parts of prose, the marketplace entry's
    /// definition and the pinned packages (runner, spec, package, version, entry, hash);
    /// and, in a plugin that runs code ([`Surface::runs_code`]), every prose file whole.
    /// Every hook, MCP and LSP field lives in one of those, so any change to one asks
    /// again; a change to the rest of a skill's, command's or agent's text does not, in a
    /// plugin that runs nothing.
    pub fn approval_digest(&self) -> String {
        let approved = Approved {
            version: APPROVAL_DIGEST_VERSION,
            files: &self.files,
            prose: &self.prose_runs,
            definition: self.definition.as_deref(),
            packages: &self.packages,
            tools: &self.mcp_tools,
            prose_files: self.runs_code().then_some(&self.prose),
        };
        let bytes = serde_json::to_vec(&approved).expect("strings and maps serialise");
        format!("sha256:{}", sha256_hex(&bytes))
    }

    /// Adds what the lock recorded of plugin `plugin`'s MCP servers (`tools`, with the
    /// manifests read from the store), so a changed tool description asks again.
    pub fn pin_tools(
        &mut self,
        plugin: &str,
        tools: &[(
            berth_lockfile_schema::LockedTools,
            Option<serde_json::Value>,
        )],
    ) {
        self.mcp_tools = super::tools::pins_of(plugin, tools);
    }

    /// Adds the packages `payloads` (a lock's) pins for plugin `plugin`, so that what a
    /// runner line starts is part of what is approved: a new version asks again.
    pub fn pin_packages(
        &mut self,
        plugin: &str,
        payloads: &[berth_lockfile_schema::LockedPayload],
    ) {
        for p in payloads.iter().filter(|p| p.plugin == plugin) {
            let key = match p.used_by {
                PayloadUse::McpServer => p.server.clone(),
                other => format!("{}:{}", other.as_str(), p.server),
            };
            self.packages.insert(
                key,
                PackagePin {
                    runner: p.runner.clone(),
                    spec: p.spec.clone(),
                    package: p.package.clone(),
                    version: p.version.clone(),
                    entry: p.entry.clone(),
                    hash: p.hash.to_sri(),
                },
            );
        }
    }

    /// Whether the plugin runs code, so that a script or server of it may read any of its
    /// files: a hook (monitors, status lines and `headersHelper` commands included), a
    /// stdio MCP server, an LSP server, an executable, a pinned package, a shell line in
    /// prose, or anything berth cannot model. Only a plugin that runs none of these keeps
    /// its prose outside its approval.
    pub fn runs_code(&self) -> bool {
        !self.hooks.is_empty()
            || self.mcp_servers.values().any(|s| s.command.is_some())
            || !self.lsp_servers.is_empty()
            || !self.executables.is_empty()
            || !self.packages.is_empty()
            || !self.unmodeled.is_empty()
            || !self.shell_lines().is_empty()
    }

    /// The spans a harness runs inside prose (`` !`…` ``, ```` ```! ````, `!{…}`), each
    /// with where it is (`` `commands/st.md` ``, `` command `st` ``), each line once.
    pub fn shell_lines(&self) -> Vec<(String, &str)> {
        let from_prose = self.prose_runs.iter().flat_map(|(path, parts)| {
            parts
                .iter()
                .filter(|p| berth_plugin::runs::in_prose::runs(p))
                .map(move |p| (format!("`{path}`"), p.as_str()))
        });
        let from_components = [
            ("skill", &self.skills),
            ("command", &self.commands),
            ("agent", &self.agents),
        ]
        .into_iter()
        .flat_map(|(kind, map)| {
            map.iter().flat_map(move |(name, c)| {
                c.shell
                    .iter()
                    .map(move |line| (format!("{kind} `{name}`"), line.as_str()))
            })
        });
        let mut out: Vec<(String, &str)> = Vec::new();
        for (place, line) in from_prose.chain(from_components) {
            if !out.iter().any(|(_, l)| *l == line) {
                out.push((place, line));
            }
        }
        out
    }

    /// What the plugin has that is not modelled and counts as `capability`.
    pub fn unmodeled(&self, capability: Capability) -> impl Iterator<Item = &Unmodeled> {
        self.unmodeled
            .iter()
            .filter(move |u| u.capability == capability)
    }

    /// Whether the plugin has what `capability` rules: the question each capability asks of
    /// a surface. Something not modelled that may grant it counts.
    pub fn has(&self, capability: Capability) -> bool {
        let modelled = match capability {
            // Any hook (monitors, status lines and `headersHelper` commands included), and
            // any shell line a harness runs from prose.
            Capability::Hooks => !self.hooks.is_empty() || !self.shell_lines().is_empty(),
            // Local processes started as servers: a stdio MCP server, any LSP server.
            Capability::McpStdio => {
                !self.lsp_servers.is_empty()
                    || self.mcp_servers.values().any(|s| s.command.is_some())
            }
            // MCP servers reached by URL.
            Capability::McpRemote => !self.remote_urls().is_empty(),
            // Exec-bit files, files under `bin/`, workflows, declared binaries.
            Capability::Executables => !self.executables.is_empty(),
        };
        modelled || self.unmodeled(capability).next().is_some()
    }

    /// What the plugin has of `capability`, for a message (`hooks: pre_tool_use `x` in
    /// `hooks/hooks.json``), then what it has that counts as it without being modelled.
    pub fn describe(&self, capability: Capability) -> String {
        let listed = match capability {
            Capability::Hooks => self.describe_hooks(),
            Capability::McpStdio => self.describe_stdio(),
            Capability::McpRemote => {
                let remote = self.remote_urls();
                (!remote.is_empty())
                    .then(|| format!("MCP servers at {}", quoted(remote.iter().copied())))
            }
            Capability::Executables => (!self.executables.is_empty()).then(|| {
                format!(
                    "executables {}",
                    quoted(self.executables.keys().map(String::as_str))
                )
            }),
        };
        // What counts as every capability is worded the same under each, so a refusal of
        // several capabilities for it reads as one.
        let (every, this): (Vec<&Unmodeled>, Vec<&Unmodeled>) = self
            .unmodeled(capability)
            .partition(|u| self.counted_as_every_capability(u));
        let say = |items: Vec<&Unmodeled>, counted: &str| {
            let items: Vec<String> = items
                .iter()
                .map(|u| format!("`{}`: {}", u.source, u.what))
                .collect();
            (!items.is_empty()).then(|| {
                format!(
                    "what berth cannot model, counted as {counted}: {}",
                    items.join("; ")
                )
            })
        };
        let this = say(this, capability.as_str());
        let every = say(every, "every capability");
        listed
            .into_iter()
            .chain(this)
            .chain(every)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Whether `u` is counted as every capability (what berth cannot tell the capability
    /// of, an unknown key among it).
    fn counted_as_every_capability(&self, u: &Unmodeled) -> bool {
        Capability::ALL.iter().all(|c| {
            self.unmodeled
                .iter()
                .any(|o| o.capability == *c && o.source == u.source && o.what == u.what)
        })
    }

    fn describe_hooks(&self) -> Option<String> {
        let commands: Vec<String> = self
            .hooks
            .iter()
            .map(|h| {
                let what = if h.kind == "command" {
                    format!("{} `{}`", h.event, h.command)
                } else {
                    format!("{} ({} hook)", h.event, h.kind)
                };
                if h.source.is_empty() {
                    what
                } else {
                    format!("{what} in `{}`", h.source)
                }
            })
            .collect();
        let shell: Vec<String> = self
            .shell_lines()
            .into_iter()
            .map(|(place, line)| format!("`{line}` in {place}"))
            .collect();
        let hooks = (!commands.is_empty()).then(|| format!("hooks: {}", commands.join(", ")));
        let shell = (!shell.is_empty()).then(|| {
            format!(
                "shell lines a harness runs from prose: {}",
                shell.join(", ")
            )
        });
        let both: Vec<String> = hooks.into_iter().chain(shell).collect();
        (!both.is_empty()).then(|| both.join("; "))
    }

    fn describe_stdio(&self) -> Option<String> {
        let mut parts: Vec<String> = self
            .mcp_servers
            .iter()
            .filter_map(|(n, s)| {
                s.command.as_ref().map(|c| {
                    let mut line = c.clone();
                    for a in &s.args {
                        line.push(' ');
                        line.push_str(a);
                    }
                    format!("MCP server `{n}` (`{line}`)")
                })
            })
            .collect();
        parts.extend(self.lsp_servers.keys().map(|n| format!("LSP server `{n}`")));
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// The URLs of the remote MCP servers, in server-name order.
    pub fn remote_urls(&self) -> Vec<&str> {
        self.mcp_servers
            .values()
            .filter_map(|s| s.url.as_deref())
            .collect()
    }
}

/// `` `a`, `b` ``.
fn quoted<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
