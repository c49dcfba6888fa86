//! The lock's `[[tools]]` tables: what each MCP server of a plugin offered the model (its
//! tools, prompts and resources) when berth observed it, by the hash of the canonical
//! manifest kept in the store, or why it was not observed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::write_fields;
use crate::hash::Sha256Hash;

/// How a server's record came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsTrust {
    /// Observed by running the code the lock pins (stdio servers).
    Pinned,
    /// What a remote server answered when it was first asked: its code is not pinned, so
    /// the record says only what it said then (trust on first use).
    FirstUse,
}

/// One MCP server's observed manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedTools {
    /// The plugin whose server it is.
    pub plugin: String,
    /// The server's name.
    pub server: String,
    /// The digest of the code that was observed (the plugin's hash, the payload's, the
    /// command line): a record is current while it is the same. A remote server's is its
    /// URL's.
    pub code: Sha256Hash,
    /// NAR hash of the store entry holding the canonical manifest (`mcp-tools`), when
    /// observed.
    pub manifest: Option<Sha256Hash>,
    /// Why it was not observed, when it was not.
    pub unobserved: Option<String>,
    /// Pinned code, or a remote server's first answer.
    pub trust: ToolsTrust,
}

/// The name of a manifest's store entry.
pub const TOOLS_ENTRY_NAME: &str = "mcp-tools";

/// One `[[tools]]` entry as it is on disk. Field order is the writer's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockedToolsWire {
    /// The plugin whose MCP server it is.
    #[schemars(length(min = 1))]
    pub plugin: String,
    /// The server's name.
    #[schemars(length(min = 1))]
    pub server: String,
    /// SHA-256 (SRI) of the code observed: the plugin's hash, the payload's, the command
    /// line.
    pub code: String,
    /// NAR hash (SRI) of the store entry holding the canonical manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub manifest: Option<String>,
    /// Why the server was not observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub unobserved: Option<String>,
    /// `first-use` for a remote server's record; absent when the observed code is pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^first-use$"))]
    pub trust: Option<String>,
}

impl TryFrom<LockedToolsWire> for LockedTools {
    type Error = String;

    fn try_from(w: LockedToolsWire) -> Result<Self, String> {
        let hash = |what: &str, text: &str| {
            Sha256Hash::from_sri(text).map_err(|e| format!("`{what}` is not a hash: {e}"))
        };
        let code = hash("code", &w.code)?;
        let manifest = w
            .manifest
            .as_deref()
            .map(|m| hash("manifest", m))
            .transpose()?;
        if manifest.is_some() == w.unobserved.is_some() {
            return Err("a record has either a `manifest` or why it is `unobserved`".into());
        }
        let trust = match w.trust.as_deref() {
            None => ToolsTrust::Pinned,
            Some("first-use") => ToolsTrust::FirstUse,
            Some(other) => return Err(format!("`trust = \"{other}\"` is not `first-use`")),
        };
        Ok(Self {
            plugin: w.plugin,
            server: w.server,
            code,
            manifest,
            unobserved: w.unobserved,
            trust,
        })
    }
}

impl From<&LockedTools> for LockedToolsWire {
    fn from(t: &LockedTools) -> Self {
        Self {
            plugin: t.plugin.clone(),
            server: t.server.clone(),
            code: t.code.to_sri(),
            manifest: t.manifest.as_ref().map(Sha256Hash::to_sri),
            unobserved: t.unobserved.clone(),
            trust: match t.trust {
                ToolsTrust::Pinned => None,
                ToolsTrust::FirstUse => Some("first-use".to_owned()),
            },
        }
    }
}

impl LockedTools {
    /// The canonical `[[tools]]` text (with its leading blank line).
    pub(crate) fn write_toml(&self, out: &mut String) {
        let w = LockedToolsWire::from(self);
        out.push_str("\n[[tools]]\n");
        write_fields(
            out,
            &[
                ("plugin", Some(&w.plugin)),
                ("server", Some(&w.server)),
                ("code", Some(&w.code)),
                ("manifest", w.manifest.as_ref()),
                ("unobserved", w.unobserved.as_ref()),
                ("trust", w.trust.as_ref()),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_lock;

    const LOCK: &str = "version = 1\n\n\
        [[tools]]\nplugin = \"tools\"\nserver = \"fake\"\n\
        code = \"sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\"\n\
        manifest = \"sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\"\n\
        \n[[tools]]\nplugin = \"tools\"\nserver = \"remote\"\n\
        code = \"sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\"\n\
        unobserved = \"it needs a secret\"\ntrust = \"first-use\"\n";

    #[test]
    fn tools_records_round_trip_through_the_canonical_writer() {
        let lock = parse_lock("plugins.lock", LOCK).expect("parses");
        assert_eq!(lock.tools.len(), 2);
        assert_eq!(lock.to_toml(), format!("{}{LOCK}", crate::LOCK_HEADER));
    }

    #[test]
    fn a_record_with_both_or_neither_is_refused() {
        let both = LOCK.replace(
            "unobserved = \"it needs a secret\"",
            "unobserved = \"x\"\nmanifest = \"sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\"",
        );
        assert!(parse_lock("plugins.lock", &both).is_err());
    }
}
