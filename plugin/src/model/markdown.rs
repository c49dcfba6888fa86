//! The documents in a markdown file's front matter: the hooks and MCP and LSP servers a
//! skill, command or agent (or any markdown file a harness may read) declares; and, for
//! the review, what the front matter holds that berth does not model.
//!
//! Front matter is read as the most lenient harness reads it (a leading byte-order mark
//! stripped, as Claude Code does, and CRLF line ends), so a mark cannot hide it.

use berth_lockfile_schema::harness_keys::{Place, grants_in_front_matter};

use super::{Body, Document, Kind, Reader};
use crate::error::PluginError;

/// Front-matter keys holding hooks or servers (the SDK's, Claude Code's and their aliases).
const FRONT_MATTER: [(&str, Kind); 7] = [
    ("hooks", Kind::Hooks),
    ("mcp_servers", Kind::Mcp),
    ("mcpServers", Kind::Mcp),
    ("mcp-servers", Kind::Mcp),
    ("mcp_config", Kind::Mcp),
    ("mcp_tools", Kind::Mcp),
    ("lspServers", Kind::Lsp),
];

/// What the review reads of one markdown file's front matter.
#[derive(Debug, Default)]
pub struct FrontMatter {
    /// The hooks and servers it declares.
    pub documents: Vec<Document>,
    /// Why it cannot be read, when it names what grants or runs.
    pub unreadable: Option<String>,
    /// Keys that grant or run which its text names and berth's reading of it does not
    /// find (a harness reading it another way may).
    pub unread: Vec<String>,
    /// Its keys the table of harness keys does not know for the file's kind (a skill's,
    /// command's or agent's front matter; none for other files).
    pub unknown: Vec<String>,
}

impl Reader<'_> {
    /// What the front matter of the markdown file `rel` (read as text, bad bytes
    /// replaced) holds for the review; `place` says whose front matter it is (a skill's,
    /// a command's, an agent's), when the table of harness keys knows its keys.
    pub fn front_matter(
        &mut self,
        rel: &str,
        place: Option<Place>,
    ) -> Result<FrontMatter, PluginError> {
        let mut out = FrontMatter::default();
        if !rel.to_ascii_lowercase().ends_with(".md") {
            return Ok(out);
        }
        let Some(markdown) = self.markdown(rel)? else {
            return Ok(out);
        };
        let text = markdown.lossy();
        let Some(block) = front_matter_block(text) else {
            return Ok(out);
        };
        let named = named_keys(block);
        let grants: Vec<&str> = named
            .iter()
            .map(String::as_str)
            .filter(|k| grants_in_front_matter(k))
            .collect();
        let lower = block.to_ascii_lowercase();
        let declares = ["hooks", "mcp", "lsp"].iter().any(|k| lower.contains(k));
        if place.is_none() && grants.is_empty() && !declares {
            return Ok(out);
        }
        let meta = match crate::frontmatter::parse_lenient(text) {
            Ok(document) => document.meta,
            Err(why) => {
                if !grants.is_empty() || declares {
                    out.unreadable = Some(why);
                }
                if let Some(place) = place {
                    out.unknown = named.into_iter().filter(|k| !place.knows(k)).collect();
                }
                return Ok(out);
            }
        };
        let parsed: Vec<String> = meta.keys().map(|k| plain(k)).collect();
        out.unread = grants
            .iter()
            .filter(|k| !parsed.contains(&plain(k)))
            .map(|k| (*k).to_owned())
            .collect();
        if let Some(place) = place {
            out.unknown = place
                .unknown(&meta)
                .into_iter()
                .map(str::to_owned)
                .collect();
        }
        out.documents = FRONT_MATTER
            .iter()
            .filter_map(|(key, kind)| {
                let value = meta.get(*key).filter(|v| !v.is_null())?;
                Some(Document {
                    kind: *kind,
                    origin: rel.to_owned(),
                    key: (*key).to_owned(),
                    source: rel.to_owned(),
                    body: Body::Inline(value.clone()),
                    keyed: true,
                })
            })
            .collect();
        Ok(out)
    }
}

/// `key` lower case, `-` and `_` removed: how keys are compared across spellings.
fn plain(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The front matter of a markdown text: between a first line of `---` and the next such
/// line (a byte-order mark and leading blank lines allowed), or a first line that opens a
/// JSON object. Where a harness ends it earlier (Claude Code ends it at the first `---`
/// anywhere), it reads less than this.
fn front_matter_block(text: &str) -> Option<&str> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
    if text.starts_with('{') {
        return Some(text);
    }
    let rest = text.strip_prefix("---")?;
    let end = rest.find("\n---").unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The keys a front-matter block names at its top level, read from its text rather than
/// parsed: a line that starts with a key (`key:`, `"key":`, `'key':`), or in a block that
/// is one flow mapping or JSON object, any `key:` after `{` or `,`. What a parser reads
/// is among these, however it treats the rest.
fn named_keys(block: &str) -> Vec<String> {
    let flow = block.trim_start().starts_with('{');
    let mut keys = Vec::new();
    for line in block.lines() {
        let line = line.trim_end_matches('\r');
        let starts: Vec<&str> = if flow {
            line.split(['{', ',']).map(str::trim_start).collect()
        } else {
            vec![line]
        };
        for start in starts {
            if let Some(key) = key_at_start(start)
                && !keys.contains(&key)
            {
                keys.push(key);
            }
        }
    }
    keys
}

/// The key `text` starts with (`key:`, `"key":`, `'key':`), if it starts with one.
fn key_at_start(text: &str) -> Option<String> {
    let (quote, rest) = match text.chars().next()? {
        q @ ('"' | '\'') => (Some(q), &text[1..]),
        _ => (None, text),
    };
    let end = match quote {
        Some(q) => rest.find(q)?,
        None => rest.find(':')?,
    };
    let key = rest[..end].trim_end();
    let after = rest[end..].trim_start_matches(quote.unwrap_or(' '));
    let valid = !key.is_empty()
        && !key.starts_with(['#', '-', ' ', '\t', '[', '{', '&', '*', '!', '|', '>'])
        && after.trim_start().starts_with(':');
    valid.then(|| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::named_keys;

    #[test]
    fn keys_are_read_from_the_text_of_a_block() {
        let block = "\nname: s\n\"hooks\": x\n  nested: y\n- item\n# hooks: no\n'allowed-tools': Bash\ndescription: a: b\n";
        assert_eq!(
            named_keys(block),
            ["name", "hooks", "allowed-tools", "description"]
        );
        assert_eq!(
            named_keys("{\"name\": \"x\", \"hooks\": {\"a\": 1},\n \"tools\": []}"),
            ["name", "hooks", "a", "tools"]
        );
    }
}
