//! `berth audit`: hidden Unicode in every locked plugin, and the policy, in one report.

use anyhow::{Context as _, Result};
use berth_runtime::review::{Checked, Finding, Severity, finding_line};
use serde_json::{Value, json};

use crate::args::{AuditArgs, AuditFormat};
use crate::context::{Context, Exit, write_atomically};
use crate::governance::Scan;

pub fn run(ctx: &Context, args: &AuditArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let lock = ctx.require_lock("")?;
    let governance = ctx.governance()?;
    let checked = ctx.review(&governance, &lock, Scan::All)?;
    let report = match args.format {
        AuditFormat::Text => text(&checked),
        AuditFormat::Json => {
            serde_json::to_string_pretty(&json_report(&checked)).expect("serialisable") + "\n"
        }
        AuditFormat::Sarif => {
            serde_json::to_string_pretty(&sarif(&checked, &ctx.lock_label())).expect("serialisable")
                + "\n"
        }
    };
    match &args.output {
        Some(path) => write_atomically(path, report.as_bytes())
            .with_context(|| format!("could not write `{}`", path.display()))?,
        None => ctx.printer.data(report.trim_end()),
    }
    let critical = checked
        .findings
        .iter()
        .filter(|(_, f)| f.severity == Severity::Critical)
        .count();
    let warnings = checked.findings.len() - critical;
    let summary = format!(
        "{}: {critical} critical and {warnings} warning findings, {}{}",
        super::approve::count(lock.plugins.len(), "plugin"),
        super::approve::count(checked.violations.len(), "policy violation"),
        match &governance.policy_path {
            Some(p) => format!(" (policy `{}`)", p.display()),
            None => " (no policy file: berth's defaults)".to_owned(),
        }
    );
    if checked.violations.is_empty() {
        ctx.printer.status("Audited", &summary);
        Ok(())
    } else {
        ctx.printer.error(&summary);
        Err(Exit(1).into())
    }
}

fn text(checked: &Checked) -> String {
    let mut out = String::new();
    for (plugin, finding) in &checked.findings {
        out.push_str(&finding_line(plugin, finding));
        out.push('\n');
    }
    for violation in &checked.violations {
        out.push_str(&format!("refused: {violation}\n"));
    }
    out
}

fn finding_json(plugin: &str, f: &Finding) -> Value {
    json!({
        "plugin": plugin,
        "file": f.file,
        "line": f.line,
        "column": f.column,
        "code_point": f.code_point_label(),
        "severity": f.severity,
        "what": f.what,
    })
}

fn json_report(checked: &Checked) -> Value {
    json!({
        "version": 1,
        "findings": checked.findings.iter().map(|(p, f)| finding_json(p, f)).collect::<Vec<_>>(),
        "violations": checked.violations,
    })
}

/// The SARIF rule id of a finding.
fn rule_id(f: &Finding) -> &'static str {
    match f.what {
        w if w.contains("bidi") || w.contains("bidirectional") => "berth/hidden-unicode/bidi",
        w if w.contains("tag") => "berth/hidden-unicode/tag",
        _ => "berth/hidden-unicode/zero-width",
    }
}

/// SARIF 2.1.0: one run of berth, a result per finding (located at the plugin's file,
/// `PLUGIN/PATH`, line and column in code points) and per policy violation (located at the
/// lockfile).
fn sarif(checked: &Checked, lock_label: &str) -> Value {
    let rules = [
        (
            "berth/hidden-unicode/bidi",
            "A bidirectional control character: text can display in another order than it runs",
        ),
        (
            "berth/hidden-unicode/tag",
            "A Unicode tag character: invisible text a model can read",
        ),
        (
            "berth/hidden-unicode/zero-width",
            "A zero-width character a reviewer cannot see",
        ),
        (
            "berth/policy",
            "A plugin the project's policy does not let through",
        ),
    ];
    let mut results: Vec<Value> = checked
        .findings
        .iter()
        .map(|(plugin, f)| {
            json!({
                "ruleId": rule_id(f),
                "level": match f.severity { Severity::Critical => "error", Severity::Warning => "warning" },
                "message": { "text": format!("{} ({}) in plugin `{plugin}`", f.code_point_label(), f.what) },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": format!("{plugin}/{}", f.file), "uriBaseId": "BERTH_PLUGINS" },
                        "region": { "startLine": f.line, "startColumn": f.column }
                    }
                }],
                "properties": { "plugin": plugin, "file": f.file, "codePoint": f.code_point_label() }
            })
        })
        .collect();
    results.extend(checked.violations.iter().map(|v| {
        json!({
            "ruleId": "berth/policy",
            "level": "error",
            "message": { "text": v.to_string() },
            "locations": [{
                "physicalLocation": { "artifactLocation": { "uri": lock_label } }
            }],
            "properties": { "plugin": v.plugin, "capability": v.capability, "rule": v.rule, "policyFile": v.file }
        })
    }));
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "berth",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/berth-dev/berth",
                "rules": rules.iter().map(|(id, text)| json!({
                    "id": id,
                    "shortDescription": { "text": text },
                })).collect::<Vec<_>>()
            }},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {
                "BERTH_PLUGINS": { "description": { "text": "The locked plugins, each folder named after its plugin" } }
            },
            "results": results
        }]
    })
}
