//! berth's end-to-end tests, in one binary as uv's are (`tests/it/main.rs`): each module is
//! an area, driving the `berth` binary and the server through [`common::TestContext`], and
//! [`berth_snapshot!`] snapshots what a user sees. One binary links once, where one per
//! area linked the whole of berth dozens of times; its tests run side by side on threads,
//! so a test owns its folders, ports and processes and never changes its own process's
//! environment or current folder.
//!
//! Run one area with `cargo test -p berth --test it -- marketplace::` (docs/testing.md).

#[macro_use]
mod common;

mod agent;
mod archives;
mod attacks;
mod bad_input;
mod binary_cache;
mod ci_integrations;
mod commands;
mod concurrency;
mod conformance;
mod copilot_opencode;
mod corpus;
mod dependencies;
mod docs;
mod docs_commands;
mod edit;
mod faults;
mod first_hour;
mod fleet_bucket;
mod fleet_server;
mod git_names;
mod governance;
mod harness_forms;
mod import_clients;
mod import_gemini_copilot;
mod integrity;
mod layers;
mod lock_sync;
mod managed_settings;
mod marketplace;
mod marketplace_server;
mod materialize;
mod mcp_tools;
mod native_document;
mod npm_plugin_sources;
mod npm_provenance;
mod npm_signatures;
mod one_build;
mod openhands_agent_server;
mod openhands_import;
mod parallel;
mod payloads;
mod private;
mod python_package;
mod python_sdk;
mod release_age;
mod repo_path_links;
mod runtime;
mod s3_cache;
mod sandbox;
mod sdk_marketplaces;
mod server;
mod server_attacks;
mod signed_approvals;
mod signed_sources;
mod signed_sources_server;
mod signer_change;
mod signer_change_server;
mod skipped_files;
mod ssrf;
mod store;
mod verify_once;
