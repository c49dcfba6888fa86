//! Credentials, in one place: the URL's own (`${VAR}` expanded), then `~/.netrc` (or
//! `$NETRC`, read with the `rust-netrc` crate, as uv reads it) for the URL's host, then,
//! for git, the user's git credential helpers (`git.rs`); for an npm registry, the
//! [`Credential`] its configuration names (`registries/npm.rs`). A password or a token
//! goes over plain `http://` only to this machine.

use std::path::Path;

/// What an `Authorization` header carries for a registry: never written, never printed
/// (its `Debug` says only which kind it is).
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// `Bearer TOKEN` (npm's `_authToken`).
    Bearer(String),
    /// `Basic BASE64`, `user:password` already encoded (npm's `_auth`, or its `username`
    /// with `_password`).
    Basic(String),
}

impl Credential {
    /// The `Authorization` header's value.
    pub fn header_value(&self) -> String {
        match self {
            Self::Bearer(token) => format!("Bearer {token}"),
            Self::Basic(encoded) => format!("Basic {encoded}"),
        }
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Bearer(_) => "Credential::Bearer(***)",
            Self::Basic(_) => "Credential::Basic(***)",
        })
    }
}

/// `localhost`, `127.x.x.x` or `::1` (brackets allowed).
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether a password may be sent to `host` over `scheme`: always over https (and ssh),
/// over plain http only to this machine.
pub fn may_send_password(scheme: &str, host: &str) -> bool {
    scheme != "http" || is_loopback(host)
}

/// The login and password `~/.netrc` (or `$NETRC`) gives for `host`: its `machine` entry,
/// else its `default` entry.
pub fn netrc(host: &str, home: Option<&Path>) -> Option<(String, String)> {
    let path = match std::env::var_os("NETRC") {
        Some(path) => path.into(),
        None => home?.join(".netrc"),
    };
    let parsed = netrc::Netrc::from_file(&path).ok()?;
    let entry = parsed
        .hosts
        .get(host)
        .or_else(|| parsed.hosts.get("default"))?;
    Some((entry.login.clone(), entry.password.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for host in ["localhost", "127.0.0.1", "127.8.9.10", "[::1]", "::1"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["127.example.com", "10.0.0.1", "example.com", "0.0.0.0"] {
            assert!(!is_loopback(host), "{host}");
        }
        assert!(may_send_password("https", "example.com"));
        assert!(!may_send_password("http", "example.com"));
        assert!(may_send_password("http", "127.0.0.1"));
    }

    #[test]
    fn netrc_machine_then_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(".netrc"),
            "machine git.example.com login alice password s3cret\ndefault login anon password guest\n",
        )
        .expect("write");
        assert_eq!(
            netrc("git.example.com", Some(dir.path())),
            Some(("alice".into(), "s3cret".into()))
        );
        assert_eq!(
            netrc("other.example.com", Some(dir.path())),
            Some(("anon".into(), "guest".into()))
        );
    }
}
