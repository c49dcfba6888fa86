//! What `plugins diff` says of an MCP server package's npm provenance when a package of
//! its closure moved to another version: built from another repository, signed by another
//! workflow, or without the provenance the old version had. Read from the two locks'
//! records, which `lock` verified.

use berth_lockfile_schema::{LockedNpmPackage, LockedPayload};
use serde::Serialize;

/// One npm package whose new version's provenance names another build than its old one.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct ProvenanceChange {
    /// The npm package (of the closure).
    pub package: String,
    /// Its old version, which had a provenance.
    pub from_version: String,
    /// Its new version.
    pub to_version: String,
    /// `repository` (built from another one), `workflow` (signed by another workflow
    /// file) or `lost` (no provenance now).
    pub change: &'static str,
    /// What the old provenance named: the repository, or the workflow.
    pub from: Option<String>,
    /// What the new one names; `null` when it has none.
    pub to: Option<String>,
}

impl ProvenanceChange {
    /// The changes of provenance between the closures of `before` and `after`, for the
    /// packages (by name) whose version moved.
    pub fn between(before: &LockedPayload, after: &LockedPayload) -> Vec<Self> {
        after
            .npm
            .iter()
            .filter_map(|new| {
                let old = before
                    .npm
                    .iter()
                    .find(|old| old.name() == new.name() && old.version != new.version)?;
                Self::of(old, new)
            })
            .collect()
    }

    fn of(old: &LockedNpmPackage, new: &LockedNpmPackage) -> Option<Self> {
        let was = old.provenance.as_ref()?;
        let (change, from, to) = match &new.provenance {
            None => ("lost", was.repository.clone(), None),
            Some(now) if now.repository != was.repository => {
                ("repository", was.repository.clone(), now.repository.clone())
            }
            // A release built from another tag keeps its workflow file.
            Some(now) if now.workflow_file() != was.workflow_file() => {
                ("workflow", was.workflow.clone(), now.workflow.clone())
            }
            Some(_) => return None,
        };
        Some(ProvenanceChange {
            package: new.name().to_owned(),
            from_version: old.version.clone(),
            to_version: new.version.clone(),
            change,
            from,
            to,
        })
    }

    /// `` `fake-mcp` 1.2.0 was built from another repository, `B` (1.1.0: `A`) ``.
    pub fn describe(&self) -> String {
        let (package, old, new) = (&self.package, &self.from_version, &self.to_version);
        let shown =
            |v: &Option<String>| v.as_deref().map_or("none".to_owned(), |v| format!("`{v}`"));
        match self.change {
            "lost" => format!(
                "`{package}` {new} has no provenance ({old} had one, built from {})",
                shown(&self.from)
            ),
            "repository" => format!(
                "`{package}` {new} was built from another repository, {} ({old}: {})",
                shown(&self.to),
                shown(&self.from)
            ),
            _ => format!(
                "`{package}` {new} was signed by another workflow, {} ({old}: {})",
                shown(&self.to),
                shown(&self.from)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use berth_lockfile_schema::{LockedNpmPackage, NpmProvenance};

    use super::*;

    fn package(version: &str, workflow: Option<&str>) -> LockedNpmPackage {
        LockedNpmPackage {
            path: "node_modules/fake-mcp".to_owned(),
            name: None,
            version: version.to_owned(),
            url: format!("https://registry.example/fake-mcp/-/fake-mcp-{version}.tgz"),
            integrity: "sha512-AAAA".to_owned(),
            published: None,
            signature: None,
            provenance: workflow.map(|w| NpmProvenance {
                repository: Some("https://github.com/o/r".to_owned()),
                commit: None,
                workflow: Some(w.to_owned()),
                issuer: None,
                log_index: 1,
                url: format!("https://registry.example/-/npm/v1/attestations/fake-mcp@{version}"),
            }),
        }
    }

    #[test]
    fn another_tag_of_the_same_workflow_is_no_change_another_file_and_none_are() {
        let release = "https://github.com/o/r/.github/workflows/release.yml";
        let old = package("1.0.0", Some(&format!("{release}@refs/tags/v1.0.0")));
        let tagged = package("1.1.0", Some(&format!("{release}@refs/tags/v1.1.0")));
        assert_eq!(ProvenanceChange::of(&old, &tagged), None);
        let other = package(
            "1.1.0",
            Some("https://github.com/o/r/.github/workflows/x.yml@main"),
        );
        let change = ProvenanceChange::of(&old, &other).expect("another workflow");
        assert_eq!(change.change, "workflow");
        assert!(
            change.describe().starts_with("`fake-mcp` 1.1.0 was signed by another workflow, `https://github.com/o/r/.github/workflows/x.yml@main`"),
            "{}",
            change.describe()
        );
        let lost = ProvenanceChange::of(&old, &package("1.1.0", None)).expect("lost");
        assert_eq!((lost.change, lost.to), ("lost", None));
        assert_eq!(
            ProvenanceChange::of(&package("1.0.0", None), &other),
            None,
            "none had none"
        );
    }
}
