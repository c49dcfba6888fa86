//! "Did you mean" for names people type: manifest keys, source schemes, plugin and
//! marketplace names. Nearest by edit distance (an adjacent swap counts as one edit), at
//! most three.

/// The edit distance between `a` and `b`: insertions, deletions, substitutions and swaps of
/// two adjacent characters each count one.
pub fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Whether `typed` is close enough to `known` to suggest it: one edit for short names, two
/// from five characters on.
pub fn close(typed: &str, known: &str) -> bool {
    let allowed = if known.chars().count() < 5 { 1 } else { 2 };
    typed != known && distance(typed, known) <= allowed
}

/// The (at most three) `candidates` closest to `typed`, nearest first.
pub fn nearest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut found: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| close(typed, c))
        .map(|c| (distance(typed, c), c))
        .collect();
    found.sort();
    found.dedup();
    found.into_iter().take(3).map(|(_, c)| c).collect()
}

/// `; did you mean `A`, `B` or `C`?` for `found`, or nothing.
pub fn did_you_mean(found: &[&str]) -> String {
    let quoted: Vec<String> = found.iter().map(|f| format!("`{f}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [rest @ .., last] => format!("; did you mean {} or {last}?", rest.join(", ")),
    }
}

/// What to write instead of the source `text` that is none berth knows: the scheme it
/// mistyped (`gihtub:OWNER/REPO`), else the forms sources take.
pub(crate) fn source_hint(text: &str) -> String {
    let scheme = text
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| !s.is_empty());
    let meant = scheme.and_then(|s| {
        nearest(
            s,
            ["github", "https", "http", "git+https", "ssh", "git", "file"],
        )
        .first()
        .map(|m| format!("{m}{}", &text[s.len()..]))
    });
    if let Some(meant) = meant {
        format!("did you mean `{meant}`?")
    } else if text.contains("://") {
        "use an `https://`, `http://`, `git://`, `ssh://` or `file://` URL".to_owned()
    } else if text.matches('/').count() == 1 && !text.starts_with('/') {
        format!("write `github:{text}` for a GitHub repository or `./{text}` for a local folder")
    } else {
        format!(
            "write `github:OWNER/REPO` for a GitHub repository or `./{text}` for a local folder"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{close, did_you_mean, distance, nearest};

    #[test]
    fn swaps_count_once_and_short_names_need_a_near_match() {
        assert_eq!(distance("soruce", "source"), 1);
        assert_eq!(distance("gihtub", "github"), 1);
        assert_eq!(distance("offical", "official"), 1);
        assert!(close("reff", "ref"));
        assert!(close("rev", "ref"));
        assert!(!close("ref", "ref"), "a name is not a typo of itself");
        assert!(!close("abc", "xyz"));
        assert_eq!(
            nearest("code-reveiw", ["code-review", "code-simplifier", "commit"]),
            ["code-review"]
        );
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(did_you_mean(&["a", "b"]), "; did you mean `a` or `b`?");
    }
}
