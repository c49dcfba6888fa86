//! `berth plugins approve`: record the plugins' current capability surface as approved,
//! signed with an SSH key when `--sign` is given (`ssh.rs`).

mod ssh;

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::governance::Approval;
use berth_review::surface_of;

use crate::args::ApproveArgs;
use crate::context::{Context, write_atomically};

pub fn run(ctx: &Context, args: &ApproveArgs) -> Result<()> {
    let _hold = ctx.hold_store()?;
    let _guard = ctx.guard_lockfile()?;
    let lock = ctx.require_lock("")?;
    check_names(ctx, &lock, &args.names)?;
    let by = approver(ctx, args)?;
    let at = utc_now();
    // What the servers offer was observed when the lock was made, before this review:
    // approving starts nothing, and approves the records `plugins diff` showed.
    let tools = berth_review::load_manifests(&ctx.store, &lock.tools);
    let signing = signing(ctx, args, &by, &at)?;
    let mut approvals = ctx.read_approvals()?;
    let wanted: Vec<_> = lock
        .plugins
        .iter()
        .filter(|p| args.all || args.names.contains(&p.name))
        .collect();
    let keys: Vec<_> = wanted.iter().map(|p| (&p.hash, p.name.as_str())).collect();
    for (plugin, found) in wanted.iter().zip(ctx.store.checked_lookup_all(&keys)) {
        let Some(entry) = found? else {
            bail!(
                "plugin `{}` is not in the store; run `berth plugins sync`, review it (`berth plugins diff`), then approve it",
                plugin.name
            );
        };
        let mut surface = surface_of(&plugin.name, &entry.path, plugin.definition.as_ref())?;
        surface.pin_packages(&plugin.name, &lock.payloads);
        surface.pin_tools(&plugin.name, &tools);
        let digest = surface.approval_digest();
        // With `--sign`, an approval that is not signed, or whose signature the policy
        // refuses, is made again.
        let source_signer = plugin
            .signature
            .as_ref()
            .map(berth_lockfile_schema::SourceSignature::signer_id);
        let unchanged = approvals.get(&plugin.name).is_some_and(|a| {
            a.surface == digest
                && (a.source_signer == source_signer || source_signer.is_none())
                && signing
                    .as_ref()
                    .is_none_or(|s| s.holds(a, &plugin.source, &surface))
        });
        if unchanged {
            ctx.printer.status(
                "Approved",
                &format!("`{}` already, as it is now (unchanged)", plugin.name),
            );
            continue;
        }
        let mut approval = Approval {
            plugin: plugin.name.clone(),
            surface: digest.clone(),
            by: by.clone(),
            at: at.clone(),
            signature: None,
            source_signer,
        };
        if let Some(signing) = &signing {
            let signer = signing.sign(&mut approval, &plugin.source, &surface)?;
            ctx.printer
                .status("Signed", &format!("`{}` with the {signer}", plugin.name));
        }
        approvals.record(approval);
        ctx.printer
            .status("Approved", &summary(&plugin.name, &surface, &digest));
    }
    let label = ctx.approvals_path.display().to_string();
    write_atomically(&ctx.approvals_path, approvals.to_toml().as_bytes())
        .with_context(|| format!("could not write `{label}`"))?;
    ctx.printer
        .status("Wrote", &format!("`{label}`; commit it next to the lock"));
    Ok(())
}

/// Fails naming a name of `names` that no plugin of `lock` has, and the locked plugins.
fn check_names(ctx: &Context, lock: &berth_lockfile_schema::Lock, names: &[String]) -> Result<()> {
    for name in names {
        if !lock.plugins.iter().any(|p| p.name == *name) {
            bail!(
                "no plugin named `{name}` in `{}`; the locked plugins are {}",
                ctx.lock_label(),
                lock.plugins
                    .iter()
                    .map(|p| format!("`{}`", p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(())
}

/// `` `tools`: 1 hook, 0 MCP servers, 0 LSP servers, 1 executable (sha256:eaf840334ed8) ``.
fn summary(name: &str, surface: &berth_review::Surface, digest: &str) -> String {
    format!(
        "`{name}`: {}, {}, {}, {} ({})",
        count(surface.hooks.len(), "hook"),
        count(surface.mcp_servers.len(), "MCP server"),
        count(surface.lsp_servers.len(), "LSP server"),
        count(surface.executables.len(), "executable"),
        digest.chars().take(19).collect::<String>()
    )
}

/// What signs the approvals (`--sign`). Without it, a policy that requires signed
/// approvals is warned about: the approvals are written, and refused until signed.
fn signing(ctx: &Context, args: &ApproveArgs, by: &str, at: &str) -> Result<Option<ssh::Signing>> {
    if let Some(key) = &args.sign {
        return Ok(Some(ssh::Signing::new(
            ctx.governance()?.policy,
            key,
            by,
            at,
        )?));
    }
    if ctx.policy_path.is_some()
        && let Some(file) = ctx.governance()?.policy.require_signed_approvals()
    {
        ctx.printer.warn(&format!(
            "`{file}` requires signed approvals (`require_signed_approvals = true`): nothing runs these plugins until their approvals are signed; approve them with `--sign KEY`"
        ));
    }
    Ok(None)
}

/// Who approves: `--by`, or git's user.
fn approver(ctx: &Context, args: &ApproveArgs) -> Result<String> {
    match &args.by {
        Some(by) if !by.trim().is_empty() => Ok(by.trim().to_owned()),
        Some(_) => {
            bail!("`--by` is empty; say who approves, such as `--by 'Alice <alice@example.com>'`")
        }
        None => git_user(ctx),
    }
}

/// `1 hook`, `2 hooks`.
pub fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `Name <email>` from git's configuration, as a commit would say it.
fn git_user(ctx: &Context) -> Result<String> {
    let dir = ctx
        .lock_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let get = |key: &str| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["config", "--get", key])
            .output()
            .ok()?;
        let value = String::from_utf8(out.stdout).ok()?.trim().to_owned();
        (out.status.success() && !value.is_empty()).then_some(value)
    };
    match (get("user.name"), get("user.email")) {
        (Some(name), Some(email)) => Ok(format!("{name} <{email}>")),
        (Some(name), None) => Ok(name),
        (None, Some(email)) => Ok(format!("<{email}>")),
        (None, None) => bail!(
            "git has no `user.name` or `user.email` here; say who approves with `--by 'Name <email>'`"
        ),
    }
}

/// Now, as RFC 3339 in UTC to the second (`2026-11-25T06:00:00Z`).
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// Seconds since 1970 as RFC 3339 in UTC (Howard Hinnant's days-to-civil).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_589_999), "2026-11-25T06:59:59Z");
    }
}
