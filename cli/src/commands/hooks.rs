//! `berth hooks run`

use std::io::Read as _;

use anyhow::{Context as _, Result, bail};
use berth_runtime::hook_run::{HookEvent, run_hooks};
use berth_runtime::{BuildOptions, build_plugin_set};

use crate::args::HookRunArgs;
use crate::context::{Context, Exit};

pub fn run(ctx: &Context, args: &HookRunArgs) -> Result<()> {
    let lock = ctx.require_lock("")?;
    let options = BuildOptions {
        max_skills: Some(args.max_skills),
        // Read again by the policy's review.
        keep_models: ctx.policy_path.is_some(),
        ..BuildOptions::default()
    };
    let set = build_plugin_set(&ctx.store, &lock, &options)?;
    ctx.gate_runtime(&lock, &set)?;
    let fields = match &args.input {
        None => serde_json::Map::new(),
        Some(path) => {
            let text = if path.as_os_str() == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .context("could not read the event from stdin")?;
                text
            } else {
                fs_err::read_to_string(path)?
            };
            match serde_json::from_str(&text) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => bail!(
                    "`--input {}` must hold a JSON object of event fields such as `tool_input`",
                    path.display()
                ),
            }
        }
    };
    let project_dir = match &args.project_dir {
        Some(dir) => dir
            .canonicalize()
            .with_context(|| format!("`--project-dir {}`", dir.display()))?,
        None => std::env::current_dir().context("could not read the current folder")?,
    };
    let event = HookEvent {
        event: args.event,
        tool_name: args.tool_name.clone(),
        session_id: args.session_id.clone(),
        project_dir,
        fields,
    };
    let outcome = run_hooks(&set, &event);
    let mut text = serde_json::to_string_pretty(&outcome.report)?;
    text.push('\n');
    ctx.printer.json(&text);
    if outcome.blocked {
        return Err(Exit(2).into());
    }
    Ok(())
}
