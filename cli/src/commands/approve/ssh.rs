//! Signing approvals with OpenSSH's `ssh-keygen -Y sign` (OpenSSH 8.1 or later), which
//! reads a private key file, or asks the SSH agent for the private key of a public key
//! file. What it signs and how a signature is checked are the runtime's
//! (`review::approval_payload`, `review::check_signature`), as every front end checks it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, anyhow, bail};
use berth_lockfile_schema::governance::{
    Approval, ApprovalSignature, Policy, SIGNATURE_NAMESPACE, is_armored,
};
use berth_runtime::review::{
    SigningKey, Surface, approval_payload, check_signature, principal_for,
};

/// What signs this run's approvals: the policy they answer to, and the key file
/// `ssh-keygen` is given.
pub struct Signing {
    policy: Policy,
    key_file: PathBuf,
    /// The public key file written for the agent's key (`--sign ssh-agent`), removed
    /// when signing is done.
    written: Option<PathBuf>,
}

impl Drop for Signing {
    fn drop(&mut self) {
        if let Some(path) = &self.written {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Signing {
    /// Signs with `key` (`--sign KEY`: a key file, or `ssh-agent`) for approvals made at
    /// `at`, under `policy`.
    pub fn new(policy: Policy, key: &str, at: &str) -> Result<Signing> {
        if key == "ssh-agent" {
            let line = agent_key(&policy, at)?;
            let path =
                std::env::temp_dir().join(format!("berth-approve-{}.pub", std::process::id()));
            std::fs::write(&path, format!("{line}\n"))
                .with_context(|| format!("could not write `{}`", path.display()))?;
            return Ok(Signing {
                policy,
                key_file: path.clone(),
                written: Some(path),
            });
        }
        let key_file = PathBuf::from(key);
        if !key_file.is_file() {
            bail!(
                "`--sign {key}`: there is no such key file; give a private key file, a public key file whose key the SSH agent holds, or `ssh-agent`"
            );
        }
        Ok(Signing {
            policy,
            key_file,
            written: None,
        })
    }

    /// Signs `approval` of `surface`, for the plugin locked from `source`, and records the
    /// signature and its signer in it: the principal the policy's allowed-signers files
    /// list the key for (the email of `by` when they list it for that), or the email of
    /// `by` when the policy names none. Fails unless the signature passes the policy, so
    /// nothing is written that `sync` would refuse. Returns the key and signer, for people.
    pub fn sign(&self, approval: &mut Approval, source: &str, surface: &Surface) -> Result<String> {
        let payload = approval_payload(approval, source, surface);
        let armored = ssh_keygen_sign(&self.key_file, &payload)?;
        let key = SigningKey::of_signature(&armored)
            .map_err(|why| anyhow!("`ssh-keygen` wrote a signature that is {why}"))?;
        let email = email_of(&approval.by);
        let signer = match self.policy.signers().first() {
            None => email.to_owned(),
            Some(first) => principal_for(&self.policy, &key, &approval.at, Some(email))
                .ok_or_else(|| {
                    anyhow!(
                        "the {} is not listed to sign in `{SIGNATURE_NAMESPACE}` in `{}` (`allowed_signers` of `{}`); add a line `PRINCIPAL KEYTYPE BASE64` for its public key there, or sign with a key it lists",
                        key.describe(),
                        first.file,
                        first.policy
                    )
                })?,
        };
        approval.signature = Some(ApprovalSignature {
            signer: signer.clone(),
            armored,
        });
        check_signature(&self.policy, approval, &payload).map_err(|refused| {
            anyhow!(
                "the signature just made for `{}` does not pass the policy: {} [`{}` in `{}`]",
                approval.plugin,
                refused.detail,
                refused.rule,
                refused.file
            )
        })?;
        Ok(format!("{} as `{signer}`", key.describe()))
    }

    /// Whether `approval` (of `surface`, the plugin locked from `source`) is signed and
    /// passes the policy already: nothing to sign again.
    pub fn holds(&self, approval: &Approval, source: &str, surface: &Surface) -> bool {
        approval.signature.is_some()
            && check_signature(
                &self.policy,
                approval,
                &approval_payload(approval, source, surface),
            )
            .is_ok()
    }
}

/// `alice@example.com` of `Alice <alice@example.com>`; `by` itself when it has no `<…>`.
fn email_of(by: &str) -> &str {
    by.rsplit_once('<')
        .and_then(|(_, rest)| rest.strip_suffix('>'))
        .filter(|email| !email.is_empty())
        .unwrap_or(by)
        .trim()
}

/// `payload` signed by `ssh-keygen -Y sign -n berth-approval -f KEY`, armored.
fn ssh_keygen_sign(key: &Path, payload: &str) -> Result<String> {
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", SIGNATURE_NAMESPACE, "-f"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => anyhow!(
                "`ssh-keygen` is not on PATH; install OpenSSH's client (8.1 or later) to sign approvals"
            ),
            _ => anyhow!("could not run `ssh-keygen`: {e}"),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(payload.as_bytes())
            .context("could not hand the approval to `ssh-keygen`")?;
    }
    let out = child
        .wait_with_output()
        .context("could not run `ssh-keygen`")?;
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said
        .lines()
        .filter(|l| !l.starts_with("Signing data on standard input"))
        .collect::<Vec<_>>()
        .join("; ");
    if !out.status.success() {
        bail!(
            "`ssh-keygen -Y sign -f {}` failed: {}",
            key.display(),
            said.trim()
        );
    }
    let armored = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !is_armored(&armored) {
        bail!("`ssh-keygen -Y sign` wrote no SSH signature; is OpenSSH 8.1 or later installed?");
    }
    Ok(armored)
}

/// The agent's first key that the policy's allowed-signers files list (at `at`), or its
/// first key when the policy names none, as `ssh-add -L` writes it.
fn agent_key(policy: &Policy, at: &str) -> Result<String> {
    let out = Command::new("ssh-add")
        .arg("-L")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow!("could not run `ssh-add -L` to list the SSH agent's keys: {e}"))?;
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let keys: Vec<(&str, SigningKey)> = listed
        .lines()
        .filter_map(|line| SigningKey::from_openssh(line).ok().map(|k| (line, k)))
        .collect();
    if !out.status.success() || keys.is_empty() {
        bail!(
            "the SSH agent has no key to sign with ({}); add one with `ssh-add`, or give a key file: `--sign ~/.ssh/id_ed25519`",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let chosen = match policy.signers().first() {
        None => keys.first(),
        Some(_) => keys
            .iter()
            .find(|(_, key)| principal_for(policy, key, at, None).is_some()),
    };
    let Some((line, _)) = chosen else {
        let described: Vec<String> = keys.iter().map(|(_, k)| k.describe()).collect();
        bail!(
            "no key of the SSH agent ({}) is listed in the policy's `allowed_signers`; add one there, or give another key file to `--sign`",
            described.join(", ")
        );
    };
    Ok((*line).to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_email_of_an_approver() {
        assert_eq!(
            super::email_of("Alice <alice@example.com>"),
            "alice@example.com"
        );
        assert_eq!(super::email_of("alice"), "alice");
        assert_eq!(super::email_of("Alice <>"), "Alice <>");
    }
}
