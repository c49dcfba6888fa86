//! From a source to the URL that is fetched, and the names derived from it.

use berth_lockfile_schema::{Source, redact};
use sha2::{Digest, Sha256};

use crate::error::ResolveError;

/// The git URL of a git source, `${VAR}` references still in it.
pub(crate) fn git_url(source: &Source, github_url: &str) -> Option<String> {
    match source {
        Source::GitHub { owner, repo, .. } => Some(format!(
            "{}/{owner}/{repo}.git",
            github_url.trim_end_matches('/')
        )),
        Source::Git { url } => Some(url.clone()),
        Source::Archive { .. } | Source::Local { .. } => None,
    }
}

/// Replaces every `${NAME}` with the variable's value. Unset variables are an error.
pub(crate) fn expand_env(text: &str) -> Result<String, ResolveError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        let value = std::env::var(name).map_err(|_| ResolveError::MissingEnv {
            name: name.to_owned(),
        })?;
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The cache folder name of a git URL: the repository's name and 16 hex digits of the
/// sha256 of the URL without credentials (a rotated token keeps its cache).
pub(crate) fn cache_dir_name(url: &str) -> String {
    let key = redact(url).text;
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let name: String = repo_name(url)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    format!("{}-{hex}", if name.is_empty() { "repo" } else { &name })
}

/// The last path component of a git URL without `.git`: the folder name a clone gets.
pub(crate) fn repo_name(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let path = url[..end].trim_end_matches('/');
    let last = path.rsplit(['/', ':']).next().unwrap_or(path);
    last.strip_suffix(".git").unwrap_or(last).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_sources_expand_under_the_base() {
        let source = Source::parse("github:acme/tools/plugins/x").expect("valid");
        assert_eq!(
            git_url(&source, "http://127.0.0.1:9/git/").as_deref(),
            Some("http://127.0.0.1:9/git/acme/tools.git")
        );
    }

    #[test]
    fn repo_names() {
        assert_eq!(repo_name("https://h/o/review-tools.git"), "review-tools");
        assert_eq!(repo_name("git@h:o/r.git"), "r");
        assert_eq!(repo_name("file:///srv/repo/"), "repo");
    }

    #[test]
    fn cache_names_ignore_credentials() {
        assert_eq!(
            cache_dir_name("https://u:one@h/o/r.git"),
            cache_dir_name("https://u:two@h/o/r.git")
        );
        assert_ne!(
            cache_dir_name("https://h/o/r.git"),
            cache_dir_name("https://h/p/r.git")
        );
        assert!(cache_dir_name("https://h/o/r.git").starts_with("r-"));
    }

    #[test]
    fn env_references_expand() {
        // SAFETY-free: set_var is safe to call in a single-threaded test of this crate's
        // own variable name.
        let name = "BERTH_TEST_EXPAND_TOKEN";
        assert!(matches!(
            expand_env(&format!("https://x:${{{name}}}@h/r")),
            Err(ResolveError::MissingEnv { .. })
        ));
        assert_eq!(expand_env("https://h/r").expect("no vars"), "https://h/r");
    }
}
