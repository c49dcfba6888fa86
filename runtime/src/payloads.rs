//! Runner-started MCP servers (`npx -y pkg@^1`, `uvx pkg`) whose payload the lock pins:
//! the set's command rewritten to start the locked closure from the store, offline:
//! `node` on the stored package's script, or the script of an environment built offline
//! from the stored wheels. Which servers a lock's plugins start through a runner (for
//! `lock` to pin) is `runners.rs`'s.

use std::path::{Path, PathBuf};

use berth_lockfile_schema::runner::{Ecosystem, PayloadUse, parse_runner, plain_words};
use berth_lockfile_schema::{Lock, LockedPayload};
use berth_store::Store;

use crate::agent_env::{UV_VERSION, build_env, build_locked, digest_key, is_ready};
use berth_plugin::error::PluginError;
use berth_plugin::hooks::HookMatcher;
use berth_plugin::mcp::McpServer;

/// The locked payload a runner line of `plugin` runs (an MCP server named `server`, or a
/// hook of event `server`), with the line's own arguments, if the line still asks for what
/// was locked.
fn payload_of<'a>(
    lock: &'a Lock,
    plugin: &str,
    server: &str,
    used_by: PayloadUse,
    command: &str,
    args: &[String],
) -> Option<(&'a LockedPayload, Vec<String>)> {
    let call = parse_runner(command, args).ok()??;
    let payload = lock.payloads.iter().find(|p| {
        p.plugin == plugin
            && p.server == server
            && p.used_by == used_by
            && p.runner == call.runner
            && p.spec == call.spec
    })?;
    Some((payload, call.args))
}

/// The program and arguments that start `payload`'s stored closure with `args`; a
/// closure missing from the store (or changed since it was added) is refused as a plugin
/// is.
fn pinned_command(
    store: &Store,
    payload: &LockedPayload,
    args: Vec<String>,
) -> Result<(String, Vec<String>), PluginError> {
    let name = payload.entry_name();
    let Some(entry) = store.checked_lookup(&payload.hash, &name)? else {
        return Err(PluginError::NotSynced {
            plugin: format!("{}`'s package `{}", payload.plugin, payload.package),
            path: store.entry_path(&payload.hash, &name),
        });
    };
    Ok(match payload.ecosystem {
        Ecosystem::Npm => {
            let script = entry.path.join(&payload.entry).display().to_string();
            (
                "node".to_owned(),
                std::iter::once(script).chain(args).collect(),
            )
        }
        Ecosystem::Python => {
            let env = payload_env(store, payload, &entry.path)?;
            let script = env.join("bin").join(&payload.entry).display().to_string();
            (script, args)
        }
    })
}

/// A word as a POSIX shell reads it back unchanged.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Rewrites every MCP server (name, definition, plugin), hook command and LSP server
/// whose runner line `lock` pinned to start the stored closure instead.
pub(crate) fn rewrite(
    store: &Store,
    lock: &Lock,
    servers: &mut [(String, McpServer, String)],
    hooks: &mut [(&'static str, Vec<(HookMatcher, String)>)],
    lsp_servers: &mut [(String, serde_json::Value, String)],
) -> Result<(), PluginError> {
    if lock.payloads.is_empty() {
        return Ok(());
    }
    for (server, config, plugin) in servers {
        let Some(command) = config.command.clone() else {
            continue;
        };
        let Some((payload, args)) = payload_of(
            lock,
            plugin,
            server,
            PayloadUse::McpServer,
            &command,
            &config.args,
        ) else {
            continue;
        };
        let (program, args) = pinned_command(store, payload, args)?;
        config.command = Some(program);
        config.args = args;
    }
    for (event, matchers) in hooks {
        for (matcher, plugin) in matchers {
            for hook in matcher.hooks.iter_mut().filter(|h| h.kind == "command") {
                let Some(words) = plain_words(&hook.command) else {
                    continue;
                };
                let Some((payload, args)) = payload_of(
                    lock,
                    plugin,
                    event,
                    PayloadUse::Hook,
                    &words[0],
                    &words[1..],
                ) else {
                    continue;
                };
                let (program, args) = pinned_command(store, payload, args)?;
                hook.command = std::iter::once(program)
                    .chain(args)
                    .map(|w| shell_word(&w))
                    .collect::<Vec<_>>()
                    .join(" ");
            }
        }
    }
    for (server, config, plugin) in lsp_servers {
        let Some((command, args)) = lsp_line(config) else {
            continue;
        };
        let command = command.to_owned();
        let Some((payload, args)) =
            payload_of(lock, plugin, server, PayloadUse::LspServer, &command, &args)
        else {
            continue;
        };
        let (program, args) = pinned_command(store, payload, args)?;
        config["command"] = serde_json::json!(program);
        config["args"] = serde_json::json!(args);
    }
    Ok(())
}

/// The environment of a Python payload, built offline from its stored wheels the first
/// time (keyed by the closure's hash, the Python version and uv's version).
fn payload_env(
    store: &Store,
    payload: &LockedPayload,
    entry: &Path,
) -> Result<PathBuf, PluginError> {
    let python_version = payload.python_version.as_deref().unwrap_or_default();
    let key = digest_key(&[
        "berth-payload-env-v1".to_owned(),
        format!("python {python_version}"),
        format!("uv {UV_VERSION}"),
        format!("closure {}", payload.hash.to_sri()),
    ]);
    let path = store.env_path(&key, &payload.package);
    if is_ready(&path) {
        return Ok(path);
    }
    let fail = |e: crate::agent_env::AgentEnvError| PluginError::Invalid {
        plugin: payload.plugin.clone(),
        file: format!(
            "the environment of `{}` {}",
            payload.package, payload.version
        ),
        message: e.to_string(),
    };
    let marker = serde_json::json!({
        "package": payload.package,
        "version": payload.version,
        "closure": payload.hash.to_sri(),
    });
    let wheels = entry.join("wheels");
    build_locked(store, &key, &path, || {
        build_env(
            store,
            &path,
            &payload.package,
            python_version,
            &payload.wheels,
            &|wheel| wheels.join(&wheel.file),
            marker,
        )
    })
    .map_err(fail)?;
    Ok(path)
}

/// An LSP server's `command` and its string `args`, as its definition gives them.
pub(crate) fn lsp_line(config: &serde_json::Value) -> Option<(&str, Vec<String>)> {
    let command = config.get("command")?.as_str()?;
    let args = match config.get("args") {
        None => Vec::new(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?,
        Some(_) => return None,
    };
    Some((command, args))
}
