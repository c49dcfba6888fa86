//! Release age for a registry document (`exclude-newer`): when a version was published
//! (`time[version]`), and which version a request takes when the one it picks is newer
//! than the cutoff, as npm's `--before` decides.

use serde_json::Value;

use super::Allowed;
use crate::context::{ActiveCutoff, show_seconds};

/// When `version` was published, in seconds: the document's `time[version]`.
pub(crate) fn published(document: &Value, version: &str) -> Option<i64> {
    let text = document.get("time")?.get(version)?.as_str()?;
    text.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// `1.1.0 (published 2026-12-01)`.
pub(crate) fn described(document: &Value, version: &str) -> String {
    match published(document, version) {
        Some(at) => format!("{version} (published {})", show_seconds(at)),
        None => format!("{version} (its publication time unknown)"),
    }
}

/// The version to lock instead of `best` (what the request picks without a cutoff), and
/// what was passed over: `best` when it was published before the cutoff; else, for a
/// dist-tag or a range, the highest version `rule` allows that was (a version without a
/// publication time counts as too new); an exact version is an error.
pub(super) fn under_cutoff(
    package: &str,
    document: &Value,
    best: &str,
    rule: &Allowed,
    cutoff: &ActiveCutoff,
) -> Result<(String, Option<String>), String> {
    let before = |version: &str| published(document, version).is_some_and(|t| !cutoff.excludes(t));
    if before(best) {
        return Ok((best.to_owned(), None));
    }
    let passed = described(document, best);
    let allows = |v: &semver::Version| match rule {
        Allowed::Exactly => false,
        Allowed::UpTo(tagged) => semver::Version::parse(tagged)
            .is_ok_and(|t| *v <= t && (v.pre.is_empty() || !t.pre.is_empty())),
        Allowed::Matching(req) => req.matches(v),
    };
    let versions = document.get("versions").and_then(Value::as_object);
    let older = versions
        .into_iter()
        .flat_map(|map| map.keys())
        .filter_map(|k| semver::Version::parse(k).ok().map(|v| (v, k)))
        .filter(|(v, k)| allows(v) && before(k))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, k)| k.clone());
    match (older, rule) {
        (Some(version), _) => Ok((version, Some(passed))),
        (None, Allowed::Exactly) => Err(format!(
            "`{package}@{best}` was published {}, after the cutoff {}; pin an older version, or move the cutoff",
            published(document, best).map_or_else(
                || "at a time the registry does not give".to_owned(),
                show_seconds
            ),
            cutoff.describe()
        )),
        (None, _) => Err(format!(
            "no version of `{package}` it allows was published before the cutoff {} (the newest is {passed}); move the cutoff, or ask for an older version",
            cutoff.describe()
        )),
    }
}

#[cfg(test)]
mod tests {
    use berth_lockfile_schema::release_age::Cutoff;
    use serde_json::json;

    use super::super::pick;
    use crate::context::ActiveCutoff;

    #[test]
    fn a_cutoff_falls_back_as_npm_before_does_and_refuses_an_exact_new_version() {
        use base64::Engine as _;
        let integrity = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD.encode([7u8; 64])
        );
        let entry = |v: &str| {
            json!({"dist": {"tarball": format!("https://r.example/t-{v}.tgz"),
                            "integrity": integrity}})
        };
        let d = json!({
            "dist-tags": {"latest": "2.0.0"},
            "versions": {"1.0.0": entry("1.0.0"), "1.1.0": entry("1.1.0"),
                         "2.0.0-rc.1": entry("2.0.0-rc.1"), "2.0.0": entry("2.0.0")},
            "time": {"1.0.0": "2026-10-01T00:00:00.000Z", "1.1.0": "2026-11-01T00:00:00.000Z",
                     "2.0.0-rc.1": "2026-11-10T00:00:00.000Z", "2.0.0": "2026-12-01T00:00:00.000Z"},
        });
        let cutoff = ActiveCutoff::recorded(
            &Cutoff::from_lock("2026-11-24T00:00:00Z", Some("7 days")).expect("valid"),
        );
        let v = |w: Option<&str>| pick("t", &d, w, Some(&cutoff)).map(|p| (p.version, p.held_back));
        let held = Some("2.0.0 (published 2026-12-01)".to_owned());
        assert_eq!(
            v(None),
            Ok(("1.1.0".to_owned(), held.clone())),
            "the tagged version's line, no pre-release"
        );
        assert_eq!(v(Some(">=1")), Ok(("1.1.0".to_owned(), held)));
        assert_eq!(v(Some("1.0.0")), Ok(("1.0.0".to_owned(), None)));
        let err = v(Some("2.0.0")).expect_err("exact and new");
        assert!(
            err.contains("`t@2.0.0` was published 2026-12-01, after the cutoff 2026-11-24"),
            "{err}"
        );
        assert_eq!(
            pick("t", &d, None, None).map(|p| p.version),
            Ok("2.0.0".to_owned())
        );
    }
}
