//! Who signed each git plugin of a new lock (its entry's `signature`): a pin kept keeps
//! its record; a new or moved pin, or one a lock from before berth recorded signers left
//! without, is read from the git cache by the front end's reader
//! ([`crate::SignatureReader`]). When the signer differs from the one the previous lock
//! recorded for the plugin (once it was seen signed), `was` says who signed before.

use berth_lockfile_schema::{Lock, LockedPlugin, SourceSignature};

use crate::context::{Env, run_parallel};
use crate::sources::{ObjectsFrom, kind_of};

/// Fills in the `signature` of the git plugins of `plugins` that have none.
pub(super) fn record(env: &Env<'_>, plugins: &mut [LockedPlugin], previous: Option<&Lock>) {
    let Some(reader) = env.settings.signature_reader else {
        return;
    };
    let policy = env.settings.sources.policy();
    let signers: Vec<_> = policy
        .source_signers()
        .iter()
        .chain(policy.signers())
        .collect();
    // Only a commit may carry a signature: a folder or an archive is not looked at.
    let wanted: Vec<usize> = (0..plugins.len())
        .filter(|&i| plugins[i].signature.is_none() && kind_of(&plugins[i].pin).may_be_signed())
        .collect();
    if wanted.is_empty() {
        return;
    }
    let read = run_parallel(&wanted, env.settings.jobs, |_, &i| {
        let plugin = &plugins[i];
        match kind_of(&plugin.pin)
            .load(env, plugin, None)
            .git_objects(ObjectsFrom::Cache)
        {
            Ok(Some(objects)) => {
                let tag = objects.tag.as_ref();
                let tag = tag.map(|t| (t.name.as_str(), t.object.as_slice()));
                Some(reader(&objects.rev, &objects.commit, tag, &signers))
            }
            Ok(None) => None,
            Err(e) => {
                env.reporter.warn(&format!(
                    "plugin `{}`: could not read who signed its commit, so the lock does not record it: {e}",
                    plugin.name
                ));
                None
            }
        }
    });
    for (i, signature) in wanted.into_iter().zip(read) {
        let before = previous
            .into_iter()
            .flat_map(|lock| &lock.plugins)
            .find(|p| p.name == plugins[i].name && p.source == plugins[i].source)
            .and_then(|p| p.signature.as_ref());
        plugins[i].signature = signature.map(|s| with_was(s, before));
    }
}

/// `signature` with `was` set when the signer the previous lock saw (its own `was`, while
/// that change waits, else its signer) differs from it.
fn with_was(mut signature: SourceSignature, before: Option<&SourceSignature>) -> SourceSignature {
    let seen = before.and_then(|b| b.was.clone().or_else(|| b.signer()));
    signature.was = seen.filter(|seen| *seen != signature.signer_id());
    signature
}

#[cfg(test)]
mod tests {
    use super::{SourceSignature, with_was};
    use berth_lockfile_schema::SignatureKind;

    fn ssh(key: &str) -> SourceSignature {
        SourceSignature {
            kind: SignatureKind::Ssh,
            key: Some(key.to_owned()),
            ..SourceSignature::none()
        }
    }

    #[test]
    fn was_names_the_signer_seen_before_until_it_signs_again() {
        let none = SourceSignature::none();
        assert_eq!(with_was(ssh("A"), None).was, None, "nothing seen before");
        assert_eq!(with_was(ssh("A"), Some(&none)).was, None, "unsigned before");
        assert_eq!(
            with_was(ssh("A"), Some(&ssh("A"))).was,
            None,
            "the same key"
        );
        let unsigned = with_was(none.clone(), Some(&ssh("A")));
        assert_eq!(unsigned.was.as_deref(), Some("ssh A"));
        // Still waiting: another move keeps the signer first seen; back to it, it is gone.
        assert_eq!(
            with_was(ssh("B"), Some(&unsigned)).was.as_deref(),
            Some("ssh A")
        );
        assert_eq!(with_was(ssh("A"), Some(&unsigned)).was, None);
    }
}
