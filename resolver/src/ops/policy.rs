//! Reading a policy: `berth-policy.toml` and every file or URL it `extends`, parents first.

use std::io::Read;
use std::path::{Path, PathBuf};

use berth_lockfile_schema::governance::{Policy, PolicyFile, extends_of, parse_policy};

/// The most a policy file may hold (a policy is a few lines; this bounds a hostile URL).
const MAX_POLICY_BYTES: u64 = 1 << 20;
/// How deep `extends` may nest.
const MAX_DEPTH: usize = 16;

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
/// children, into the effective (tighten-only) policy. `extends` entries are files
/// relative to the extending file's folder, or `https://` URLs (plain `http://` only to a
/// loopback host: a policy read over the network in the clear could be swapped for a
/// looser one).
pub fn load_policy(path: &Path) -> Result<Policy, PolicyLoadError> {
    let mut chain = Vec::new();
    let mut visiting = Vec::new();
    let label = path.display().to_string();
    load_into(
        &Origin::File(path.to_path_buf()),
        &label,
        &mut chain,
        &mut visiting,
    )?;
    Policy::from_chain(chain).map_err(|e| PolicyLoadError::Invalid(e.to_string()))
}

/// Where a policy file comes from.
enum Origin {
    File(PathBuf),
    Url(String),
}

fn load_into(
    origin: &Origin,
    label: &str,
    chain: &mut Vec<(String, PolicyFile)>,
    visiting: &mut Vec<String>,
) -> Result<(), PolicyLoadError> {
    if visiting.iter().any(|v| v == label) {
        return Err(PolicyLoadError::Invalid(format!(
            "the policy `{label}` extends itself (through {}); remove one of the `extends`",
            visiting.join(" -> ")
        )));
    }
    if visiting.len() >= MAX_DEPTH {
        return Err(PolicyLoadError::Invalid(format!(
            "the policy `{label}` is more than {MAX_DEPTH} `extends` deep"
        )));
    }
    if chain.iter().any(|(l, _)| l == label) {
        // Two children extend the same parent: it is in the chain once.
        return Ok(());
    }
    let text = match origin {
        Origin::File(path) => read_file(path, label)?,
        Origin::Url(url) => read_url(url, label)?,
    };
    let file = parse_policy(&text, label).map_err(|e| PolicyLoadError::Invalid(e.to_string()))?;
    visiting.push(label.to_owned());
    for parent in extends_of(&file) {
        let (parent_origin, parent_label) = resolve(origin, parent, label)?;
        load_into(&parent_origin, &parent_label, chain, visiting)?;
    }
    visiting.pop();
    chain.push((label.to_owned(), file));
    Ok(())
}

/// Where an `extends` entry of the policy at `origin` points.
fn resolve(origin: &Origin, entry: &str, label: &str) -> Result<(Origin, String), PolicyLoadError> {
    if entry.contains("://") {
        let url = reqwest::Url::parse(entry).map_err(|e| {
            PolicyLoadError::Invalid(format!(
                "the policy `{label}` extends `{entry}`, which is not a URL: {e}"
            ))
        })?;
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"))
            || url.host_str().is_some_and(|h| h.starts_with("127."));
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => {
                return Err(PolicyLoadError::Invalid(format!(
                    "the policy `{label}` extends `{entry}`: a policy may extend files and https URLs only"
                )));
            }
        }
        return Ok((Origin::Url(entry.to_owned()), entry.to_owned()));
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

fn read_file(path: &Path, label: &str) -> Result<String, PolicyLoadError> {
    let fail = |message: String| PolicyLoadError::Read {
        label: label.to_owned(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_POLICY_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(e.to_string()))?;
    if text.len() as u64 > MAX_POLICY_BYTES {
        return Err(fail(format!("it is over {MAX_POLICY_BYTES} bytes")));
    }
    Ok(text)
}

fn read_url(url: &str, label: &str) -> Result<String, PolicyLoadError> {
    let fail = |message: String| PolicyLoadError::Read {
        label: label.to_owned(),
        message,
    };
    let client = berth_transport::http::client_builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let response = client.get(url).send().map_err(|e| fail(e.to_string()))?;
    if !response.status().is_success() {
        return Err(fail(format!("the server answered {}", response.status())));
    }
    let mut text = String::new();
    response
        .take(MAX_POLICY_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(e.to_string()))?;
    if text.len() as u64 > MAX_POLICY_BYTES {
        return Err(fail(format!("it is over {MAX_POLICY_BYTES} bytes")));
    }
    Ok(text)
}
