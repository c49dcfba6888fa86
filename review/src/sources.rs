//! The plugin files that commands and arguments name, for a review.

use std::collections::BTreeSet;

use berth_plugin::expand::ROOT_VARIABLES;
use berth_plugin::model::plugin_path;

/// The plugin-relative paths of `files` that `text` names: each word (split as a shell
/// splits, quotes removed, also at `=`) that is a plugin-root variable followed by `/path`
/// (`${CLAUDE_PLUGIN_ROOT}/x`, `$CLAUDE_PLUGIN_ROOT/x`, and the other root variables), or a
/// relative path (`./x`, `scripts/x.sh`), and names one of `files`. `..` is never followed.
pub(crate) fn named_paths(text: &str, files: &BTreeSet<&str>, out: &mut BTreeSet<String>) {
    for word in std::iter::once(text.to_owned()).chain(words(text)) {
        if let Some(rel) = word_path(&word)
            && files.contains(rel.as_str())
        {
            out.insert(rel);
        }
    }
}

/// The words of `text` as a shell would split them, quotes removed; operators
/// (`; | & ( ) < >`, backquotes) and `=` also end a word.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c.is_whitespace() || ";|&()<>`=".contains(c) => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            None => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The plugin-relative path a word names, if it names one.
fn word_path(word: &str) -> Option<String> {
    for braced in ROOT_VARIABLES {
        let bare = format!("${}", &braced[2..braced.len() - 1]);
        for var in [braced, bare.as_str()] {
            if let Some(rest) = word.strip_prefix(var) {
                return rest.strip_prefix('/').and_then(plugin_path);
            }
        }
    }
    if word.starts_with(['$', '-', '~']) || word.contains("://") {
        return None;
    }
    plugin_path(word)
}

#[cfg(test)]
mod tests {
    use super::{BTreeSet, named_paths};

    #[test]
    fn words_and_paths() {
        let files: BTreeSet<&str> = ["scripts/a.sh", "b.py", "my file.sh", "c.json"].into();
        let mut out = BTreeSet::new();
        named_paths(
            r#"bash "${CLAUDE_PLUGIN_ROOT}"/scripts/a.sh && python3 ./b.py --x=$PLUGIN_ROOT/c.json; sh '$SKILL_ROOT/my file.sh' ../b.py /b.py"#,
            &files,
            &mut out,
        );
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            ["b.py", "c.json", "my file.sh", "scripts/a.sh"]
        );
        let mut none = BTreeSet::new();
        named_paths(
            "scripts/../b.py $HOME/b.py ${CLAUDE_PLUGIN_ROOT}/../b.py",
            &files,
            &mut none,
        );
        assert!(none.is_empty(), "{none:?}");
    }
}
