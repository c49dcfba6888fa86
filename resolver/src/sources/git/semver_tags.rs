//! `version = "^1.2"`: the highest tag (`v1.2.3` or `1.2.3`) a semver range matches.

use semver::{Version, VersionReq};

/// Every tag `range` matches among `tags`, best first (at least one), or the newest
/// semver tags (for an error).
pub(crate) fn candidates<'a>(
    range: &VersionReq,
    tags: impl Iterator<Item = &'a str>,
) -> Result<Vec<String>, Vec<String>> {
    let mut versions: Vec<(Version, &str)> = tags
        .filter_map(|tag| {
            let bare = tag.strip_prefix('v').unwrap_or(tag);
            Version::parse(bare).ok().map(|v| (v, tag))
        })
        .collect();
    // Highest first; for equal versions (`v1.2.0` and `1.2.0`) prefer the `v` form, then name.
    versions.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| b.1.starts_with('v').cmp(&a.1.starts_with('v')))
            .then_with(|| a.1.cmp(b.1))
    });
    let matching: Vec<String> = versions
        .iter()
        .filter(|(v, _)| range.matches(v))
        .map(|(_, tag)| (*tag).to_owned())
        .collect();
    if matching.is_empty() {
        return Err(versions
            .iter()
            .take(5)
            .map(|(_, t)| (*t).to_owned())
            .collect());
    }
    Ok(matching)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(s: &str) -> VersionReq {
        VersionReq::parse(s).expect("valid range")
    }

    /// The best tag a range matches.
    fn pick<'a>(
        range: &VersionReq,
        tags: impl Iterator<Item = &'a str>,
    ) -> Result<String, Vec<String>> {
        candidates(range, tags).map(|mut all| all.swap_remove(0))
    }

    #[test]
    fn highest_match_wins_and_prereleases_need_asking() {
        let tags = [
            "v1.2.0",
            "v1.4.0",
            "v2.0.0",
            "1.3.0",
            "v1.5.0-beta.1",
            "latest",
            "v0.9.0",
        ];
        assert_eq!(
            pick(&req("^1.2"), tags.iter().copied()),
            Ok("v1.4.0".into())
        );
        assert_eq!(pick(&req("~1.3"), tags.iter().copied()), Ok("1.3.0".into()));
        assert_eq!(
            pick(&req(">=1.5.0-beta.0, <2"), tags.iter().copied()),
            Ok("v1.5.0-beta.1".into())
        );
        assert_eq!(pick(&req("^2"), tags.iter().copied()), Ok("v2.0.0".into()));
        let nearest = pick(&req("^3"), tags.iter().copied()).expect_err("none");
        assert_eq!(nearest[0], "v2.0.0");
        assert!(!nearest.contains(&"latest".to_owned()));
        assert_eq!(
            candidates(&req("^1.3"), tags.iter().copied()),
            Ok(vec!["v1.4.0".to_owned(), "1.3.0".to_owned()]),
            "best first, for the release-age cutoff to pass over"
        );
    }
}
