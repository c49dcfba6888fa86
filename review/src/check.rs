//! A lock's plugins against a policy and its approvals: sources, capabilities, approvals
//! and hidden Unicode, each violation naming plugin, capability, rule and policy file.

use std::fmt;
use std::path::Path;

use berth_lockfile_schema::LockedPlugin;
use berth_lockfile_schema::governance::{Approvals, Capability, Level, Policy, UnicodeLevel};
use serde::Serialize;

use super::hidden::{Finding, Severity, scan_plugin};
use super::signed::{SignatureRefused, approval_payload, check_signature};
use super::surface::{Surface, surface_from};
use berth_plugin::error::PluginError;
use berth_plugin::model::PluginModel;

/// Where berth's own defaults apply, in messages.
const DEFAULTS: &str = "berth's defaults";

/// One plugin to check: its lock entry, its store folder, and whether to scan its files.
#[derive(Debug, Clone, Copy)]
pub struct UnderReview<'a> {
    /// The lock entry.
    pub locked: &'a LockedPlugin,
    /// Its verified store entry.
    pub entry: &'a Path,
    /// Whether its files are scanned for hidden Unicode.
    pub scan: bool,
    /// The lock's payloads (its runner lines' pinned packages): those of this plugin are
    /// part of what is approved.
    pub payloads: &'a [berth_lockfile_schema::LockedPayload],
    /// The lock's `[[tools]]` records with their manifests (see
    /// [`load_manifests`](super::load_manifests)): this plugin's are part of what is
    /// approved.
    pub tools: &'a [(
        berth_lockfile_schema::LockedTools,
        Option<serde_json::Value>,
    )],
    /// What a plugin set already read of the entry (its [`PluginModel`]), so the review
    /// reads only the rest; `None` before a set was built.
    pub read: Option<&'a PluginModel>,
    /// The marketplaces whose picks are credited to their pinned source (the lock's
    /// `[[marketplace]]` entries): a plugin asked for as `x@NAME` may match a `[sources]`
    /// pattern by the source of the marketplace declared as `NAME` here, never by `NAME`.
    /// Empty: every plugin matches by its own source alone.
    pub marketplaces: &'a [berth_lockfile_schema::marketplace::LockedMarketplace],
}

/// Something the policy does not let through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The plugin.
    pub plugin: String,
    /// `source`, `hooks`, `mcp_stdio`, `mcp_remote`, `executables`, `hidden_unicode`,
    /// `approval` (an approval's signature refused), or `registry_signature` (an npm
    /// package of a payload, from `berth audit`).
    pub capability: String,
    /// The rule, as the policy file writes it (`hooks = "approve"`).
    pub rule: String,
    /// The policy file that set the rule (or berth's defaults).
    pub file: String,
    /// What the plugin has that the rule refuses, and what to do next.
    pub detail: String,
    /// Whether an approval (`berth plugins approve`) would let it through.
    pub needs_approval: bool,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "plugin `{}`: {} [`{}` in `{}`]",
            self.plugin, self.detail, self.rule, self.file
        )
    }
}

/// What a check found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Checked {
    /// What the policy refuses; empty when the lock passes.
    pub violations: Vec<Violation>,
    /// Every hidden character found, with its plugin (critical ones under a `warn` policy,
    /// and zero-width ones, are here and not violations).
    pub findings: Vec<(String, Finding)>,
}

impl Checked {
    /// The findings that are not violations, one line each.
    pub fn warnings(&self) -> Vec<String> {
        self.findings
            .iter()
            .filter(|(plugin, f)| {
                !self.violations.iter().any(|v| {
                    v.plugin == *plugin
                        && v.capability == "hidden_unicode"
                        && f.severity == Severity::Critical
                })
            })
            .map(|(plugin, f)| finding_line(plugin, f))
            .collect()
    }
}

/// `plugin `x`, skills/a/SKILL.md:3:7: U+202E (bidirectional control)`.
pub fn finding_line(plugin: &str, f: &Finding) -> String {
    format!(
        "plugin `{plugin}`, {}:{}:{}: {} ({}, {})",
        f.file,
        f.line,
        f.column,
        f.code_point_label(),
        f.what,
        match f.severity {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
        }
    )
}

/// Checks every plugin against `policy` and `approvals`.
pub fn check_plugins(
    policy: &Policy,
    approvals: &Approvals,
    plugins: &[UnderReview<'_>],
) -> Result<Checked, PluginError> {
    let mut checked = Checked::default();
    let needs_surface = reviews_surfaces(policy);
    // What each plugin runs and hides, read on its own (every file of it), a few at once;
    // then checked in lock order.
    let read = berth_runtime::parallel::try_map(plugins, 1, |plugin| {
        let name = plugin.locked.name.as_str();
        let surface = if needs_surface {
            let read = plugin.read.cloned().unwrap_or_default();
            let mut surface =
                surface_from(name, plugin.entry, plugin.locked.definition.as_ref(), read)?;
            surface.pin_packages(name, plugin.payloads);
            surface.pin_tools(name, plugin.tools);
            Some(surface)
        } else {
            None
        };
        let findings = if plugin.scan {
            Some(scan_plugin(plugin.entry)?)
        } else {
            None
        };
        Ok::<_, PluginError>((surface, findings))
    })?;
    for (plugin, (surface, findings)) in plugins.iter().zip(read) {
        let name = plugin.locked.name.as_str();
        if let Some(violation) = check_source(policy, plugin) {
            checked.violations.push(violation);
        }
        if let Some(surface) = surface {
            check_capabilities(
                policy,
                approvals,
                plugin.locked,
                &surface,
                &mut checked.violations,
            );
        }
        if let Some(findings) = findings {
            let (level, file) = policy.hidden_unicode();
            if level == UnicodeLevel::Deny
                && let Some(first) = findings.iter().find(|f| f.severity == Severity::Critical)
            {
                let count = findings
                    .iter()
                    .filter(|f| f.severity == Severity::Critical)
                    .count();
                checked.violations.push(Violation {
                    plugin: name.to_owned(),
                    capability: "hidden_unicode".to_owned(),
                    rule: "hidden_unicode = \"deny\"".to_owned(),
                    file: file.unwrap_or(DEFAULTS).to_owned(),
                    detail: format!(
                        "{count} hidden character{} a reviewer cannot see, first at {}:{}:{} ({} {}); `berth audit` lists them",
                        if count == 1 { "" } else { "s" },
                        first.file,
                        first.line,
                        first.column,
                        first.code_point_label(),
                        first.what
                    ),
                    needs_approval: false,
                });
            }
            checked
                .findings
                .extend(findings.into_iter().map(|f| (name.to_owned(), f)));
        }
    }
    Ok(checked)
}

/// Whether checking against `policy` reads what plugins run (their surfaces): a capability
/// it does not simply allow, or a list of remote hosts.
pub fn reviews_surfaces(policy: &Policy) -> bool {
    Capability::ALL
        .iter()
        .any(|c| policy.capability(*c).0 != Level::Allow)
        || policy.has_remote_hosts()
}

/// The `[sources]` rules for one plugin: its locked source, or the pinned source of the
/// marketplace it was picked from (by the lock's record of that marketplace; an alias the
/// lock does not declare credits nothing).
fn check_source(policy: &Policy, plugin: &UnderReview<'_>) -> Option<Violation> {
    let alias = plugin
        .locked
        .requested
        .as_deref()
        .and_then(|r| r.rsplit_once('@'))
        .map(|(_, m)| m);
    let marketplace = alias.and_then(|a| plugin.marketplaces.iter().find(|m| m.name == a));
    let denied = policy
        .check_source(
            &plugin.locked.source,
            marketplace.map(|m| m.source.as_str()),
        )
        .err()?;
    let from = match (alias, marketplace) {
        (Some(a), Some(m)) => format!(" (marketplace `{a}` at `{}`)", m.source),
        (Some(a), None) => format!(" (marketplace `{a}`, whose source this check does not know)"),
        (None, _) => String::new(),
    };
    let next = match (&denied.why, denied.reason) {
        (Some(why), _) => format!(": {why}"),
        (None, "denied by") => String::new(),
        (None, _) => format!(
            "; a pattern matches the plugin's source or its marketplace's source, never a marketplace's name: add one to `{}` or remove the plugin",
            denied.file
        ),
    };
    Some(Violation {
        plugin: plugin.locked.name.clone(),
        capability: "source".to_owned(),
        rule: denied.rule.clone(),
        file: denied.file.clone(),
        detail: format!(
            "its source `{}`{from} is {} the policy{next}",
            plugin.locked.source, denied.reason,
        ),
        needs_approval: false,
    })
}

/// The capability rules for one plugin's surface: each capability's level for what the
/// surface has of it, then the remote hosts. An approval that a rule relies on and that
/// matches the surface counts only if its signature passes ([`check_signature`]); one that
/// does not is one violation, in place of each rule's.
fn check_capabilities(
    policy: &Policy,
    approvals: &Approvals,
    locked: &LockedPlugin,
    surface: &Surface,
    violations: &mut Vec<Violation>,
) {
    let name = locked.name.as_str();
    let digest = surface.approval_digest();
    let approval = approvals.get(name);
    let current = approval.filter(|a| a.surface == digest);
    let relied_on = Capability::ALL
        .iter()
        .any(|c| surface.has(*c) && policy.capability(*c).0 == Level::Approve);
    let refused = current.filter(|_| relied_on).and_then(|a| {
        check_signature(policy, a, &approval_payload(a, &locked.source, surface)).err()
    });
    let approve = match policy.require_signed_approvals() {
        Some(_) => format!("berth plugins approve {name} --sign KEY"),
        None => format!("berth plugins approve {name}"),
    };
    if let Some(refused) = refused {
        violations.push(signature_violation(name, refused));
    }
    for capability in Capability::ALL {
        if !surface.has(capability) {
            continue;
        }
        let what = surface.describe(capability);
        let (level, file) = policy.capability(capability);
        let file = file.unwrap_or(DEFAULTS).to_owned();
        let rule = |level: &str| format!("{} = \"{level}\"", capability.as_str());
        match level {
            Level::Allow => {}
            Level::Deny => violations.push(Violation {
                plugin: name.to_owned(),
                capability: capability.as_str().to_owned(),
                rule: rule("deny"),
                file,
                detail: format!("it has {what}, which the policy denies"),
                needs_approval: false,
            }),
            // Approved, or its approval is refused above.
            Level::Approve if current.is_some() => {}
            Level::Approve => violations.push(Violation {
                plugin: name.to_owned(),
                capability: capability.as_str().to_owned(),
                rule: rule("approve"),
                file,
                detail: match approval {
                    Some(a) => format!(
                        "what it runs changed since {} approved it on {} (it has {what}); review the change (`berth plugins diff`), then run `{approve}`",
                        a.by, a.at
                    ),
                    None => format!(
                        "it has {what}, not approved yet; review it (`berth plugins diff`), then run `{approve}`"
                    ),
                },
                needs_approval: true,
            }),
        }
    }
    check_remote_hosts(policy, name, surface, violations);
}

/// An approval whose signature does not pass, as a violation.
fn signature_violation(name: &str, refused: SignatureRefused) -> Violation {
    Violation {
        plugin: name.to_owned(),
        capability: "approval".to_owned(),
        rule: refused.rule,
        file: refused.file,
        detail: refused.detail,
        // Signing is what an unsigned approval waits for; a wrong signature is refused.
        needs_approval: refused.unsigned,
    }
}

/// `mcp_remote_hosts`: every remote MCP server on a listed host.
fn check_remote_hosts(
    policy: &Policy,
    name: &str,
    surface: &Surface,
    violations: &mut Vec<Violation>,
) {
    for url in surface.remote_urls() {
        if let Err(refused) = policy.check_remote_host(url) {
            violations.push(Violation {
                plugin: name.to_owned(),
                capability: "mcp_remote".to_owned(),
                rule: "mcp_remote_hosts".to_owned(),
                file: refused.file.clone(),
                detail: match &refused.why {
                    Some(why) => {
                        format!("its MCP server at `{url}` is not on a listed host: the URL {why}")
                    }
                    None => format!(
                        "its MCP server at `{url}` is not on a listed host (its host is `{}`)",
                        refused.host
                    ),
                },
                needs_approval: false,
            });
        }
    }
    // A remote server berth cannot model has no host to check: no list lets it through.
    if let Some(file) = policy.files().find(|_| policy.has_remote_hosts()) {
        for u in surface.unmodeled(Capability::McpRemote) {
            violations.push(Violation {
                plugin: name.to_owned(),
                capability: "mcp_remote".to_owned(),
                rule: "mcp_remote_hosts".to_owned(),
                file: file.to_owned(),
                detail: format!(
                    "`{}` has {}, whose host berth cannot check",
                    u.source, u.what
                ),
                needs_approval: false,
            });
        }
    }
}
