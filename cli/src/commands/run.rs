//! `berth run`

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};
use berth_runtime::{BuildOptions, build_plugin_set};
use sha2::Digest as _;

use crate::args::RunArgs;
use crate::context::{Context, write_atomically};

use berth_store::RUN_DIR;

pub fn run(ctx: &Context, args: &RunArgs) -> Result<()> {
    let lock = ctx.runtime_lock(args.frozen)?;
    let options = BuildOptions {
        max_skills: Some(args.max_skills),
        // Read again by the policy's review.
        keep_models: ctx.policy_path.is_some(),
        ..BuildOptions::default()
    };
    let set = build_plugin_set(&ctx.store, &lock, &options)?;
    ctx.gate_runtime(&lock, &set)?;
    let json = set.to_json();
    let digest = sha2::Sha256::digest(json.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let path = run_file(ctx, &format!("{hex}.json"), &json)?;
    // Agent Plugins servers may keep state in `${PLUGIN_DATA}`: it must exist before they start.
    for plugin in &set.plugins {
        if set
            .mcp_servers
            .iter()
            .any(|(_, s, p)| s.literal && *p == plugin.locked.name)
        {
            fs_err::create_dir_all(&plugin.data_dir)?;
        }
    }
    let paths: Vec<String> = set
        .plugin_roots()
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let mut command = Command::new(program);
    command
        .args(rest)
        .env("BERTH_PLUGIN_SET", &path)
        .env("BERTH_PLUGIN_PATHS", paths.join(":"));
    if let Some(agent) = &lock.agent {
        super::agent::env(ctx, agent)?.activate(&mut command);
    }
    let error = command.exec();
    Err(error).with_context(|| format!("could not run `{}`", program.to_string_lossy()))
}

/// Where the set's document is written for the agent: the store's `run-v1/NAME`, or, in a
/// store this user cannot write (a shared cache, a container image's), the user's own
/// `$XDG_RUNTIME_DIR/berth/run-v1/NAME` (else `$XDG_CACHE_HOME`, else `~/.cache`). The
/// name is the document's digest, so a file already there is the same document.
fn run_file(ctx: &Context, name: &str, json: &str) -> Result<PathBuf> {
    let in_store = ctx.store.root().join(RUN_DIR).join(name);
    if in_store.exists() {
        return Ok(in_store);
    }
    let write = |path: &Path| -> std::io::Result<()> {
        fs_err::create_dir_all(path.parent().expect("run files have a parent"))?;
        write_atomically(path, json.as_bytes())
    };
    let error = match write(&in_store) {
        Ok(()) => return Ok(in_store),
        Err(e) if berth_store::is_read_only(&e) => e,
        Err(e) => {
            return Err(e).with_context(|| format!("could not write `{}`", in_store.display()));
        }
    };
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let Some(own) = env("XDG_RUNTIME_DIR")
        .or_else(|| env("XDG_CACHE_HOME"))
        .or_else(|| ctx.home_dir.as_ref().map(|h| h.join(".cache")))
    else {
        return Err(error).with_context(|| {
            format!("could not write `{}`, and neither `XDG_RUNTIME_DIR` nor `HOME` is set to write it elsewhere", in_store.display())
        });
    };
    let path = own.join("berth").join(RUN_DIR).join(name);
    if !path.exists() {
        write(&path).with_context(|| {
            format!(
                "could not write `{}` (the store `{}` is read-only: {error})",
                path.display(),
                ctx.store.root().display()
            )
        })?;
    }
    Ok(path)
}
