//! The server's source policy: which URLs, redirects and addresses a fetch may reach.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use berth_lockfile_schema::redact;

/// Which URLs a fetch may reach: the server's source policy, applied to the URL a source
/// names and to every redirect on the way (archives, wheels and git over http alike).
#[derive(Debug)]
pub struct FetchPolicy {
    /// Hosts `https` URLs may name.
    pub allowed_hosts: Vec<String>,
    /// Also `http://` and `file://` on any host (trusted setups).
    pub allow_local: bool,
    /// Names the operator pinned to addresses (`--resolve`), trusted as given: they are
    /// the operator's own mapping, not an answer from DNS.
    pub pinned: std::collections::HashMap<String, Vec<IpAddr>>,
    client: std::sync::OnceLock<Result<reqwest::blocking::Client, crate::http::Upstream>>,
}

impl FetchPolicy {
    /// The policy of `allowed_hosts` (https), plus plain http and `file://` anywhere when
    /// `allow_local`.
    pub fn new(allowed_hosts: Vec<String>, allow_local: bool) -> Self {
        Self {
            allowed_hosts,
            allow_local,
            pinned: std::collections::HashMap::new(),
            client: std::sync::OnceLock::new(),
        }
    }

    /// `self`, with `host` pinned to `addresses` (the operator's `--resolve`).
    pub fn pin(mut self, host: &str, addresses: Vec<IpAddr>) -> Self {
        self.pinned.insert(host.to_ascii_lowercase(), addresses);
        self
    }

    /// Why `url` may not be fetched, if it may not: its scheme and host, and the address
    /// when the host is one.
    pub fn check(&self, url: &url::Url) -> Result<(), Refusal> {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            self.check_address(host, ip)?;
        }
        match url.scheme() {
            "https"
                if self
                    .allowed_hosts
                    .iter()
                    .any(|h| h.eq_ignore_ascii_case(host)) =>
            {
                Ok(())
            }
            "https" => Err(Refusal::Host {
                host: host.to_owned(),
                allowed: self.allowed_hosts.clone(),
            }),
            "http" | "file" if self.allow_local => Ok(()),
            "file" => Err(Refusal::LocalFile {
                url: redact(url.as_str()).text,
            }),
            other => Err(Refusal::Scheme {
                scheme: other.to_owned(),
            }),
        }
    }

    /// Why a connection to `ip` (for `host`) may not be made, if it may not: internal
    /// addresses (see [`is_internal`]) are refused unless local sources are on.
    pub fn check_address(&self, host: &str, ip: IpAddr) -> Result<(), Refusal> {
        if self.allow_local || !is_internal(ip) {
            Ok(())
        } else {
            Err(Refusal::Address {
                host: host.to_owned(),
                address: ip,
            })
        }
    }

    /// The DNS resolver every connection under this policy goes through: the system's,
    /// then [`FetchPolicy::check_address`] on each address, so an allowed name that
    /// resolves to an internal address is refused before anything connects.
    pub fn resolver(self: &Arc<Self>) -> Arc<PolicyResolver> {
        Arc::new(PolicyResolver {
            policy: self.clone(),
        })
    }

    /// An HTTP client that checks every redirect against this policy before following it,
    /// and every address it connects to (made once per policy).
    pub fn client(
        self: &std::sync::Arc<Self>,
    ) -> Result<&reqwest::blocking::Client, crate::http::Upstream> {
        let policy = self.clone();
        self.client
            .get_or_init(move || {
                crate::http::client_builder()
                    .dns_resolver(policy.resolver())
                    .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                        if attempt.previous().len() >= 10 {
                            return attempt.error(Refusal::TooManyRedirects);
                        }
                        match policy.check(attempt.url()) {
                            Ok(()) => attempt.follow(),
                            Err(why) => {
                                let to = redact(attempt.url().as_str()).text;
                                attempt.error(Refusal::Redirect {
                                    to,
                                    why: Box::new(why),
                                })
                            }
                        }
                    }))
                    .build()
                    .map_err(|e| crate::http::Upstream::from_text(e.to_string()))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Why the source policy refuses a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// An https URL on a host that is not allowed.
    #[error("host `{host}` is not allowed (allowed: {})", .allowed.join(", "))]
    Host {
        /// The host, lower-case.
        host: String,
        /// The hosts that are.
        allowed: Vec<String>,
    },
    /// A local folder (a marketplace entry's path) while local sources are off.
    #[error("local folder `{path}` refused: this server does not allow local sources")]
    LocalPath {
        /// The path as the catalog gives it.
        path: String,
    },
    /// A `file://` URL while local sources are off.
    #[error("`file://` URL `{url}` refused: this server does not allow local sources")]
    LocalFile {
        /// The URL, credentials removed.
        url: String,
    },
    /// A scheme other than https (or http and file with local sources on).
    #[error("`{scheme}` URLs are refused; this server fetches https URLs on allowed hosts")]
    Scheme {
        /// The scheme.
        scheme: String,
    },
    /// A redirect to a URL the policy refuses.
    #[error("redirect to `{to}` refused: {why}")]
    Redirect {
        /// Where it led, credentials removed.
        to: String,
        /// Why that URL is refused.
        #[source]
        why: Box<Refusal>,
    },
    /// A git remote that redirects: git must fetch the URL the policy checked.
    #[error(
        "the server redirects to `{to}`; this server fetches git only from the URL it was given, so give that URL instead"
    )]
    GitRedirect {
        /// Where it led, credentials removed.
        to: String,
    },
    /// A host that is, or resolves to, an internal address.
    #[error(
        "`{host}` is at `{address}`, an internal address (loopback, private, link-local or unspecified); this server does not fetch from internal addresses"
    )]
    Address {
        /// The host as the URL names it.
        host: String,
        /// The address it is or resolves to.
        address: IpAddr,
    },
    /// A chain of more than 10 redirects.
    #[error("more than 10 redirects")]
    TooManyRedirects,
}

/// The policy's refusal among an error's causes (a redirect or an address refused inside
/// reqwest or gix), if that is why it failed.
pub fn refusal_in(error: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<Refusal>() {
            return Some(refused.clone());
        }
        source = e.source();
    }
    None
}

/// Whether `ip` is an address a server must not fetch from on a client's behalf:
/// loopback, private (RFC 1918, IPv6 unique local), link-local (169.254.0.0/16, where the
/// cloud metadata services answer, and fe80::/10), shared (100.64.0.0/10, Alibaba's
/// metadata service among them), unspecified, broadcast, multicast and `0.0.0.0/8`; IPv6
/// addresses that embed an IPv4 one (mapped, compatible, NAT64 of a private one) are
/// judged by it.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal_v4(v4);
            }
            let s = v6.segments();
            // ::a.b.c.d (deprecated IPv4-compatible) and 64:ff9b::a.b.c.d (NAT64).
            if (s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified())
                || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
            {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return is_internal_v4(Ipv4Addr::new(a, b, c, d));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
                || v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (b & 0xc0) == 64) // shared address space 100.64.0.0/10
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
}

/// reqwest's DNS resolution under a [`FetchPolicy`]: the system resolver, then every
/// address checked. One internal address refuses the name (a rebinding answer may mix
/// them).
#[derive(Debug)]
pub struct PolicyResolver {
    policy: Arc<FetchPolicy>,
}

impl PolicyResolver {
    /// The addresses of `host`, or why they are refused.
    pub fn lookup(
        &self,
        host: &str,
    ) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        if let Some(pinned) = self.policy.pinned.get(&host.to_ascii_lowercase()) {
            return Ok(pinned.iter().map(|ip| SocketAddr::new(*ip, 0)).collect());
        }
        let addrs: Vec<SocketAddr> = (host, 0).to_socket_addrs()?.collect();
        for addr in &addrs {
            self.policy.check_address(host, addr.ip())?;
        }
        Ok(addrs)
    }
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        // The lookup blocks; it runs on reqwest's own runtime thread, as its default
        // resolver's `getaddrinfo` would on a blocking thread.
        let result = self.lookup(name.as_str());
        Box::pin(std::future::ready(
            result.map(|addrs| Box::new(addrs.into_iter()) as reqwest::dns::Addrs),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_judged_as_a_function_of_the_address() {
        for internal in [
            "127.0.0.1",
            "127.0.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.170.2",
            "100.100.100.200",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.0.192",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "fc00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "ff02::1",
        ] {
            let ip: IpAddr = internal.parse().expect(internal);
            assert!(is_internal(ip), "{internal} is internal");
        }
        for public in [
            "140.82.112.3",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:140.82.112.3",
            "64:ff9b::808:808",
        ] {
            let ip: IpAddr = public.parse().expect(public);
            assert!(!is_internal(ip), "{public} is public");
        }
    }

    #[test]
    fn the_policy_refuses_internal_hosts_unless_local_sources_are_on() {
        let strict = FetchPolicy::new(vec!["169.254.169.254".into(), "github.com".into()], false);
        let url = url::Url::parse("https://169.254.169.254/latest/meta-data/").expect("url");
        assert!(matches!(strict.check(&url), Err(Refusal::Address { .. })));
        let url = url::Url::parse("https://[::ffff:a9fe:a9fe]/x.tar.gz").expect("url");
        assert!(matches!(
            strict.check(&url),
            Err(Refusal::Address { .. }) | Err(Refusal::Host { .. })
        ));
        let open = FetchPolicy::new(vec![], true);
        assert!(
            open.check_address("h", "127.0.0.1".parse().expect("ip"))
                .is_ok()
        );
        assert!(
            strict
                .check_address("h", "140.82.112.3".parse().expect("ip"))
                .is_ok()
        );
        // A name that resolves to loopback is refused before anything connects.
        let resolver = Arc::new(strict).resolver();
        let refused = resolver
            .lookup("localhost")
            .expect_err("localhost is internal");
        assert!(
            refused.to_string().contains("internal address"),
            "{refused}"
        );
    }
}
