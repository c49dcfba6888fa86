//! Which sources a server may fetch: https on allowed hosts by default; local folders,
//! `file://` and plain `http://` only when the operator allows local sources.

use std::net::IpAddr;

use berth_lockfile_schema::{Location, Source};
use berth_transport::policy::FetchPolicy;
use berth_transport::url::SourceUrl;

use crate::error::AppError;

/// The default hosts sources may come from.
pub const DEFAULT_ALLOWED_HOSTS: [&str; 3] = ["github.com", "gitlab.com", "bitbucket.org"];

/// The operator's rules for sources.
#[derive(Debug, Clone)]
pub struct SourcePolicy {
    /// Hosts https sources may use.
    pub allowed_hosts: Vec<String>,
    /// Admit local folders, `file://`, and `http://` on any host.
    pub allow_local: bool,
    /// Where `github:` sources point.
    pub github_url: String,
    /// Host names the operator pinned to addresses (`--resolve`).
    pub pins: Vec<HostPin>,
}

/// A host name the operator pins to an address (`--resolve HOST=ADDR`, as curl's
/// `--resolve` without the port): every fetch from that name connects to that address,
/// which is trusted as given, since it is the operator's own mapping and not an answer
/// from DNS. A pin does not allow the host; the allowed hosts still decide that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPin {
    /// The host name, lower-case.
    pub host: String,
    /// Where it connects.
    pub address: IpAddr,
}

/// Why a `--resolve` value is not a pin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPinError {
    /// Not `HOST=ADDR`.
    #[error("`{0}` is not `HOST=ADDR`; write it as `github.com=140.82.112.3`")]
    Shape(String),
    /// A host that is not a plain name (a port, a path, a character no name has).
    #[error(
        "`{0}` is not a host name; write the name alone, without scheme, port or path (a pin holds for every port)"
    )]
    Host(String),
    /// A host that is an address: fetches from an address never ask DNS.
    #[error("`{0}` is an address; `--resolve` pins a host name to an address")]
    HostIsAddress(String),
    /// An address that is not an IPv4 or IPv6 address.
    #[error("`{0}` is not an IP address; write `HOST=1.2.3.4` or `HOST=::1`")]
    Address(String),
}

impl std::str::FromStr for HostPin {
    type Err = HostPinError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (host, address) = text
            .split_once('=')
            .ok_or_else(|| HostPinError::Shape(text.to_owned()))?;
        let (host, address) = (host.trim(), address.trim());
        if host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok()
        {
            return Err(HostPinError::HostIsAddress(host.to_owned()));
        }
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        {
            return Err(HostPinError::Host(host.to_owned()));
        }
        let address = address
            .strip_prefix('[')
            .and_then(|a| a.strip_suffix(']'))
            .unwrap_or(address)
            .parse()
            .map_err(|_| HostPinError::Address(address.to_owned()))?;
        Ok(Self {
            host: host.to_ascii_lowercase(),
            address,
        })
    }
}

impl SourcePolicy {
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
    /// Every pin of one name applies together: its addresses, in the order given.
    pub fn fetch_policy(&self) -> FetchPolicy {
        let mut pinned: Vec<(&str, Vec<IpAddr>)> = Vec::new();
        for pin in &self.pins {
            match pinned.iter_mut().find(|(host, _)| *host == pin.host) {
                Some((_, addresses)) => addresses.push(pin.address),
                None => pinned.push((&pin.host, vec![pin.address])),
            }
        }
        pinned.into_iter().fold(
            FetchPolicy::new(self.allowed_hosts.clone(), self.allow_local),
            |policy, (host, addresses)| policy.pin(host, addresses),
        )
    }

    /// Checks the host the source will really be fetched from: the URL is parsed once,
    /// by the same parser the HTTP clients use, so `https://evil.example\@github.com/`
    /// is checked as `evil.example`, where it would go.
    fn check_host(&self, source: &Source) -> Result<(), AppError> {
        let url = match source.location(&self.github_url) {
            Location::Url(url) => url,
            Location::Folder(path) => {
                return if self.allow_local {
                    Ok(())
                } else {
                    Err(AppError::forbidden(format!(
                        "local source `{path}` refused: this server does not allow local sources"
                    )))
                };
            }
            Location::Marketplace {
                plugin,
                marketplace,
            } => {
                return Err(AppError::bad_request(format!(
                    "`{plugin}@{marketplace}`: this server has no marketplace `{marketplace}`; give the plugin's own source (git, archive) instead"
                )));
            }
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
    use super::{DEFAULT_ALLOWED_HOSTS, HostPin, HostPinError, IpAddr, Source, SourcePolicy};

    fn policy(allow_local: bool) -> SourcePolicy {
        SourcePolicy {
            allowed_hosts: DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
            allow_local,
            github_url: "https://github.com".into(),
            pins: Vec::new(),
        }
    }

    fn check(p: &SourcePolicy, source: &str) -> Result<(), u16> {
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

    #[test]
    fn pins_are_host_equals_address() {
        let pin = |text: &str| text.parse::<HostPin>();
        assert_eq!(
            pin("GitHub.com=127.0.0.1"),
            Ok(HostPin {
                host: "github.com".into(),
                address: "127.0.0.1".parse().expect("ip"),
            })
        );
        assert_eq!(
            pin("git.example=[::1]").map(|p| p.address),
            Ok("::1".parse().expect("ip"))
        );
        assert_eq!(
            pin("git.example=fd00::2").map(|p| p.address),
            Ok("fd00::2".parse().expect("ip"))
        );
        assert!(matches!(pin("github.com"), Err(HostPinError::Shape(_))));
        assert!(matches!(
            pin("github.com:443=1.2.3.4"),
            Err(HostPinError::Host(_))
        ));
        assert!(matches!(pin("=1.2.3.4"), Err(HostPinError::Host(_))));
        assert!(matches!(
            pin("https://github.com=1.2.3.4"),
            Err(HostPinError::Host(_))
        ));
        assert!(matches!(
            pin("10.0.0.1=1.2.3.4"),
            Err(HostPinError::HostIsAddress(_))
        ));
        assert!(matches!(
            pin("[::1]=1.2.3.4"),
            Err(HostPinError::HostIsAddress(_))
        ));
        assert!(matches!(
            pin("github.com=github.com"),
            Err(HostPinError::Address(_))
        ));
        assert!(matches!(
            pin("github.com=1.2.3.4:443"),
            Err(HostPinError::Address(_))
        ));
    }

    #[test]
    fn the_fetch_policy_gets_every_pin_of_a_name() {
        let mut p = policy(false);
        p.pins = [
            "github.com=127.0.0.1",
            "GITHUB.com=127.0.0.2",
            "gitlab.com=::1",
        ]
        .iter()
        .map(|t| t.parse().expect("pin"))
        .collect();
        let fetch = p.fetch_policy();
        assert_eq!(
            fetch.pinned["github.com"],
            [
                "127.0.0.1".parse::<IpAddr>().expect("ip"),
                "127.0.0.2".parse().expect("ip")
            ]
        );
        assert_eq!(
            fetch.pinned["gitlab.com"],
            ["::1".parse::<IpAddr>().expect("ip")]
        );
        assert_eq!(fetch.pinned.len(), 2);
    }
}
