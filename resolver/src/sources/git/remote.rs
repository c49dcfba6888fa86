//! A git remote as berth connects to it: its URL, credentials, policy and cancel flag.

use std::path::PathBuf;

use gix::remote::Direction;

use berth_transport::http::Upstream;

use crate::error::ResolveError;
use berth_transport::policy::{Refusal, refusal_in};

/// One remote as the resolver uses it: the URL to connect to (credentials expanded) and the
/// URL to show (credentials removed).
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    /// The URL: fetched, shown and scrubbed through one value.
    pub url: berth_transport::url::SourceUrl,
    /// The server's source policy, if any: redirects must stay within it.
    pub policy: Option<std::sync::Arc<berth_transport::policy::FetchPolicy>>,
    /// For `~/.netrc`.
    pub home: Option<PathBuf>,
    /// Stops a fetch that is receiving a pack (gix's interrupt flag).
    pub cancel: crate::context::Cancel,
}

impl Remote {
    /// Under a source policy, asks the remote for its refs once over the policy's HTTP
    /// client, which checks every redirect: a redirect the policy refuses is refused
    /// before git connects, and so is any other, since the URL git fetches must be the
    /// one the policy checked (give the server the URL the redirect leads to).
    pub(crate) fn check_redirects(&self) -> Result<(), ResolveError> {
        let (Some(policy), Some(url)) = (&self.policy, self.url.parsed()) else {
            return Ok(());
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Ok(());
        }
        let refused = |why: Refusal| ResolveError::Refused {
            url: self.url.shown.clone(),
            why,
        };
        let client = policy.client().map_err(|cause| ResolveError::Fetch {
            url: self.url.shown.clone(),
            cause,
        })?;
        let probe = url::Url::parse(&format!(
            "{}/info/refs?service=git-upload-pack",
            url.as_str().trim_end_matches('/')
        ))
        .map_err(|source| ResolveError::InvalidUrl {
            url: self.url.shown.clone(),
            source,
        })?;
        let response = match client.get(probe.as_str()).send() {
            Ok(response) => response,
            Err(e) => {
                return match refusal_in(&e) {
                    Some(why) => Err(refused(why)),
                    // Not a policy matter: git reports the failure in its own words.
                    None => Ok(()),
                };
            }
        };
        if *response.url() != probe {
            return Err(refused(Refusal::GitRedirect {
                to: berth_transport::url::scrub(response.url().as_str(), &self.url.secrets)
                    .trim_end_matches("/info/refs?service=git-upload-pack")
                    .to_owned(),
            }));
        }
        Ok(())
    }

    /// Under a source policy, git over http(s) follows no redirect (the preflight checked
    /// the URL it fetches) and connects only through the policy's resolver, so a name that
    /// resolves to an internal address between the preflight and the fetch is refused too.
    fn policy_transport_options(&self, remote: &gix::Remote<'_>) -> Option<Box<dyn std::any::Any>> {
        use gix::protocol::transport::client::blocking_io::http;
        let policy = self.policy.as_ref()?;
        let url = self
            .url
            .parsed()
            .filter(|u| matches!(u.scheme(), "http" | "https"))?;
        let mut options = remote
            .repo()
            .transport_options(url.as_str(), None)
            .ok()
            .flatten()
            .and_then(|o| o.downcast::<http::Options>().ok())
            .map_or_else(http::Options::default, |o| *o);
        options.follow_redirects = http::options::FollowRedirects::None;
        let resolver = policy.resolver();
        let backend = http::reqwest::Options {
            configure_client: Some(Box::new(move |builder| {
                Ok(builder.dns_resolver(resolver.clone()))
            })),
            configure_request: None,
        };
        options.backend = Some(std::sync::Arc::new(std::sync::Mutex::new(backend)));
        Some(Box::new(options))
    }

    /// `error`, unless the fetch failed because it was cancelled.
    pub(crate) fn cancelled_or(&self, error: ResolveError) -> ResolveError {
        if self.cancel.is_cancelled() {
            ResolveError::Cancelled
        } else {
            error
        }
    }

    /// Connects for fetching, with berth's credentials: the URL's own, then `~/.netrc`,
    /// then the git credential helpers of the user's configuration. Credentials go over
    /// plain `http://` only to this machine.
    pub(crate) fn connect<'r>(
        &self,
        remote: &'r gix::Remote<'r>,
    ) -> Result<
        gix::remote::Connection<
            'r,
            'static,
            'r,
            Box<dyn gix::protocol::transport::client::blocking_io::Transport + Send>,
        >,
        ResolveError,
    > {
        self.check_redirects()?;
        let mut connection = remote
            .connect(Direction::Fetch)
            .map_err(|e| fetch_error(self, &e))?;
        if let Some(options) = self.policy_transport_options(remote) {
            connection = connection.with_transport_options(options);
        }
        let mut fallback = connection.configured_credentials_for_current_url();
        let home = self.home.clone();
        let own = self.url.credentials();
        Ok(connection.with_credentials(move |action| {
            if let gix::credentials::helper::Action::Get(ctx) = &action {
                // The transport may pass only a URL; split it to learn protocol and host.
                let mut ctx = ctx.clone();
                if ctx.host.is_none() {
                    let _ = ctx.destructure_url_in_place(false);
                }
                let protocol = ctx.protocol.as_deref().unwrap_or_default();
                let host_port = ctx.host.as_deref().unwrap_or_default();
                let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
                if !berth_transport::auth::may_send_password(protocol, host) {
                    // Never send a password in clear text across a network.
                    return Ok(None);
                }
                if let Some((username, password)) = own
                    .clone()
                    .or_else(|| berth_transport::auth::netrc(host, home.as_deref()))
                {
                    return Ok(Some(gix::credentials::protocol::Outcome {
                        identity: gix::sec::identity::Account {
                            username,
                            password,
                            oauth_refresh_token: None,
                        },
                        next: ctx.into(),
                    }));
                }
            }
            fallback(action)
        }))
    }
}

pub(crate) fn fetch_error(remote: &Remote, e: &gix::Error) -> ResolveError {
    let url = remote.url.shown.clone();
    if let Some(why) = e.iter_errors().find_map(refusal_in) {
        return ResolveError::Refused { url, why };
    }
    if let Some(why) = berth_transport::http::unreachable_reason(e.iter_errors()) {
        return ResolveError::Unreachable {
            url,
            why: remote.url.scrub(&why),
        };
    }
    let cause = Upstream::with_causes(&error_chain(e), &remote.url, e.iter_errors());
    if e.iter_errors().any(berth_transport::http::is_timeout) {
        ResolveError::Timeout { url, cause }
    } else {
        ResolveError::Fetch { url, cause }
    }
}

/// A gix error about the local cache (no credentials in it), shown with its causes.
#[derive(Debug)]
pub(crate) struct CacheError(pub gix::Error);

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&error_chain(&self.0))
    }
}

impl std::error::Error for CacheError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The messages of an error and its causes, joined, without repeats.
pub(crate) fn error_chain(e: &gix::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.iter_errors() {
        let text = cause.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_transport::policy::FetchPolicy;

    /// The preflight aside, gix's own connection goes through the policy's resolver, and
    /// its refusal reaches the caller as the policy's (the server's 403), not as a failed
    /// fetch (502): what a name that turns internal between the preflight and the fetch
    /// meets.
    #[test]
    fn gix_connections_are_refused_by_the_policy_resolver() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = gix::init_bare(dir.path()).expect("init");
        // Port 9 of this machine: were the address let through, nothing would leave it.
        let remote = Remote {
            url: berth_transport::url::SourceUrl::new("https://localhost:9/acme/tools.git")
                .expect("url"),
            policy: Some(std::sync::Arc::new(FetchPolicy::new(
                vec!["localhost".into()],
                false,
            ))),
            home: None,
            cancel: crate::context::Cancel::new(),
        };
        let gix_remote = repo.remote_at(remote.url.fetch.as_str()).expect("remote");
        let options = remote
            .policy_transport_options(&gix_remote)
            .expect("options under a policy");
        let error = gix_remote
            .connect(Direction::Fetch)
            .expect("connecting over http is lazy")
            .with_transport_options(options)
            .ref_map(gix::progress::Discard, Default::default())
            .expect_err("refused");
        let error = fetch_error(&remote, &error);
        assert!(
            matches!(
                error,
                ResolveError::Refused {
                    why: Refusal::Address { .. },
                    ..
                }
            ),
            "{error}"
        );
    }
}
