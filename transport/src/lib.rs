//! berth's transport and storage substrate: what every source kind uses to reach and keep
//! bytes, knowing nothing of plugins, manifests or locks.
//!
//! - [`url`]: a source URL with its `${VAR}` credentials expanded and kept out of every
//!   message; [`auth`]: when a password may be sent, `~/.netrc`;
//! - [`policy`]: the server's source policy (allowed hosts, no internal addresses) and the
//!   DNS resolver that enforces it at connect time;
//! - [`http`]: the one client configuration and what an upstream said, scrubbed;
//!   [`integrity`]: Subresource Integrity values (npm's `dist.integrity`);
//! - [`registries`]: which npm registry and Python index a package manager's own
//!   configuration names (`.npmrc`, `uv.toml`), and the credentials it would send;
//! - [`objects`]: object storage (a folder, S3); [`cache`]: Nix binary caches on it, with
//!   their signatures;
//! - [`extract`]: bounded, escape-proof archive extraction; [`tree_path`]: following a
//!   `repo_path` through a tree's symlinks without leaving it.
//!
//! It must not know what a plugin is: the source kinds above it (in `berth-resolver`) turn
//! these pieces into pins and store entries.

pub mod auth;
pub mod cache;
pub mod extract;
pub mod http;
pub mod integrity;
pub mod mcp_http;
pub mod objects;
pub mod policy;
pub mod registries;
pub mod tree_path;
pub mod url;
