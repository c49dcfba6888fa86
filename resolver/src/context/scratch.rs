//! The throw-away folders of one run: `verify` fetches each remote into a folder of its own
//! that nothing else uses and that goes when the run ends, each commit once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use berth_store::{Staging, unpoisoned};

use crate::error::ResolveError;

/// A run's throw-away folders, by key (a remote's URL).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    folders: Mutex<HashMap<String, Arc<ScratchFolder>>>,
}

/// One throw-away folder and what was fetched into it.
#[derive(Debug)]
pub(crate) struct ScratchFolder {
    /// The folder (shared: every user of the folder gets its failure).
    staging: Result<Staging, Arc<ResolveError>>,
    /// Each thing fetched into it (a commit), and whether that worked. Held while one is
    /// fetched, so fetches into one folder take turns.
    fetched: Mutex<HashMap<String, Result<(), Arc<ResolveError>>>>,
}

impl Scratch {
    /// The folder for `key`, made by `make` the first time.
    pub(crate) fn folder(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<Staging, ResolveError>,
    ) -> Arc<ScratchFolder> {
        let mut folders = unpoisoned(self.folders.lock());
        folders
            .entry(key.to_owned())
            .or_insert_with(|| {
                Arc::new(ScratchFolder {
                    staging: make().map_err(Arc::new),
                    fetched: Mutex::default(),
                })
            })
            .clone()
    }
}

impl ScratchFolder {
    /// The folder, or why it could not be made.
    pub(crate) fn path(&self) -> Result<&Path, Arc<ResolveError>> {
        self.staging.as_ref().map(Staging::path).map_err(Arc::clone)
    }

    /// Fetches `item` into the folder with `fetch` unless that was done (or failed) before;
    /// the outcome is shared by every caller.
    pub(crate) fn fetch_once(
        &self,
        item: &str,
        fetch: impl FnOnce(&Path) -> Result<(), ResolveError>,
    ) -> Result<(), Arc<ResolveError>> {
        let path = self.path()?;
        let mut fetched = unpoisoned(self.fetched.lock());
        if let Some(done) = fetched.get(item) {
            return done.clone();
        }
        let done = fetch(path).map_err(Arc::new);
        fetched.insert(item.to_owned(), done.clone());
        done
    }
}
