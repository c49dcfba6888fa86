//! berth's transport and storage substrate: what every source kind uses to reach and keep
//! bytes, knowing nothing of plugins, manifests or locks.
//!
//! - [`url`]: a source URL with its `${VAR}` credentials expanded and kept out of every
//!   message; [`auth`]: when a password may be sent, `~/.netrc`;
//! - [`policy`]: the server's source policy (allowed hosts, no internal addresses) and the
//!   DNS resolver that enforces it at connect time;
//! - [`http`]: the one client configuration and what an upstream said, scrubbed;
//!   [`integrity`]: Subresource Integrity values (npm's `dist.integrity`);
//!   [`npm_signature`]: npm registry signatures (ECDSA P-256) checked against a registry key;
//! - [`registries`]: which npm registry and Python index a package manager's own
//!   configuration names (`.npmrc`, `uv.toml`), and the credentials it would send;
//! - [`objects`]: object storage (a folder, S3); [`cache`]: Nix binary caches on it, with
//!   their signatures;
//! - [`extract`]: bounded, escape-proof archive extraction; [`tree_path`]: following a
//!   `repo_path` through a tree's symlinks without leaving it.
//!
//! It must not know what a plugin is: the source kinds above it (in `berth-resolver`) turn
//! these pieces into pins and store entries.
//!
//! # Where things are
//!
//! The substrate every source uses: a source URL and its credentials (`url.rs`, `auth.rs`),
//! which npm registry and Python index a package manager's own configuration names and with
//! which credentials (`registries/`: `npm.rs` the `.npmrc` layers and nerf-dart
//! credentials, `uv.rs` uv's variables and `uv.toml` files; pure functions of an
//! environment map and a file reader), the source policy and its DNS resolver
//! (`policy.rs`), the one HTTP client configuration and what an upstream said, scrubbed
//! (`http.rs`), Subresource Integrity (`integrity.rs`), npm registry signatures
//! (`npm_signature.rs`), object storage (`objects/`: a
//! folder, S3, read-only http), Nix binary caches and their signatures (`cache/`: `mod.rs`
//! push and substitute, `io_context.rs` naming the cache in every I/O error, `streams.rs`,
//! `sign.rs`, `pins.rs` the pins a pusher saw beside its NARs; every read of object storage
//! bounded by a connect and a first-byte time-out), bounded archive extraction
//! (`extract/`), following `repo_path` through a tree's links (`tree_path.rs`, generic over
//! the tree), one JSON-RPC conversation with a remote MCP server over its HTTP transport
//! (`mcp_http.rs`).
//!
//! It uses schema, store; it must not know what a plugin, a manifest or a lock is.

pub mod auth;
pub mod cache;
pub mod extract;
pub mod http;
pub mod integrity;
pub mod mcp_http;
pub mod npm_signature;
pub mod objects;
pub mod policy;
pub mod registries;
pub mod tree_path;
pub mod url;
