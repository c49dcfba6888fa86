//! Which sources a server may fetch: https on allowed hosts by default; local folders,
//! `file://` and plain `http://` only when the operator allows local sources.

use berth_lockfile_schema::Source;
use berth_resolver::{FetchPolicy, SourceUrl};

use crate::error::AppError;

/// The default hosts sources may come from.
pub const DEFAULT_ALLOWED_HOSTS: [&str; 3] = ["github.com", "gitlab.com", "bitbucket.org"];

/// The operator's rules for sources.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Hosts https sources may use.
    pub allowed_hosts: Vec<String>,
    /// Admit local folders, `file://`, and `http://` on any host.
    pub allow_local: bool,
    /// Where `github:` sources point.
    pub github_url: String,
}

impl Policy {
    /// Checks one source as a client sent it (`source` as written).
    pub fn check(&self, written: &str, source: &Source) -> Result<(), AppError> {
        self.check_literal(written)?;
        self.check_host(source)
    }

    /// Refuses `${VAR}` and credentials written in a source.
    pub fn check_literal(&self, written: &str) -> Result<(), AppError> {
        if written.contains("${") {
            return Err(AppError::bad_request(format!(
                "source `{}`: `${{VAR}}` is not expanded in sources sent to the server; give the server credentials through its ~/.netrc or git credential helpers",
                berth_lockfile_schema::redact(written).text
            )));
        }
        if berth_lockfile_schema::redact(written).removed_secret {
            return Err(AppError::bad_request(
                "a source with a credential written in it is refused; give the server credentials through its ~/.netrc or git credential helpers",
            ));
        }
        Ok(())
    }

    /// The rules as the resolver applies them to every URL and redirect it fetches.
    pub fn fetch_policy(&self) -> FetchPolicy {
        FetchPolicy::new(self.allowed_hosts.clone(), self.allow_local)
    }

    /// Checks the host the source will really be fetched from: the URL is parsed once,
    /// by the same parser the HTTP clients use, so `https://evil.example\@github.com/`
    /// is checked as `evil.example`, where it would go.
    fn check_host(&self, source: &Source) -> Result<(), AppError> {
        let url = match source {
            Source::Local { path } => {
                return if self.allow_local {
                    Ok(())
                } else {
                    Err(AppError::forbidden(format!(
                        "local source `{path}` refused: this server does not allow local sources"
                    )))
                };
            }
            Source::GitHub { owner, repo, .. } => {
                format!(
                    "{}/{owner}/{repo}.git",
                    self.github_url.trim_end_matches('/')
                )
            }
            Source::Git { url } | Source::Archive { url, .. } => url.clone(),
        };
        let parsed = SourceUrl::new(&url).map_err(|e| AppError::bad_request(e.to_string()))?;
        let Some(parsed) = parsed.parsed() else {
            return Err(AppError::forbidden(
                "`ssh` sources are refused; this server fetches https sources on allowed hosts",
            ));
        };
        self.fetch_policy()
            .check(parsed)
            .map_err(|why| AppError::forbidden(format!("source refused: {why}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow_local: bool) -> Policy {
        Policy {
            allowed_hosts: DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
            allow_local,
            github_url: "https://github.com".into(),
        }
    }

    fn check(p: &Policy, source: &str) -> Result<(), u16> {
        let parsed = Source::parse(source).expect("valid");
        p.check(source, &parsed).map_err(|e| e.status.as_u16())
    }

    #[test]
    fn defaults_admit_https_on_allowed_hosts_only() {
        let p = policy(false);
        assert_eq!(check(&p, "github:acme/tools"), Ok(()));
        assert_eq!(check(&p, "https://gitlab.com/g/r.git"), Ok(()));
        assert_eq!(check(&p, "https://evil.example/r.git"), Err(403));
        assert_eq!(check(&p, "http://github.com/r.git"), Err(403));
        assert_eq!(check(&p, "file:///srv/r"), Err(403));
        assert_eq!(check(&p, "./plugin"), Err(403));
        assert_eq!(check(&p, "git@github.com:o/r.git"), Err(403));
        assert_eq!(check(&p, "https://github.com/${TOKEN}/r"), Err(400));
        assert_eq!(check(&p, "https://u:pw@github.com/o/r"), Err(400));
        // The host is read as the HTTP client reads it: a backslash ends the authority.
        assert_eq!(
            check(&p, "https://evil.example\\@github.com/x.tar.gz"),
            Err(403)
        );
        assert_eq!(
            check(&p, "https://evil.example\\@github.com/o/r.git"),
            Err(403)
        );
        assert_eq!(check(&p, "https://GitHub.com/o/r.git"), Ok(()));
    }

    #[test]
    fn local_sources_when_allowed() {
        let p = policy(true);
        assert_eq!(check(&p, "./plugin"), Ok(()));
        assert_eq!(check(&p, "file:///srv/r"), Ok(()));
        assert_eq!(check(&p, "http://127.0.0.1:9/r.git"), Ok(()));
        assert_eq!(check(&p, "https://evil.example/r.git"), Err(403));
    }
}
