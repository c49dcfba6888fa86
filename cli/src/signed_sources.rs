//! `[sources] require_signed`: every locked plugin's commit (or the annotated tag its ref
//! names) must carry an SSH signature by a key the policy's allowed-signers files list.
//! The resolver reads the objects (from the git cache for `lock`, afresh for `verify`); the
//! runtime checks the signatures; this joins them and says which plugin fails and why.

use anyhow::Result;
use berth_lockfile_schema::governance::Policy;
use berth_lockfile_schema::{Lock, Manifest};
use berth_resolver::{GitObjects, Network, ObjectsFrom};
use berth_review::{SignedObjects, unsigned_source};

use crate::context::{Context, Failure};

impl Context {
    /// Fails, naming each plugin, when `policy` requires signed sources and a plugin of
    /// `lock` is not locked from a git commit or tag signed as it asks.
    pub fn check_signed_sources(
        &self,
        policy: &Policy,
        lock: &Lock,
        manifest: Option<&Manifest>,
        network: Network,
    ) -> Result<()> {
        let mut problems =
            self.unsigned_sources(policy, lock, manifest, network, ObjectsFrom::Cache);
        match problems.len() {
            0 => Ok(()),
            1 => Err(Failure {
                message: problems.remove(0),
                notes: Vec::new(),
            }
            .into()),
            n => Err(Failure {
                message: format!("the policy refuses the sources of {n} locked plugins"),
                notes: problems,
            }
            .into()),
        }
    }

    /// Why each plugin of `lock` does not pass `policy`'s `[sources] require_signed`, its
    /// objects read `from` the cache or afresh (one line each; empty when all pass, or when
    /// the policy requires nothing).
    pub fn unsigned_sources(
        &self,
        policy: &Policy,
        lock: &Lock,
        manifest: Option<&Manifest>,
        network: Network,
        from: ObjectsFrom,
    ) -> Vec<String> {
        if policy.source_signers().is_empty() {
            return Vec::new();
        }
        let settings = self.settings(network);
        let outcomes = berth_resolver::git_objects(
            &self.store,
            &settings,
            &self.printer,
            lock,
            manifest,
            from,
        );
        let mut problems = Vec::new();
        for (locked, outcome) in lock.plugins.iter().zip(outcomes) {
            let name = &locked.name;
            let objects = match &outcome.objects {
                Err(e) => {
                    problems.push(format!(
                        "plugin `{name}`: could not read its commit to check its signature: {e}"
                    ));
                    continue;
                }
                Ok(objects) => objects.as_ref().map(signed),
            };
            problems.extend(unsigned_source(
                policy,
                name,
                &locked.source,
                objects.as_ref(),
            ));
        }
        problems
    }
}

fn signed(objects: &GitObjects) -> SignedObjects<'_> {
    SignedObjects {
        rev: &objects.rev,
        commit: &objects.commit,
        tag: objects
            .tag
            .as_ref()
            .map(|t| (t.name.as_str(), t.object.as_slice())),
    }
}
