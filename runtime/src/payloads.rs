//! Runner-started MCP servers (`npx -y pkg@^1`, `uvx pkg`) whose payload the lock pins:
//! the set's command rewritten to start the locked closure from the store, offline:
//! `node` on the stored package's script, or the script of an environment built offline
//! from the stored wheels. Which servers a lock's plugins start through a runner (for
//! `lock` to pin) is `runners.rs`'s.

use std::path::{Path, PathBuf};

use berth_lockfile_schema::runner::{Ecosystem, parse_runner};
use berth_lockfile_schema::{Lock, LockedPayload};
use berth_store::Store;
use sha2::{Digest, Sha256};

use crate::agent_env::{ENV_MARKER, UV_VERSION, build_env};
use crate::error::RuntimeError;
use crate::mcp::McpServer;

/// The locked payload a server runs, if its line still asks for what was locked.
fn payload_of<'a>(
    lock: &'a Lock,
    plugin: &str,
    server: &str,
    config: &McpServer,
) -> Option<(&'a LockedPayload, Vec<String>)> {
    let payload = lock
        .payloads
        .iter()
        .find(|p| p.plugin == plugin && p.server == server)?;
    let call = parse_runner(config.command.as_deref()?, &config.args).ok()??;
    (call.runner == payload.runner && call.spec == payload.spec).then_some((payload, call.args))
}

/// Rewrites every server (name, definition, plugin) whose runner line `lock` pinned to
/// start the stored closure instead; a closure missing from the store (or changed since
/// it was added) is refused as a plugin is.
pub(crate) fn rewrite(
    store: &Store,
    lock: &Lock,
    servers: &mut [(String, McpServer, String)],
) -> Result<(), RuntimeError> {
    if lock.payloads.is_empty() {
        return Ok(());
    }
    for (server, config, plugin) in servers {
        let Some((payload, args)) = payload_of(lock, plugin, server, config) else {
            continue;
        };
        let name = payload.entry_name();
        let Some(entry) = store.checked_lookup(&payload.hash, &name)? else {
            return Err(RuntimeError::NotSynced {
                plugin: format!("{plugin}`'s MCP server package `{}", payload.package),
                path: store.entry_path(&payload.hash, &name),
            });
        };
        match payload.ecosystem {
            Ecosystem::Npm => {
                let script = entry.path.join(&payload.entry);
                config.command = Some("node".to_owned());
                config.args = std::iter::once(script.display().to_string())
                    .chain(args)
                    .collect();
            }
            Ecosystem::Python => {
                let env = payload_env(store, payload, &entry.path)?;
                config.command = Some(env.join("bin").join(&payload.entry).display().to_string());
                config.args = args;
            }
        }
    }
    Ok(())
}

/// The environment of a Python payload, built offline from its stored wheels the first
/// time (keyed by the closure's hash, the Python version and uv's version).
fn payload_env(
    store: &Store,
    payload: &LockedPayload,
    entry: &Path,
) -> Result<PathBuf, RuntimeError> {
    let python_version = payload.python_version.as_deref().unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(b"berth-payload-env-v1\n");
    hasher.update(format!("python {python_version}\nuv {UV_VERSION}\n"));
    hasher.update(format!("closure {}\n", payload.hash.to_sri()));
    let mut key = berth_lockfile_schema::Sha256Hash::from_bytes(hasher.finalize().into()).to_hex();
    key.truncate(32);
    let path = store.env_path(&key, &payload.package);
    let ready = |path: &Path| {
        path.join(ENV_MARKER).is_file() && std::fs::canonicalize(path.join("bin/python")).is_ok()
    };
    if ready(&path) {
        return Ok(path);
    }
    let fail = |e: crate::agent_env::AgentError| RuntimeError::Invalid {
        plugin: payload.plugin.clone(),
        file: format!(
            "the environment of `{}` {}",
            payload.package, payload.version
        ),
        message: e.to_string(),
    };
    let _guard = store.lock(&format!("env-{key}"), || {})?;
    if ready(&path) {
        return Ok(path);
    }
    if path.exists() {
        let trash = store.stage()?;
        std::fs::rename(&path, trash.path().join("old"))?;
    }
    let marker = serde_json::json!({
        "package": payload.package,
        "version": payload.version,
        "closure": payload.hash.to_sri(),
    });
    let wheels = entry.join("wheels");
    build_env(
        store,
        &path,
        &payload.package,
        python_version,
        &payload.wheels,
        &|wheel| wheels.join(&wheel.file),
        marker,
    )
    .map_err(fail)?;
    Ok(path)
}
