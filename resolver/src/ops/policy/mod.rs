//! Reading a policy: `berth-policy.toml` and every file or URL it `extends`, parents first.
//!
//! The parents form a graph, not a tree: a document two files extend (in any spelling: a
//! symbolic link, `./a/../b`, a URL with another case or a default port) is read once,
//! and the whole graph is bounded in documents and bytes, so a hostile fan-out of
//! `extends` costs at most [`MAX_DOCUMENTS`] reads.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::governance::{
    Canon, Policy, PolicyFile, Signers, extends_of, parse_allowed_signers, parse_policy,
};
use berth_lockfile_schema::redact;
use reqwest::Url;

/// The most a policy file may hold (a policy is a few lines; this bounds a hostile URL).
const MAX_POLICY_BYTES: u64 = 1 << 20;
/// The most all the documents of one policy may hold together.
const MAX_TOTAL_BYTES: u64 = 4 << 20;
/// The most documents one policy may read in all: itself and everything it extends, each
/// counted once.
const MAX_DOCUMENTS: usize = 64;
/// How deep `extends` may nest.
const MAX_DEPTH: usize = 16;
/// The most redirects a policy URL may take.
const MAX_REDIRECTS: usize = 10;

/// A policy that could not be read, naming the file or URL.
#[derive(Debug, thiserror::Error)]
pub enum PolicyLoadError {
    /// A file or URL could not be read.
    #[error("could not read the policy `{label}`: {message}")]
    Read {
        /// The file or URL.
        label: String,
        /// Why.
        message: String,
    },
    /// A file is not a valid policy, or a chain loosens what it extends.
    #[error("{0}")]
    Invalid(String),
}

/// Reads the policy at `path` and everything it extends, depth first and parents before
/// children, into the effective (tighten-only) policy, whose sources are matched in
/// `canon`'s form. `extends` entries are files relative to the extending file's folder,
/// or `https://` URLs (plain `http://` only to a loopback address, `127.0.0.0/8`, `::1`
/// or `localhost`: a policy read over the network in the clear could be swapped for a
/// looser one); every redirect is held to the same rule, and never leaves https.
pub fn load_policy(path: &Path, canon: Canon) -> Result<Policy, PolicyLoadError> {
    let mut graph = Graph::default();
    let label = path.display().to_string();
    graph.load(&Origin::File(path.to_path_buf()), &label)?;
    let policy = Policy::from_chain(graph.chain, canon)
        .map_err(|e| PolicyLoadError::Invalid(e.to_string()))?
        .with_signers(graph.signers)
        .with_source_signers(graph.source_signers);
    if let Some(file) = policy.require_signed_approvals()
        && policy.signers().is_empty()
    {
        return Err(PolicyLoadError::Invalid(format!(
            "`{file}` sets require_signed_approvals = true, but no policy names the keys that may sign: add `allowed_signers = \"FILE\"` (an OpenSSH allowed-signers file) to `{file}`"
        )));
    }
    Ok(policy)
}

/// Where a policy file comes from.
enum Origin {
    File(PathBuf),
    Url(Url),
}

/// The documents read so far, and what reading them cost.
#[derive(Default)]
struct Graph {
    /// Every document, parents before the documents that extend them.
    chain: Vec<(String, PolicyFile)>,
    /// The allowed-signers files they name, in the same order.
    signers: Vec<Signers>,
    /// The allowed-signers files their `[sources] require_signed` name, in the same order.
    source_signers: Vec<Signers>,
    /// The identity (canonical path or normalised URL) of every document in `chain`.
    done: HashSet<String>,
    /// The documents being read, outermost first: identity and label.
    visiting: Vec<(String, String)>,
    /// Documents read, and their bytes.
    documents: usize,
    bytes: u64,
}

impl Graph {
    fn load(&mut self, origin: &Origin, label: &str) -> Result<(), PolicyLoadError> {
        let identity = identity(origin, label)?;
        if self.visiting.iter().any(|(v, _)| *v == identity) {
            let through: Vec<&str> = self.visiting.iter().map(|(_, l)| l.as_str()).collect();
            return Err(PolicyLoadError::Invalid(format!(
                "the policy `{label}` extends itself (through {}); remove one of the `extends`",
                through.join(" -> ")
            )));
        }
        if self.done.contains(&identity) {
            // Two documents extend the same parent: it is in the chain once.
            return Ok(());
        }
        if self.visiting.len() >= MAX_DEPTH {
            return Err(PolicyLoadError::Invalid(format!(
                "the policy `{label}` is more than {MAX_DEPTH} `extends` deep; extend the top policy directly"
            )));
        }
        if self.documents >= MAX_DOCUMENTS {
            return Err(PolicyLoadError::Invalid(format!(
                "the policy `{label}` would be document {} of one policy: a policy reads at most {MAX_DOCUMENTS}, itself and everything it extends; merge some of them",
                self.documents + 1
            )));
        }
        let text = self.read(origin, label)?;
        let file =
            parse_policy(&text, label).map_err(|e| PolicyLoadError::Invalid(e.to_string()))?;
        if let Some(written) = &file.allowed_signers {
            let signers = self.read_signers(origin, written, label)?;
            self.signers.push(signers);
        }
        if let Some(written) = &file.sources.require_signed {
            let signers = self.read_signers(origin, written, label)?;
            self.source_signers.push(signers);
        }
        self.visiting.push((identity.clone(), label.to_owned()));
        for parent in extends_of(&file) {
            let (parent_origin, parent_label) = resolve(origin, parent, label)?;
            self.load(&parent_origin, &parent_label)?;
        }
        self.visiting.pop();
        self.done.insert(identity);
        self.chain.push((label.to_owned(), file));
        Ok(())
    }
}

impl Graph {
    /// The allowed-signers file `written` (as the policy `label` at `origin` names it), read
    /// and counted against the bounds of one policy.
    fn read_signers(
        &mut self,
        origin: &Origin,
        written: &str,
        label: &str,
    ) -> Result<Signers, PolicyLoadError> {
        let (signers_origin, file_label) = signers_at(origin, written, label)?;
        let text = self.read(&signers_origin, &file_label)?;
        let list = parse_allowed_signers(&text, &file_label)
            .map_err(|e| PolicyLoadError::Invalid(e.to_string()))?;
        Ok(Signers {
            policy: label.to_owned(),
            written: written.to_owned(),
            file: file_label,
            list,
        })
    }

    /// The text at `origin`, counted against the bounds of one policy.
    fn read(&mut self, origin: &Origin, label: &str) -> Result<String, PolicyLoadError> {
        let limit = MAX_POLICY_BYTES.min(MAX_TOTAL_BYTES - self.bytes);
        let text = match origin {
            Origin::File(path) => read_file(path, label, limit)?,
            Origin::Url(url) => read_url(url, label, limit)?,
        };
        self.documents += 1;
        self.bytes += text.len() as u64;
        Ok(text)
    }
}

/// Where the `allowed_signers` of the policy at `origin` is: a file relative to a policy
/// file's folder, or a URL relative to a policy's URL (held to the rule of `extends`).
fn signers_at(
    origin: &Origin,
    written: &str,
    label: &str,
) -> Result<(Origin, String), PolicyLoadError> {
    match origin {
        Origin::Url(base) if !written.contains("://") => {
            let url = base.join(written).map_err(|e| {
                PolicyLoadError::Invalid(format!(
                    "the policy `{label}` names `allowed_signers = \"{written}\"`, which is not a URL relative to it ({e})"
                ))
            })?;
            let shown = url.to_string();
            resolve(origin, &shown, label)
        }
        _ => resolve(origin, written, label),
    }
}

/// What makes two spellings of a document one: a file's canonical path (links and `..`
/// resolved), a URL as the parser normalises it (case of scheme and host, default port,
/// dot segments), without its fragment.
fn identity(origin: &Origin, label: &str) -> Result<String, PolicyLoadError> {
    match origin {
        Origin::File(path) => {
            let real = std::fs::canonicalize(path).map_err(|e| PolicyLoadError::Read {
                label: label.to_owned(),
                message: e.to_string(),
            })?;
            Ok(format!("file:{}", real.display()))
        }
        Origin::Url(url) => {
            let mut url = url.clone();
            url.set_fragment(None);
            Ok(format!("url:{url}"))
        }
    }
}

/// Where an `extends` entry of the policy at `origin` points.
fn resolve(origin: &Origin, entry: &str, label: &str) -> Result<(Origin, String), PolicyLoadError> {
    if entry.contains("://") {
        let refuse = |why: String| {
            PolicyLoadError::Invalid(format!("the policy `{label}` extends `{entry}`: {why}"))
        };
        let url = Url::parse(entry).map_err(|e| refuse(format!("it is not a URL ({e})")))?;
        if let Some(why) = transport_refusal(&url) {
            return Err(refuse(why.to_owned()));
        }
        if let Origin::Url(from) = origin
            && from.scheme() == "https"
            && url.scheme() != "https"
        {
            return Err(refuse(
                "a policy read over https may extend only https URLs".to_owned(),
            ));
        }
        return Ok((Origin::Url(url), entry.to_owned()));
    }
    match origin {
        Origin::File(path) => {
            let joined = match path.parent() {
                Some(base) if !base.as_os_str().is_empty() && base != Path::new(".") => {
                    base.join(entry)
                }
                _ => PathBuf::from(entry),
            };
            let shown = joined.display().to_string();
            Ok((Origin::File(joined), shown))
        }
        Origin::Url(_) => Err(PolicyLoadError::Invalid(format!(
            "the policy `{label}` (a URL) extends the file `{entry}`; a policy read from a URL may extend only URLs"
        ))),
    }
}

/// Why a policy may not be read from `url`, decided from the parsed URL alone (before any
/// name is looked up): https anywhere, plain http only to a loopback address.
fn transport_refusal(url: &Url) -> Option<&'static str> {
    match url.scheme() {
        "https" => None,
        "http" if is_loopback(url) => None,
        "http" => Some(
            "plain `http://` is allowed only to a loopback address (`127.0.0.0/8`, `::1` or `localhost`), since a policy read in the clear could be swapped for a looser one; use an `https://` URL",
        ),
        _ => Some("a policy may extend files and `https://` URLs only"),
    }
}

/// Why a redirect to `next`, after `previous` (the URL asked for first), is not followed:
/// it is held to the rule of [`transport_refusal`], never leaves https once on it, and
/// the chain is at most [`MAX_REDIRECTS`] long.
fn redirect_refusal(previous: &[Url], next: &Url) -> Option<&'static str> {
    if previous.len() >= MAX_REDIRECTS {
        return Some("more than 10 redirects");
    }
    if let Some(why) = transport_refusal(next) {
        return Some(why);
    }
    let left_https = previous.iter().any(|u| u.scheme() == "https") && next.scheme() != "https";
    left_https.then_some("a policy asked for over https is never read over plain http")
}

/// A loopback IP literal, or `localhost` (which [`read_url`] connects to 127.0.0.1
/// itself, asking no resolver).
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

fn read_file(path: &Path, label: &str, limit: u64) -> Result<String, PolicyLoadError> {
    let fail = |message: String| PolicyLoadError::Read {
        label: label.to_owned(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    read_bounded(file, limit).map_err(fail)
}

/// The body of `reader`, refused past `limit` bytes.
fn read_bounded(reader: impl Read, limit: u64) -> Result<String, String> {
    let mut text = String::new();
    reader
        .take(limit + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > limit {
        return Err(format!(
            "it is over {limit} bytes (a policy file holds at most {MAX_POLICY_BYTES}, and a policy with everything it extends {MAX_TOTAL_BYTES})"
        ));
    }
    Ok(text)
}

/// A redirect the policy's transport rule refuses.
#[derive(Debug, thiserror::Error)]
#[error("it redirects to `{to}`, which is refused: {why}")]
struct RedirectRefused {
    to: String,
    why: &'static str,
}

fn read_url(url: &Url, label: &str, limit: u64) -> Result<String, PolicyLoadError> {
    let fail = |message: String| PolicyLoadError::Read {
        label: label.to_owned(),
        message,
    };
    let mut builder = berth_transport::http::client_builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::custom(
            |attempt| match redirect_refusal(attempt.previous(), attempt.url()) {
                Some(why) => {
                    let to = redact(attempt.url().as_str()).text;
                    attempt.error(RedirectRefused { to, why })
                }
                None => attempt.follow(),
            },
        ))
        // `localhost` is loopback by this rule: no resolver or hosts file decides it.
        .resolve(
            "localhost",
            std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
        );
    if url.scheme() == "http" {
        // Plain http is for this machine only: never through a proxy.
        builder = builder.no_proxy();
    }
    let client = builder.build().map_err(|e| fail(e.to_string()))?;
    let response = client.get(url.clone()).send().map_err(|e| {
        let refused = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
            .find_map(|e| e.downcast_ref::<RedirectRefused>());
        fail(refused.map_or_else(|| e.to_string(), ToString::to_string))
    })?;
    if !response.status().is_success() {
        return Err(fail(format!("the server answered {}", response.status())));
    }
    read_bounded(response, limit).map_err(fail)
}

#[cfg(test)]
mod tests;
