//! Which store entries were scanned clean: an entry whose content the current scanner
//! found without a critical hidden character carries a verdict saying so (the store's
//! `meta-v1/<entry>.verdict`), so the commands that use a lock (`plugins show`, `run`,
//! `hooks run`, `materialize`, the server) scan only the entries that have none. Entries
//! are content-addressed and checked before use, so a verdict stays true; a new
//! [`SCANNER_VERSION`] has new words, and every entry is scanned again once. An entry with
//! a critical finding gets no verdict, whatever the policy: it is scanned, and refused or
//! warned about, each time.

use berth_lockfile_schema::LockedPlugin;
use berth_store::Store;

use super::chars::Severity;
use super::check::{Checked, UnderReview};
use super::hidden::SCANNER_VERSION;

/// The verdict's words, naming the scanner.
fn verdict() -> String {
    format!("berth hidden-unicode scan v{SCANNER_VERSION}: no critical finding")
}

/// Whether `locked`'s store entry was found clean by this scanner.
pub fn scanned_clean(store: &Store, locked: &LockedPlugin) -> bool {
    store.has_verdict(&locked.hash, &locked.name, &verdict())
}

/// Records a clean verdict for every plugin of `plugins` that `checked` scanned and found
/// no critical character in (best effort: a store that cannot be written is scanned again
/// next time).
pub fn remember_clean(store: &Store, plugins: &[UnderReview<'_>], checked: &Checked) {
    let words = verdict();
    for plugin in plugins.iter().filter(|p| p.scan) {
        let name = plugin.locked.name.as_str();
        let critical = checked
            .findings
            .iter()
            .any(|(p, f)| p == name && f.severity == Severity::Critical);
        if critical {
            continue;
        }
        if let Err(e) = store.record_verdict(&plugin.locked.hash, name, &words) {
            tracing::debug!("could not record the scan of plugin `{name}`: {e}");
        }
    }
}
