//! Why a conversation's objects were refused when read, or not written: the typed errors
//! the data store's readers and writers return (inside an I/O error) and the server maps
//! to its answers.

use uuid::Uuid;

/// Why a conversation's objects were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The lock's digest is not the one its metadata records.
    LockNotRecorded,
    /// The metadata carries no HMAC, or one the record key does not make.
    NotAuthenticated,
    /// The metadata names another conversation.
    OtherId(Uuid),
}

/// A conversation's object that a server refused to use: it names the conversation and
/// the object (its key under the data folder or bucket, never a server path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Refused {
    pub id: Uuid,
    /// `conversations/<id>/plugins.lock` or `…/meta.json`.
    pub object: String,
    pub problem: Problem,
}

impl Refused {
    fn describe(&self) -> String {
        let Self {
            id,
            object,
            problem,
        } = self;
        let why = match problem {
            Problem::LockNotRecorded => {
                "is not the lock its `meta.json` records (its sha256 differs): someone other than a berth server wrote one of the two"
            }
            Problem::NotAuthenticated => {
                "is not authenticated by this server's record key (`--record-key`): it was written without it, or changed since"
            }
            Problem::OtherId(_) => "names another conversation",
        };
        let other = match problem {
            Problem::OtherId(named) => format!(" (`{named}`)"),
            _ => String::new(),
        };
        format!(
            "conversation `{id}`: `{object}` {why}{other}; restore the objects from a backup, or delete the conversation"
        )
    }

    /// As an I/O error of kind `InvalidData` (someone else's object), which the server
    /// answers 502 `data_store_object_refused` with this text.
    pub fn into_io(self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, self)
    }
}

/// A start whose `meta.json` would be larger than every server reads: refused (413)
/// before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the conversation's record would be {bytes} bytes, over the {limit} bytes every server reads; send less `metadata`"
)]
pub struct TooLarge {
    pub bytes: usize,
    pub limit: u64,
}
