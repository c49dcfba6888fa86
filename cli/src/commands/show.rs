//! `berth plugins show`

use std::fmt::Write as _;

use anyhow::Result;
use berth_runtime::{BuildOptions, PluginSet, build_plugin_set};

use crate::args::ShowArgs;
use crate::context::Context;

pub fn run(ctx: &Context, args: &ShowArgs) -> Result<()> {
    let lock = ctx.lock_to_read(args.locked)?;
    let options = BuildOptions {
        max_skills: Some(args.max_skills),
        // Read again by the policy's review, and by what other harnesses run (listed in
        // the readable form, `review` in the JSON, unless `--no-review`).
        keep_models: !args.no_review || ctx.policy_path.is_some(),
        ..BuildOptions::default()
    };
    let set = build_plugin_set(&ctx.store, &lock, &options)?;
    ctx.gate_runtime(&lock, &set)?;
    if args.check_tools {
        crate::tools::recheck(ctx, &lock, true)?;
    }
    if args.output.json() {
        ctx.printer.json(&set_json(&set, !args.no_review)?);
    } else {
        let mut text = summary(&set);
        if !args.no_review {
            beyond(&mut text, &berth_review::beyond_set(&set)?);
        }
        if let Some(agent) = &lock.agent {
            let _ = writeln!(
                text,
                "\nAgent package\n  {} {}  {}  ({} wheels, Python {}; `berth agent exec` runs it)",
                agent.package,
                agent.version,
                agent.entry_point,
                agent.wheels.len(),
                agent.python_version
            );
        }
        ctx.printer.data(&text);
    }
    Ok(())
}

/// The set's JSON, with `review` when `review`: what any harness would run of each
/// plugin, as the review reads it (docs/spec.md, section 5).
fn set_json(set: &PluginSet, review: bool) -> Result<String> {
    let mut json = set.to_json_value();
    if review {
        let review = berth_review::reviewed_set(set)?;
        if let serde_json::Value::Object(map) = &mut json {
            map.insert("review".to_owned(), serde_json::to_value(review)?);
        }
    }
    let mut text = serde_json::to_string_pretty(&json)?;
    text.push('\n');
    Ok(text)
}

/// The readable form: plugins with their pins, then skills, MCP servers, hooks, agents.
fn summary(set: &PluginSet) -> String {
    let mut out = String::new();
    plugins_and_skills(set, &mut out);
    servers_and_hooks(set, &mut out);
    if !set.agents.is_empty() {
        let _ = writeln!(out, "\nAgents ({})", set.agents.len());
        let rows: Vec<[String; 4]> = set
            .agents
            .iter()
            .map(|(a, plugin)| {
                [
                    a.name.clone(),
                    plugin.clone(),
                    a.model.clone(),
                    first_line(&a.description),
                ]
            })
            .collect();
        super::table(&mut out, &rows, "  ");
    }
    if !set.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings ({})", set.warnings.len());
        for warning in &set.warnings {
            let _ = writeln!(out, "  {warning}");
        }
    }
    out
}

/// The plugins with their pins, then the skills.
fn plugins_and_skills(set: &PluginSet, out: &mut String) {
    let _ = writeln!(out, "Plugins ({})", set.plugins.len());
    let rows: Vec<[String; 4]> = set
        .plugins
        .iter()
        .map(|p| {
            [
                p.locked.name.clone(),
                p.manifest.version.clone(),
                super::short_pin(&p.locked),
                p.locked.source.clone(),
            ]
        })
        .collect();
    super::table(out, &rows, "  ");
    let _ = writeln!(out, "\nSkills ({})", set.skills.len());
    let rows: Vec<[String; 4]> = set
        .skills
        .iter()
        .map(|(s, plugin)| {
            let activation = match s.trigger {
                berth_plugin::skills::TriggerKind::Always => "always".to_owned(),
                berth_plugin::skills::TriggerKind::Path => {
                    format!("on {}", s.paths.clone().unwrap_or_default().join(", "))
                }
                _ => s.triggers.join(", "),
            };
            [
                s.name.clone(),
                plugin.clone(),
                activation,
                first_line(s.description.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    super::table(out, &rows, "  ");
}

/// The MCP servers, then the hooks.
fn servers_and_hooks(set: &PluginSet, out: &mut String) {
    let _ = writeln!(out, "\nMCP servers ({})", set.mcp_servers.len());
    let rows: Vec<[String; 4]> = set
        .mcp_servers
        .iter()
        .map(|(name, s, plugin)| {
            let target = match (&s.command, &s.url) {
                (Some(command), _) => std::iter::once(command.clone())
                    .chain(s.args.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" "),
                (None, Some(url)) => url.clone(),
                (None, None) => String::new(),
            };
            let transport = if s.enabled {
                s.transport.clone()
            } else {
                format!("{} (disabled)", s.transport)
            };
            [name.clone(), plugin.clone(), transport, target]
        })
        .collect();
    super::table(out, &rows, "  ");
    // One row per hook, and the count is of the rows: a matcher may hold several hooks, or
    // none once its invalid ones are dropped.
    let rows: Vec<[String; 4]> = set
        .hooks
        .iter()
        .flat_map(|(event, matchers)| {
            matchers.iter().flat_map(move |(m, plugin)| {
                m.hooks.iter().map(move |h| {
                    let what = if h.kind == "command" {
                        h.command.clone()
                    } else {
                        format!("({} hook)", h.kind)
                    };
                    [(*event).to_owned(), m.matcher.clone(), plugin.clone(), what]
                })
            })
        })
        .collect();
    let _ = writeln!(out, "\nHooks ({})", rows.len());
    super::table(out, &rows, "  ");
}

/// What other harnesses would run that the set leaves out.
fn beyond(out: &mut String, beyond: &[berth_review::Beyond]) {
    if beyond.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nRun by other harnesses only ({}): Claude Code, Codex, Gemini CLI or GitHub Copilot CLI load these, OpenHands does not; the policy and approvals cover them",
        beyond.len()
    );
    let rows: Vec<[String; 4]> = beyond
        .iter()
        .map(|b| {
            let at = if b.source.is_empty() || b.source == b.name {
                String::new()
            } else {
                format!(" ({})", b.source)
            };
            [
                b.plugin.clone(),
                b.kind.clone(),
                b.name.clone(),
                format!("{}{at}", b.what),
            ]
        })
        .collect();
    super::table(out, &rows, "  ");
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > 72 {
        format!("{}…", line.chars().take(71).collect::<String>())
    } else {
        line.to_owned()
    }
}
