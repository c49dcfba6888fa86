//! `berth audit`: hidden Unicode in every locked plugin, and the policy, in one report.

use anyhow::{Context as _, Result};
use berth_resolver::{PackageSignature, SignatureState, npm_signatures};
use berth_review::{
    Checked, Class, Finding, Place, Severity, Violation, escape_for_display, escape_json,
    finding_line,
};
use serde_json::{Value, json};

use crate::args::{AuditArgs, AuditFormat};
use crate::context::{Context, Exit, write_atomically};
use crate::governance::Scan;

pub fn run(ctx: &Context, args: &AuditArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let lock = ctx.require_lock("")?;
    let governance = ctx.governance()?;
    let mut checked = ctx.review(&governance, &lock, Scan::All)?;
    // Every npm package's registry signature, checked offline against the lock's keys.
    let signatures = npm_signatures(&lock);
    let policy = governance.policy.require_registry_signatures();
    checked.violations.extend(
        signatures
            .iter()
            .filter_map(|s| signature_violation(s, policy)),
    );
    let unsigned: Vec<&PackageSignature<'_>> = signatures
        .iter()
        .filter(|s| {
            !matches!(
                s.state,
                SignatureState::Verified | SignatureState::Bad { .. }
            )
        })
        .collect();
    // Every form is escaped, written to a file or not: a report is read by people (text)
    // or shown by tools that render it (SARIF in a code-scanning page).
    let format = if args.json {
        AuditFormat::Json
    } else {
        args.format
    };
    let report = match format {
        AuditFormat::Text => escape_for_display(&text(&checked, &lock, &unsigned)).into_owned(),
        AuditFormat::Json => escape_json(
            &(serde_json::to_string_pretty(&json_report(&checked, &lock, &unsigned))
                .expect("serialisable")
                + "\n"),
        )
        .into_owned(),
        AuditFormat::Sarif => escape_json(
            &(serde_json::to_string_pretty(&sarif(&checked, &ctx.lock_label()))
                .expect("serialisable")
                + "\n"),
        )
        .into_owned(),
    };
    match &args.output {
        // A report's folder is made as it is written (`-o reports/berth.sarif` in CI).
        Some(path) => path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| write_atomically(path, report.as_bytes()))
            .with_context(|| format!("could not write `{}`", path.display()))?,
        None => ctx.printer.data(&report),
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

/// What refuses a package's signature, as a policy violation: a signature that does not
/// verify always, one the registry did not make with a key the lock holds under `policy`
/// (the file that sets `require_registry_signatures = true`).
fn signature_violation(s: &PackageSignature<'_>, policy: Option<&str>) -> Option<Violation> {
    let (rule, file) = match (&s.state, policy) {
        (SignatureState::Verified, _) => return None,
        (SignatureState::Bad { .. }, _) => ("registry signatures verify", "berth's defaults"),
        (_, Some(file)) => ("require_registry_signatures = true", file),
        (_, None) => return None,
    };
    Some(Violation {
        plugin: s.plugin.to_owned(),
        capability: "registry_signature".to_owned(),
        rule: rule.to_owned(),
        file: file.to_owned(),
        detail: format!(
            "{}: {}; run `berth plugins lock --upgrade-plugin {}` to lock it again from its registry",
            package_line(s),
            s.state.describe(),
            s.plugin
        ),
        needs_approval: false,
    })
}

/// ``npm package `fake-dep@1.0.0` in the closure of `fake-mcp` 1.1.0 (MCP server `fake` of
/// plugin `tools`)``, or ``npm package `tools@1.0.0`, the source of plugin `tools` ``.
fn package_line(s: &PackageSignature<'_>) -> String {
    let Some(payload) = s.payload else {
        return format!(
            "npm package `{}@{}`, the source of plugin `{}`",
            s.package.name(),
            s.package.version,
            s.plugin
        );
    };
    format!(
        "npm package `{}@{}` in the closure of `{}` {} ({} of plugin `{}`)",
        s.package.name(),
        s.package.version,
        payload.package,
        payload.version,
        payload.used_by.describe(&payload.server),
        payload.plugin
    )
}

fn text(
    checked: &Checked,
    lock: &berth_lockfile_schema::Lock,
    unsigned: &[&PackageSignature<'_>],
) -> String {
    let mut out = String::new();
    // Allowed without `require_registry_signatures`, but nothing vouches for where they
    // came from.
    for s in unsigned {
        out.push_str(&format!(
            "{}: {}: {}\n",
            s.state.as_str().replace('_', " "),
            package_line(s),
            s.state.describe()
        ));
    }
    // What MCP servers offer the model is unknown for these: nothing vouches for it.
    for t in lock.tools.iter().filter(|t| t.unobserved.is_some()) {
        out.push_str(&format!(
            "not observed: MCP server `{}` of plugin `{}`: {}\n",
            t.server,
            t.plugin,
            t.unobserved.as_deref().unwrap_or_default()
        ));
    }
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
        "class": f.class,
        "place": f.place,
        "what": f.what,
    })
}

fn json_report(
    checked: &Checked,
    lock: &berth_lockfile_schema::Lock,
    unsigned: &[&PackageSignature<'_>],
) -> Value {
    let mut report = json!({
        "version": 1,
        "findings": checked.findings.iter().map(|(p, f)| finding_json(p, f)).collect::<Vec<_>>(),
        "violations": checked.violations,
    });
    let unobserved: Vec<Value> = lock
        .tools
        .iter()
        .filter_map(|t| {
            let why = t.unobserved.as_ref()?;
            Some(json!({"plugin": t.plugin, "server": t.server, "why": why}))
        })
        .collect();
    if !unobserved.is_empty() {
        report["unobserved_servers"] = json!(unobserved);
    }
    let (sources, packages): (Vec<_>, Vec<_>) = unsigned.iter().partition(|s| s.payload.is_none());
    let entry = |s: &PackageSignature<'_>| {
        let mut entry = json!({"plugin": s.plugin});
        if let Some(payload) = s.payload {
            entry["server"] = json!(payload.server);
            entry["payload"] = json!(payload.package);
        }
        entry["name"] = json!(s.package.name());
        entry["version"] = json!(s.package.version);
        entry["state"] = json!(s.state.as_str());
        entry["why"] = json!(s.state.describe());
        entry
    };
    for (key, list) in [
        ("unsigned_npm_packages", packages),
        ("unsigned_npm_plugin_sources", sources),
    ] {
        if !list.is_empty() {
            report[key] = list.into_iter().map(&entry).collect();
        }
    }
    report
}

/// The classes of findings, with their SARIF rule descriptions.
const CLASSES: [(Class, &str); 6] = [
    (
        Class::Bidi,
        "A bidirectional control character: text can display in another order than it runs",
    ),
    (
        Class::Tag,
        "A Unicode tag character: invisible text a model can read",
    ),
    (
        Class::Invisible,
        "A zero-width or invisible character a reviewer cannot see (several in a row can carry hidden data)",
    ),
    (
        Class::VariationSelector,
        "Variation selectors beyond an emoji's own: several in a row can carry hidden data",
    ),
    (
        Class::Control,
        "A control character: an escape sequence, carriage return or backspace can rewrite what a terminal shows",
    ),
    (
        Class::NotUtf8,
        "Bytes that are not UTF-8: readers replace them and read the rest",
    ),
];

/// The SARIF rule id of a finding's class.
fn rule_id(class: Class) -> String {
    format!("berth/hidden-unicode/{}", class.as_str())
}

/// `path` as a relative URI reference: each `/`-separated segment percent-encoded as RFC
/// 3986 asks (everything but its unreserved characters, as UTF-8 bytes), so a `#`, `?`, `%`
/// or space in a plugin's file name stays part of the path.
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in segment.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// SARIF 2.1.0: one run of berth, a result per finding (located at the plugin's file,
/// `PLUGIN/PATH`, line and column in code points) and per policy violation (located at the
/// lockfile).
fn sarif(checked: &Checked, lock_label: &str) -> Value {
    let mut rules: Vec<(String, &str)> = CLASSES
        .iter()
        .map(|(class, text)| (rule_id(*class), *text))
        .collect();
    rules.push((
        "berth/policy".to_owned(),
        "A plugin the project's policy does not let through",
    ));
    let mut results: Vec<Value> = checked
        .findings
        .iter()
        .map(|(plugin, f)| {
            let message = format!("{} ({}) in plugin `{plugin}`", f.code_point_label(), f.what);
            let mut location = json!({
                "artifactLocation": { "uri": uri_path(&format!("{plugin}/{}", f.file)), "uriBaseId": "BERTH_PLUGINS" },
            });
            // A finding in a name has no place in the file's text.
            if f.place != Place::Name {
                location["region"] = json!({ "startLine": f.line, "startColumn": f.column });
            }
            json!({
                "ruleId": rule_id(f.class),
                "level": match f.severity { Severity::Critical => "error", Severity::Warning => "warning" },
                "message": { "text": escape_for_display(&message) },
                "locations": [{ "physicalLocation": location }],
                "properties": { "plugin": plugin, "file": f.file, "codePoint": f.code_point_label(), "place": f.place }
            })
        })
        .collect();
    results.extend(checked.violations.iter().map(|v| {
        json!({
            "ruleId": "berth/policy",
            "level": "error",
            "message": { "text": escape_for_display(&v.to_string()) },
            "locations": [{
                "physicalLocation": { "artifactLocation": { "uri": uri_path(lock_label) } }
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

#[cfg(test)]
mod tests {
    use super::uri_path;

    #[test]
    fn uris_are_percent_encoded_per_segment() {
        assert_eq!(
            uri_path("u/docs/a b#c%%d?.md"),
            "u/docs/a%20b%23c%25%25d%3F.md"
        );
        assert_eq!(uri_path("u/ü.md"), "u/%C3%BC.md");
        assert_eq!(
            uri_path("hidden/skills/review/SKILL.md"),
            "hidden/skills/review/SKILL.md"
        );
        assert_eq!(uri_path("s/x\u{202e}y"), "s/x%E2%80%AEy");
    }
}
