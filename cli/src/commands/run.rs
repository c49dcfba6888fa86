//! `berth run`

use std::os::unix::process::CommandExt;
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
    let path = ctx.store.root().join(RUN_DIR).join(format!("{hex}.json"));
    if !path.exists() {
        fs_err::create_dir_all(path.parent().expect("run files have a parent"))?;
        write_atomically(&path, json.as_bytes())
            .with_context(|| format!("could not write `{}`", path.display()))?;
    }
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
