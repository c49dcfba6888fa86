//! The git objects every locked plugin's commit can be signed in, for a front end that
//! checks signatures (`[sources] require_signed`); the resolver judges nothing.

use berth_lockfile_schema::{Lock, Manifest, PluginRequest};
use berth_store::Store;

use crate::context::{Env, Reporter, Settings, run_parallel};
use crate::error::ResolveError;
use crate::sources::{GitObjects, ObjectsFrom, kind_of};

/// One locked plugin's objects.
#[derive(Debug)]
pub struct ObjectsOutcome {
    /// The plugin's name.
    pub name: String,
    /// Its commit's objects; `None` when its pin is not a git commit (an archive, a local
    /// folder, an npm package).
    pub objects: Result<Option<GitObjects>, ResolveError>,
}

/// Reads the objects of every plugin of `lock` (in its order) `from` the cache or afresh.
pub fn git_objects(
    store: &Store,
    settings: &Settings,
    reporter: &dyn Reporter,
    lock: &Lock,
    manifest: Option<&Manifest>,
    from: ObjectsFrom,
) -> Vec<ObjectsOutcome> {
    let env = Env::new(store, settings, reporter);
    run_parallel(&lock.plugins, settings.jobs, |i, locked| {
        let request: Option<&PluginRequest> = manifest
            .and_then(|m| m.plugins.get(i))
            .filter(|r| locked.satisfies(r));
        ObjectsOutcome {
            name: locked.name.clone(),
            objects: kind_of(&locked.pin)
                .load(&env, locked, request)
                .git_objects(from),
        }
    })
}
