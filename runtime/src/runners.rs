//! Which MCP servers, hook commands and LSP servers of a lock's plugins start through a
//! package runner (`npx`, `uvx`):
//! what `lock` pins as payloads. Read from the set as it would run, before `payloads.rs`
//! rewrites the pinned ones.

use berth_lockfile_schema::Lock;
use berth_lockfile_schema::runner::{PayloadUse, PayloadWant, parse_runner, plain_words};
use berth_store::Store;

use crate::set::{BuildOptions, build_plugin_set};

/// The MCP servers of `lock`'s plugins (all in `store`) that start through a package
/// runner, as the set would run them (overridden servers are not run, so not wanted), and
/// a warning for each runner line berth cannot pin, naming plugin, server and why.
pub fn wanted(store: &Store, lock: &Lock) -> Result<(Vec<PayloadWant>, Vec<String>), String> {
    let set = build_plugin_set(
        store,
        lock,
        &BuildOptions {
            max_skills: None,
            raw_commands: true,
            ..BuildOptions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let mut wants = Vec::new();
    let mut warnings = Vec::new();
    for (server, config, plugin) in &set.mcp_servers {
        let Some(command) = config.command.as_deref() else {
            continue;
        };
        match parse_runner(command, &config.args) {
            Ok(Some(call)) => wants.push(PayloadWant {
                plugin: plugin.clone(),
                server: server.clone(),
                used_by: PayloadUse::McpServer,
                call,
            }),
            Ok(None) => {}
            Err(why) => warnings.push(format!(
                "plugin `{plugin}`, MCP server `{server}`: left as written and fetched at every start: {why}"
            )),
        }
    }
    for (event, matchers) in &set.hooks {
        for (matcher, plugin) in matchers {
            for hook in matcher.hooks.iter().filter(|h| h.kind == "command") {
                // Only a plain list of words is read: a line a shell would expand is left.
                let Some(words) = plain_words(&hook.command) else {
                    continue;
                };
                match parse_runner(&words[0], &words[1..]) {
                    Ok(Some(call)) => {
                        let want = PayloadWant {
                            plugin: plugin.clone(),
                            server: (*event).to_owned(),
                            used_by: PayloadUse::Hook,
                            call,
                        };
                        if !wants.contains(&want) {
                            wants.push(want);
                        }
                    }
                    Ok(None) => {}
                    Err(why) => warnings.push(format!(
                        "plugin `{plugin}`, `{event}` hook: left as written and fetched at every run: {why}"
                    )),
                }
            }
        }
    }
    for (server, config, plugin) in &set.lsp_servers {
        let Some((command, args)) = crate::payloads::lsp_line(config) else {
            continue;
        };
        match parse_runner(command, &args) {
            Ok(Some(call)) => wants.push(PayloadWant {
                plugin: plugin.clone(),
                server: server.clone(),
                used_by: PayloadUse::LspServer,
                call,
            }),
            Ok(None) => {}
            Err(why) => warnings.push(format!(
                "plugin `{plugin}`, LSP server `{server}`: left as written and fetched at every start: {why}"
            )),
        }
    }
    Ok((wants, warnings))
}
