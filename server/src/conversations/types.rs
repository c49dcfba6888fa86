//! What a conversation is made of, as the index keeps it: its metadata and its shared,
//! parsed lock; and where conversations are kept (`--data-dir`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use berth_lockfile_schema::Lock;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::api::ConversationSummary;

/// Where a server keeps its conversations (`--data-dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataDir {
    /// A local folder only this server uses.
    Folder(PathBuf),
    /// Object storage a fleet shares: `file:///path` or `s3://bucket/prefix`.
    Objects(String),
}

impl DataDir {
    /// `file://…` and `s3://…` are object storage; anything else is a folder.
    pub fn parse(text: &str) -> Self {
        if text.starts_with("file://") || text.starts_with("s3://") {
            Self::Objects(text.to_owned())
        } else {
            Self::Folder(PathBuf::from(text))
        }
    }

    /// The folder, when it is one.
    pub fn folder(&self) -> Option<&Path> {
        match self {
            Self::Folder(dir) => Some(dir),
            Self::Objects(_) => None,
        }
    }
}

impl std::fmt::Display for DataDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Folder(dir) => write!(f, "{}", dir.display()),
            Self::Objects(url) => f.write_str(url),
        }
    }
}

/// `meta.json`: written compact, read without building a tree of its metadata.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub id: Uuid,
    pub created_at: u64,
    /// What the client sent as `metadata`, as JSON text.
    #[serde(default = "null_value")]
    pub metadata: Box<RawValue>,
    /// The digest of the lock text the conversation was created with (`sha256-…`);
    /// absent in records an earlier berth wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    /// With the fleet's record key, the HMAC of the record without this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

fn null_value() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("`null` is JSON")
}

impl Meta {
    /// A new conversation's: a time-ordered id (listing in id order lists oldest first),
    /// bound to no lock yet ([`Meta::bind`]).
    pub fn new(metadata: Box<RawValue>) -> Self {
        Self {
            id: Uuid::now_v7(),
            created_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            metadata,
            lock: None,
            mac: None,
        }
    }
}

/// A lock and its exact text.
#[derive(Debug)]
pub struct LockedText {
    pub lock: Lock,
    pub text: String,
    /// The text's digest, as `meta.json` records it, worked out once.
    pub sha256: std::sync::OnceLock<String>,
    /// What every answer about this lock repeats (the `POST` answer's `lockfile`,
    /// `plugins` and `agent`), serialised once by the first that needs it.
    pub answer_fields: std::sync::OnceLock<AnswerFields>,
    /// Where its plugins' store entries are, worked out once.
    pub entry_paths: std::sync::OnceLock<Vec<PathBuf>>,
}

impl LockedText {
    pub fn new(lock: Lock, text: String) -> Self {
        Self {
            lock,
            text,
            sha256: std::sync::OnceLock::new(),
            answer_fields: std::sync::OnceLock::new(),
            entry_paths: std::sync::OnceLock::new(),
        }
    }
}

impl LockedText {
    /// The digest `meta.json` records of this lock's text.
    pub fn digest(&self) -> &str {
        self.sha256
            .get_or_init(|| super::record::lock_digest(&self.text))
    }
}

/// The fields every `POST` answer about one lock repeats, as JSON.
#[derive(Debug)]
pub struct AnswerFields {
    /// `lockfile`: the lock's text.
    pub lockfile: Box<RawValue>,
    /// `plugins`: the locked plugins.
    pub plugins: Box<RawValue>,
    /// `agent`: the locked agent package, when the lock has one.
    pub agent: Option<Box<RawValue>>,
}

/// A plugin set as JSON: the runtime's exact text, checked once when it is made.
#[derive(Debug)]
pub struct SetJson(Box<RawValue>);

impl SetJson {
    /// The set's JSON text, as [`berth_runtime::PluginSet::to_json`] writes it.
    pub fn new(text: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text).map(Self)
    }

    /// The set as a JSON value inside another document.
    pub fn raw(&self) -> &RawValue {
        &self.0
    }

    /// The runtime's text: the value and its one trailing newline.
    pub fn text(&self) -> String {
        let json = self.0.get();
        let mut text = String::with_capacity(json.len() + 1);
        text.push_str(json);
        text.push('\n');
        text
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.0.get().len() + 1
    }
}

/// What the index keeps of a conversation: enough to answer every read but the metadata
/// without touching the disk or the bucket.
#[derive(Debug, Clone)]
pub struct Indexed {
    pub summary: ConversationSummary,
    pub lock: Arc<LockedText>,
}

/// One conversation as read back.
#[derive(Debug)]
pub struct Stored {
    pub meta: Meta,
    pub lock: Arc<LockedText>,
}

/// One page of the conversations, in id order (ids are UUIDv7: creation order).
#[derive(Debug)]
pub struct Page {
    pub conversations: Vec<ConversationSummary>,
    /// The id to pass as `cursor` for the next page; `None` on the last one.
    pub next_cursor: Option<Uuid>,
}
