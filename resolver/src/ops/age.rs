//! The release-age cutoff of a lock (`exclude-newer`): what the manifest and the policy
//! ask, settled against the previous lock's record, and whether a lock was made with the
//! cutoff asked for now.

use std::sync::atomic::Ordering;

use berth_lockfile_schema::release_age::{Ask, settle};
use berth_lockfile_schema::{Lock, Manifest, Staleness};

use crate::context::{ActiveCutoff, Env, Settings};

/// Every `exclude-newer` asked for: the manifest's (named `manifest_label`), then each
/// policy file's.
fn asks(manifest: &Manifest, manifest_label: &str, settings: &Settings) -> Vec<Ask> {
    manifest
        .exclude_newer
        .iter()
        .map(|value| Ask {
            from: manifest_label.to_owned(),
            value: value.clone(),
        })
        .chain(settings.release_age.policy.iter().cloned())
        .collect()
}

/// The cutoff a lock of `manifest` works under: the earliest asked, a span counted back
/// from the settings' time, except that a span the previous lock recorded keeps its
/// recorded instant (unless `fresh`: `--upgrade` counts every span from now again).
pub(crate) fn cutoff_for(
    manifest: &Manifest,
    manifest_label: &str,
    settings: &Settings,
    previous: Option<&Lock>,
    fresh: bool,
) -> Option<ActiveCutoff> {
    let asks = asks(manifest, manifest_label, settings);
    let recorded = previous
        .filter(|_| !fresh)
        .and_then(|p| p.exclude_newer.as_ref());
    settle(&asks, recorded, settings.release_age.now)
        .map(|(cutoff, ask)| ActiveCutoff::asked(cutoff, ask))
}

/// Says, once per lock, that the git dates the cutoff was held to are their author's word,
/// unless the policy requires signed sources: then a key it trusts vouches for each locked
/// commit or tag, its date included.
pub(crate) fn warn_git_dates(env: &Env<'_>) {
    if env.git_dated.load(Ordering::Relaxed) && !env.settings.release_age.signed_sources {
        env.reporter.warn(
            "`exclude-newer` held git sources to their commit and tag dates, which are whatever their author wrote (a new commit dated in the past passes the cutoff); have the policy require signed sources (`[sources] require_signed`) to trust them",
        );
    }
}

/// How `lock` is out of date with `manifest` and the policy: the manifest's requests
/// ([`Lock::staleness`]), then a release-age cutoff other than the one it was made with.
pub fn staleness(
    lock: &Lock,
    manifest: &Manifest,
    manifest_label: &str,
    settings: &Settings,
) -> Vec<Staleness> {
    let mut stale = lock.staleness(manifest);
    let asks = asks(manifest, manifest_label, settings);
    let wanted = settle(&asks, lock.exclude_newer.as_ref(), settings.release_age.now);
    if let Some(changed) = lock.cutoff_staleness(wanted.as_ref().map(|(c, a)| (c, *a))) {
        stale.push(changed);
    }
    stale
}
