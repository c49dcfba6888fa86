//! The keys berth knows, at every place a supported harness reads a plugin: the table of
//! `harness_keys.toml`, read from the clients it names (`read_from`).
//!
//! The review is fail closed by construction: a key at one of these places that the table
//! lists neither as one berth models (reads what it runs or grants) nor as one it knows to
//! be inert makes the plugin carry what berth cannot model, which counts as the
//! capabilities it may grant. A client that adds a key (they do, every few weeks) is
//! therefore refused by a policy that denies, never let through, until the table is read
//! again from that client and the key is classified. The table is data, not code, so that
//! reading it again is an edit of one file (docs/governance.md says when).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;

/// A place a harness reads keys at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// The top level of a plugin manifest, in any layout (`.claude-plugin/plugin.json`,
    /// `.codex-plugin/`, `.cursor-plugin/`, `.plugin/`, an Agent Plugins `plugin.json`).
    Manifest,
    /// A manifest's `experimental` table.
    Experimental,
    /// An Agent Plugins manifest's `extensions["com.openai"]` (Codex).
    OpenaiExtension,
    /// An Agent Plugins manifest's `extensions["dev.openhands"]` (the OpenHands SDK).
    OpenhandsExtension,
    /// A Gemini CLI extension's manifest (`gemini-extension.json`), which Gemini CLI loads
    /// as the extension it is.
    GeminiExtension,
    /// The top level of a hooks document (`hooks/hooks.json`, a manifest's `hooks`), beside
    /// the events.
    HooksFile,
    /// A matcher group of an event's list.
    HookGroup,
    /// One hook, of any type.
    Hook,
    /// The top level of an MCP servers document (`.mcp.json`, a file a manifest names)
    /// beside its `mcpServers`.
    McpFile,
    /// One MCP server, of any transport.
    McpServer,
    /// The top level of an LSP servers document (`.lsp.json`) beside its `lspServers`.
    LspFile,
    /// One LSP server.
    LspServer,
    /// One Claude Code monitor.
    Monitor,
    /// A plugin's `settings.json` (or a manifest's `settings`).
    Settings,
    /// A plugin's entry in a marketplace catalog.
    MarketplaceEntry,
    /// A Gemini CLI extension's custom command (`commands/**.toml`).
    GeminiCommand,
    /// The front matter of a skill (`SKILL.md`).
    SkillFrontMatter,
    /// The front matter of a command (`commands/*.md`).
    CommandFrontMatter,
    /// The front matter of a sub-agent (`agents/*.md`).
    AgentFrontMatter,
}

impl Place {
    /// Every place, in the table's order.
    pub const ALL: [Place; 19] = [
        Place::Manifest,
        Place::Experimental,
        Place::OpenaiExtension,
        Place::OpenhandsExtension,
        Place::GeminiExtension,
        Place::HooksFile,
        Place::HookGroup,
        Place::Hook,
        Place::McpFile,
        Place::McpServer,
        Place::LspFile,
        Place::LspServer,
        Place::Monitor,
        Place::Settings,
        Place::MarketplaceEntry,
        Place::GeminiCommand,
        Place::SkillFrontMatter,
        Place::CommandFrontMatter,
        Place::AgentFrontMatter,
    ];

    /// The table's name for the place (`harness_keys.toml`).
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Manifest => "manifest",
            Place::Experimental => "experimental",
            Place::OpenaiExtension => "openai_extension",
            Place::OpenhandsExtension => "openhands_extension",
            Place::GeminiExtension => "gemini_extension",
            Place::HooksFile => "hooks_file",
            Place::HookGroup => "hook_group",
            Place::Hook => "hook",
            Place::McpFile => "mcp_file",
            Place::McpServer => "mcp_server",
            Place::LspFile => "lsp_file",
            Place::LspServer => "lsp_server",
            Place::Monitor => "monitor",
            Place::Settings => "settings",
            Place::MarketplaceEntry => "marketplace_entry",
            Place::GeminiCommand => "gemini_command",
            Place::SkillFrontMatter => "skill_front_matter",
            Place::CommandFrontMatter => "command_front_matter",
            Place::AgentFrontMatter => "agent_front_matter",
        }
    }

    /// The place in messages (`a plugin manifest`, `an MCP server`).
    pub fn noun(self) -> &'static str {
        match self {
            Place::Manifest => "a plugin manifest",
            Place::Experimental => "a manifest's `experimental` table",
            Place::OpenaiExtension => "a manifest's `extensions[\"com.openai\"]`",
            Place::OpenhandsExtension => "a manifest's `extensions[\"dev.openhands\"]`",
            Place::GeminiExtension => "a Gemini CLI extension's `gemini-extension.json`",
            Place::HooksFile => "a hooks file",
            Place::HookGroup => "a hook's matcher group",
            Place::Hook => "a hook",
            Place::McpFile => "an MCP servers file",
            Place::McpServer => "an MCP server",
            Place::LspFile => "an LSP servers file",
            Place::LspServer => "an LSP server",
            Place::Monitor => "a monitor",
            Place::Settings => "plugin settings",
            Place::MarketplaceEntry => "a marketplace entry",
            Place::GeminiCommand => "a Gemini CLI command",
            Place::SkillFrontMatter => "a skill's front matter",
            Place::CommandFrontMatter => "a command's front matter",
            Place::AgentFrontMatter => "an agent's front matter",
        }
    }

    /// Whether the table lists `key` here, as modelled or as inert.
    pub fn knows(self, key: &str) -> bool {
        let keys = &TABLE.places[&self];
        keys.modelled.contains(key) || keys.inert.contains(key)
    }

    /// Whether berth models `key` here: it reads what the key runs or grants.
    pub fn models(self, key: &str) -> bool {
        TABLE.places[&self].modelled.contains(key)
    }

    /// The keys of `object` the table does not know here, in the object's order.
    pub fn unknown(self, object: &serde_json::Map<String, serde_json::Value>) -> Vec<&str> {
        object
            .keys()
            .map(String::as_str)
            .filter(|k| !self.knows(k))
            .collect()
    }
}

/// Whether a front-matter key grants or runs: the table models it in the front matter
/// of a skill, a command or an agent, compared in lower case with `-` and `_` removed (so
/// every spelling of one counts).
pub fn grants_in_front_matter(key: &str) -> bool {
    TABLE.front_matter_grants.contains(&plain(key))
}

/// `key` lower case, `-` and `_` removed.
fn plain(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The clients the table was read from (`Claude Code 2.1.332`, ...), for messages.
pub fn read_from() -> &'static [String] {
    &TABLE.read_from
}

/// `Claude Code 2.1.332, Codex 0.171.0, ...`: the clients the table was read from.
pub fn read_from_line() -> String {
    TABLE.read_from.join(", ")
}

/// The keys of one place.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    modelled: BTreeSet<String>,
    inert: BTreeSet<String>,
}

/// The table as `harness_keys.toml` writes it (every table but `read_from` a place; an
/// unknown place's name fails the table's unit test).
#[derive(Debug, Deserialize)]
struct TableFile {
    read_from: Vec<String>,
    #[serde(flatten)]
    places: BTreeMap<String, Keys>,
}

/// The table, by place.
struct Table {
    read_from: Vec<String>,
    places: BTreeMap<Place, Keys>,
    /// The modelled keys of every front matter, in [`plain`] form.
    front_matter_grants: BTreeSet<String>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let file: TableFile =
        toml::from_str(include_str!("harness_keys.toml")).expect("harness_keys.toml is valid");
    let mut places = BTreeMap::new();
    for (name, keys) in file.places {
        let place = Place::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .unwrap_or_else(|| panic!("harness_keys.toml names no place `{name}`"));
        places.insert(place, keys);
    }
    assert_eq!(
        places.len(),
        Place::ALL.len(),
        "harness_keys.toml lists every place"
    );
    let front_matter_grants = [
        Place::SkillFrontMatter,
        Place::CommandFrontMatter,
        Place::AgentFrontMatter,
    ]
    .iter()
    .flat_map(|p| &places[p].modelled)
    .map(|k| plain(k))
    .collect();
    Table {
        read_from: file.read_from,
        places,
        front_matter_grants,
    }
});

#[cfg(test)]
mod tests {
    use super::{Place, read_from};

    #[test]
    fn the_table_reads_and_lists_every_place_once() {
        assert!(read_from().iter().any(|c| c.starts_with("Claude Code ")));
        for place in Place::ALL {
            let keys = &super::TABLE.places[&place];
            let both: Vec<&String> = keys.modelled.intersection(&keys.inert).collect();
            assert!(
                both.is_empty(),
                "{}: {both:?} both modelled and inert",
                place.as_str()
            );
        }
        assert!(Place::McpServer.models("headersHelper"));
        assert!(Place::McpFile.models("mcpServers") && Place::McpFile.knows("$schema"));
        assert!(!Place::LspFile.knows("mcpServers"));
        assert!(Place::Manifest.knows("name"));
        assert!(!Place::Manifest.knows("hookz"));
        assert!(!Place::SkillFrontMatter.knows("Allowed-Tools"));
        assert!(super::grants_in_front_matter("Allowed-Tools"));
        assert!(super::grants_in_front_matter("mcp_servers"));
        assert!(!super::grants_in_front_matter("description"));
    }
}
