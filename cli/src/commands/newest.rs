//! `berth plugins outdated`'s NEWEST column: what the lock would hold if the manifest
//! asked for no version at all.
//!
//! The manifest's constraints are lifted and it is resolved again in memory, quietly: a
//! `version` range becomes `*` (the highest version tag), a `ref` that is a version tag
//! (`v1.4.0`) becomes `>=1.4.0`, a `ref` that is a commit follows the default branch, and
//! a marketplace read at a version tag or a commit is read at its default branch; a
//! marketplace's plugins from npm are read at the package's `latest` dist-tag whatever
//! their entry asks for. A branch is its own newest. The release-age cutoff still holds:
//! NEWEST is the newest berth would lock.

use berth_lockfile_schema::{Lock, Manifest, is_full_commit_id};
use berth_resolver::{Network, Upgrade};

use super::lock::resolve_in;
use crate::context::Context;
use crate::printer::{Printer, Verbosity};

/// The lock with every constraint of `manifest` lifted, from `current`; `allowed` (what
/// the manifest allows) when nothing is constrained, or, with a warning, when the lifted
/// manifest does not resolve.
pub fn resolve_newest(ctx: &Context, manifest: &Manifest, current: &Lock, allowed: &Lock) -> Lock {
    let (lifted, changed) = unconstrained(manifest);
    if !changed && allowed.marketplaces.is_empty() {
        return allowed.clone();
    }
    let resolved = ctx.lock_settings(Network::Online).and_then(|mut settings| {
        settings.npm_latest = true;
        let quiet = Printer::new(Verbosity::Quiet, false);
        resolve_in(ctx, &lifted, Some(current), Upgrade::All, &settings, &quiet)
    });
    match resolved {
        Ok(newest) => newest,
        Err(e) => {
            ctx.printer.warn(&format!(
                "could not resolve the newest versions, so NEWEST shows what the manifest allows: {e:#}"
            ));
            allowed.clone()
        }
    }
}

/// `manifest` with its version constraints lifted (see the module), and whether any was.
pub(crate) fn unconstrained(manifest: &Manifest) -> (Manifest, bool) {
    let mut lifted = manifest.clone();
    let mut changed = false;
    for plugin in &mut lifted.plugins {
        if plugin.version.is_some() {
            plugin.version = Some("*".to_owned());
            changed = true;
        } else if let Some(r) = plugin.git_ref.clone() {
            if let Some(version) = version_of_tag(&r) {
                plugin.git_ref = None;
                plugin.version = Some(format!(">={version}"));
                changed = true;
            } else if is_full_commit_id(&r) {
                plugin.git_ref = None;
                changed = true;
            }
        }
    }
    for market in &mut lifted.marketplaces {
        if let Some(r) = &market.git_ref
            && (version_of_tag(r).is_some() || is_full_commit_id(r))
        {
            market.git_ref = None;
            changed = true;
        }
    }
    (lifted, changed)
}

/// The version a tag names (`v1.4.0` and `1.4.0-rc.1` do; `stable` and `v1` do not).
fn version_of_tag(tag: &str) -> Option<&str> {
    let version = tag.strip_prefix('v').unwrap_or(tag);
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then_some(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_lockfile_schema::parse_manifest;

    #[test]
    fn only_version_tags_are_versions() {
        assert_eq!(version_of_tag("v1.4.0"), Some("1.4.0"));
        assert_eq!(version_of_tag("2.0.0-rc.1"), Some("2.0.0-rc.1"));
        for not in ["main", "v1", "stable", "v1.2", "v1..0", "va.b.c"] {
            assert_eq!(version_of_tag(not), None, "{not}");
        }
    }

    #[test]
    fn constraints_are_lifted_and_branches_kept() {
        let manifest = parse_manifest(
            "plugins.toml",
            "[[marketplace]]\nname = \"m\"\nsource = \"github:a/m\"\nref = \"v2.0.0\"\n\n\
             [[plugin]]\nsource = \"github:a/r\"\nversion = \"^1.2\"\n\n\
             [[plugin]]\nsource = \"github:a/t\"\nref = \"v1.4.0\"\n\n\
             [[plugin]]\nsource = \"github:a/b\"\nref = \"main\"\n\n\
             [[plugin]]\nsource = \"github:a/c\"\nref = \"0123456789abcdef0123456789abcdef01234567\"\n",
        )
        .expect("manifest")
        .manifest;
        let (lifted, changed) = unconstrained(&manifest);
        assert!(changed);
        let refs: Vec<(Option<&str>, Option<&str>)> = lifted
            .plugins
            .iter()
            .map(|p| (p.git_ref.as_deref(), p.version.as_deref()))
            .collect();
        assert_eq!(
            refs,
            [
                (None, Some("*")),
                (None, Some(">=1.4.0")),
                (Some("main"), None),
                (None, None)
            ]
        );
        assert_eq!(lifted.marketplaces[0].git_ref, None);
        let branch_only = parse_manifest(
            "plugins.toml",
            "[[plugin]]\nsource = \"github:a/b\"\nref = \"main\"\n",
        )
        .expect("manifest")
        .manifest;
        assert!(!unconstrained(&branch_only).1);
    }
}
