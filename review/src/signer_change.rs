//! `[sources] signer_change`: a locked plugin whose signer changed (its lock entry's
//! `signature` says who signed before, `was`) runs under `approve` (the default) once an
//! approval records the new signer, never under `deny`, and with a warning under `warn`.

use berth_lockfile_schema::governance::{Approvals, Policy, SignerChange};
use berth_lockfile_schema::{Lock, LockedPlugin};

use super::Violation;

/// The policy file a default rule is said to come from.
const DEFAULTS: &str = "berth's defaults";

/// A locked plugin's change of signer and what the policy says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerChanged<'a> {
    /// The plugin.
    pub plugin: &'a LockedPlugin,
    /// Who signed before (`ssh SHA256:…`).
    pub was: &'a str,
    /// The rule that applies, and the file that set it.
    pub rule: SignerChange,
    pub file: &'a str,
    /// Whether an approval recorded the signer it has now.
    pub approved: bool,
}

impl SignerChanged<'_> {
    /// `its source was signed by ssh key SHA256:abc and is now unsigned`.
    pub fn describe(&self) -> String {
        let now = self
            .plugin
            .signature
            .as_ref()
            .map(berth_lockfile_schema::SourceSignature::describe)
            .unwrap_or_default();
        format!(
            "its source changed hands: {} was signed by {}, and is now {now}",
            self.plugin.pin_label(),
            describe_signer(self.was)
        )
    }

    /// The rule as the policy file writes it.
    pub fn rule_text(&self) -> String {
        format!("sources.signer_change = \"{}\"", self.rule.as_str())
    }
}

/// `ssh SHA256:abc` as `ssh key SHA256:abc`; `x509 …` as `an X.509 certificate for …`.
pub fn describe_signer(signer: &str) -> String {
    match signer.split_once(' ') {
        Some(("ssh", key)) => format!("ssh key {key}"),
        Some(("openpgp", key)) => format!("OpenPGP key {key}"),
        Some(("x509", who)) => format!("an X.509 certificate for {who}"),
        _ => signer.to_owned(),
    }
}

/// Every plugin of `lock` whose signer changed, with the rule that applies to it.
pub fn signer_changes<'a>(
    policy: &'a Policy,
    approvals: &Approvals,
    lock: &'a Lock,
) -> Vec<SignerChanged<'a>> {
    let (rule, file) = policy.signer_change();
    lock.plugins
        .iter()
        .filter_map(|plugin| {
            let signature = plugin.signature.as_ref()?;
            let was = signature.was.as_deref()?;
            let approved = approvals
                .get(&plugin.name)
                .and_then(|a| a.source_signer.as_deref())
                == Some(signature.signer_id().as_str());
            Some(SignerChanged {
                plugin,
                was,
                rule,
                file: file.unwrap_or(DEFAULTS),
                approved,
            })
        })
        .collect()
}

/// What the policy refuses of the changes of signer in `lock`: under `deny` every one,
/// under `approve` those no approval covers (which an approval lets through).
pub fn signer_violations(policy: &Policy, approvals: &Approvals, lock: &Lock) -> Vec<Violation> {
    signer_changes(policy, approvals, lock)
        .into_iter()
        .filter(|c| match c.rule {
            SignerChange::Deny => true,
            SignerChange::Approve => !c.approved,
            SignerChange::Warn => false,
        })
        .map(|c| {
            let name = &c.plugin.name;
            let next = match c.rule {
                SignerChange::Deny => format!("lock a commit signed as before, or remove `{name}`"),
                _ => format!(
                    "review it (`berth plugins diff`), then run `berth plugins approve {name}`"
                ),
            };
            Violation {
                plugin: name.clone(),
                capability: "signer".to_owned(),
                rule: c.rule_text(),
                file: c.file.to_owned(),
                detail: format!("{}; {next}", c.describe()),
                needs_approval: c.rule == SignerChange::Approve,
            }
        })
        .collect()
}
