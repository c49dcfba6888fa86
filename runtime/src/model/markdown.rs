//! The documents in a markdown file's front matter: the hooks and MCP and LSP servers a
//! skill, command or agent (or any markdown file a harness may read) declares.

use super::{Body, Document, Kind, Reader};
use crate::error::RuntimeError;

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

impl Reader<'_> {
    /// The hooks and servers in the front matter of the markdown file `rel` (read as
    /// text, bad bytes replaced), or why a front matter that names them cannot be read.
    pub fn front_matter(
        &mut self,
        rel: &str,
    ) -> Result<Result<Vec<Document>, String>, RuntimeError> {
        if !rel.to_ascii_lowercase().ends_with(".md") {
            return Ok(Ok(Vec::new()));
        }
        let Some(markdown) = self.markdown(rel)? else {
            return Ok(Ok(Vec::new()));
        };
        let text = markdown.lossy();
        let Some(block) = front_matter_block(text) else {
            return Ok(Ok(Vec::new()));
        };
        let lower = block.to_ascii_lowercase();
        if !["hooks", "mcp", "lsp"].iter().any(|k| lower.contains(k)) {
            return Ok(Ok(Vec::new()));
        }
        let meta = match crate::frontmatter::parse(text) {
            Ok(document) => document.meta,
            Err(why) => return Ok(Err(why)),
        };
        let documents = FRONT_MATTER
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
        Ok(Ok(documents))
    }
}

/// The front matter of a markdown text: between a first line of `---` and the next such
/// line (a byte-order mark and leading blank lines allowed), or a first line that opens a
/// JSON object.
fn front_matter_block(text: &str) -> Option<&str> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
    if text.starts_with('{') {
        return Some(text);
    }
    let rest = text.strip_prefix("---")?;
    let end = rest.find("\n---").unwrap_or(rest.len());
    Some(&rest[..end])
}
