//! Signing approvals with OpenSSH's `ssh-keygen -Y sign` (OpenSSH 8.1 or later), which
//! reads a private key file, or asks the SSH agent for the private key of a public key
//! file. What it signs and how a signature is checked are the runtime's
//! (`review::payload_signed_as`, `review::check_signature`), as every front end checks it.
//! The signer is in what is signed, so the key is read (from its file, or from the agent)
//! before anything is signed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, anyhow, bail};
use berth_lockfile_schema::governance::{
    Approval, ApprovalSignature, Policy, SIGNATURE_NAMESPACE, is_armored, principal_of,
};
use berth_review::{
    NotListed, SigningKey, Surface, approval_payload, check_signature, payload_signed_as,
    signer_for,
};

/// What signs this run's approvals: the policy they answer to, the key file `ssh-keygen` is
/// given and its public key.
pub struct Signing {
    policy: Policy,
    key_file: PathBuf,
    key: SigningKey,
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
    /// Signs with `key` (`--sign KEY`: a key file, or `ssh-agent`) for approvals by `by`
    /// made at `at`, under `policy`.
    pub fn new(policy: Policy, key: &str, by: &str, at: &str) -> Result<Signing> {
        if key == "ssh-agent" {
            let (line, public) = agent_key(&policy, by, at)?;
            let path =
                std::env::temp_dir().join(format!("berth-approve-{}.pub", std::process::id()));
            std::fs::write(&path, format!("{line}\n"))
                .with_context(|| format!("could not write `{}`", path.display()))?;
            return Ok(Signing {
                policy,
                key_file: path.clone(),
                key: public,
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
            key: public_key_of(&key_file)?,
            policy,
            key_file,
            written: None,
        })
    }

    /// Signs `approval` of `surface`, for the plugin locked from `source`, and records the
    /// signature and its signer in it: the principal `by` names, which the policy's
    /// allowed-signers files must list the key for (any principal, when the policy names
    /// none). Fails unless the signature passes the policy, so nothing is written that
    /// `sync` would refuse. Returns the key and signer, for people.
    pub fn sign(&self, approval: &mut Approval, source: &str, surface: &Surface) -> Result<String> {
        let signer = signer_for(&self.policy, &self.key, &approval.by, &approval.at)
            .map_err(|refused| self.not_listed(refused, &approval.by))?;
        let payload = payload_signed_as(approval, &signer, source, surface);
        let armored = ssh_keygen_sign(&self.key_file, payload.text())?;
        let key = SigningKey::of_signature(&armored)
            .map_err(|why| anyhow!("`ssh-keygen` wrote a signature that is {why}"))?;
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

    /// Why the key may not sign an approval by `by`: not listed at all, or listed for
    /// others than the one `by` names.
    fn not_listed(&self, refused: Option<NotListed>, by: &str) -> anyhow::Error {
        let key = self.key.describe();
        let Some(refused) = refused else {
            let first = self
                .policy
                .signers()
                .first()
                .expect("only a listing refuses");
            return anyhow!(
                "the {key} is not listed to sign in `{SIGNATURE_NAMESPACE}` in `{}` (`allowed_signers` of `{}`); add a line `PRINCIPAL KEYTYPE BASE64` for its public key there, or sign with a key it lists",
                first.file,
                first.policy
            );
        };
        anyhow!(
            "the approver `{by}` cannot sign with the {key}, {} (`allowed_signers` of `{}`); approve as a principal the key is listed for (`--by 'Name <EMAIL>'`), or sign with the approver's own key",
            refused.why,
            refused.policy
        )
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

/// The public key of `key_file`: the file itself when it is a public key or an OpenSSH
/// private key, else the public key beside it (`KEY.pub`), else what `ssh-keygen -y`
/// derives (which asks for the passphrase of an encrypted key in another format).
fn public_key_of(key_file: &Path) -> Result<SigningKey> {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| SigningKey::of_key_file(&text))
    };
    let why = match read(key_file) {
        Ok(key) => return Ok(key),
        Err(why) => why,
    };
    let mut beside = key_file.as_os_str().to_owned();
    beside.push(".pub");
    if let Ok(key) = read(Path::new(&beside)) {
        return Ok(key);
    }
    let derived = Command::new("ssh-keygen")
        .arg("-y")
        .arg("-f")
        .arg(key_file)
        .stderr(Stdio::inherit())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| SigningKey::from_openssh(&String::from_utf8_lossy(&out.stdout)).ok());
    derived.ok_or_else(|| {
        anyhow!(
            "`--sign {}`: could not read its public key ({why}); give its public key file, with the private key beside it or in the SSH agent",
            key_file.display()
        )
    })
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

/// The agent's first key that the policy's allowed-signers files list for the approver
/// `by` (at `at`), or its first key when the policy names none, as `ssh-add -L` writes it.
fn agent_key(policy: &Policy, by: &str, at: &str) -> Result<(String, SigningKey)> {
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
    let chosen = keys
        .iter()
        .find(|(_, key)| signer_for(policy, key, by, at).is_ok());
    let Some((line, key)) = chosen else {
        let described: Vec<String> = keys.iter().map(|(_, k)| k.describe()).collect();
        bail!(
            "no key of the SSH agent ({}) is listed in the policy's `allowed_signers` for `{}`, whom `--by` names; add one there, or give another key file to `--sign`",
            described.join(", "),
            principal_of(by)
        );
    };
    Ok(((*line).to_owned(), key.clone()))
}
