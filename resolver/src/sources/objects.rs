//! The git objects a locked commit can be signed in, handed to a front end that checks
//! signatures (`[sources] require_signed`): the resolver reads them and judges nothing.

/// Where a pinned commit's objects are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectsFrom {
    /// The git cache (a `file://` repository read in place), fetching what it lacks when the
    /// run may use the network: what `lock` checks.
    Cache,
    /// A throw-away repository fetched afresh, trusting no cache: what `verify` checks.
    Fresh,
}

/// A locked commit's objects, byte for byte as git stores them (without the `commit
/// SIZE\0` header), each hashing to its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitObjects {
    /// The commit's id, in hex.
    pub rev: String,
    /// The commit object.
    pub commit: Vec<u8>,
    /// The annotated tag the plugin's ref names, when its ref is a tag and the remote's tag
    /// of that name is an annotated tag of this commit.
    pub tag: Option<TagObject>,
}

/// An annotated tag object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagObject {
    /// The tag's name, as the plugin's ref names it (`v1.0`).
    pub name: String,
    /// The tag object.
    pub object: Vec<u8>,
}
