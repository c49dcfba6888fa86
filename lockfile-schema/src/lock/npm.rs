//! The npm parts of the lock: a closure's `[[payload.npm]]` packages, each with the
//! registry's signature when it gave one (`dist.signatures`, as `npm audit signatures`
//! checks them), and the top-level `[[registry_key]]` tables, every registry public key
//! those signatures name, once.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::write_fields;
use super::writer::toml_string;

/// One npm package of a closure, at its place in `node_modules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedNpmPackage {
    /// Its folder in the closure, as npm's lockfile names it (`node_modules/a`,
    /// `node_modules/a/node_modules/b`).
    pub path: String,
    /// The name the registry knows it by, when its path names it otherwise (an npm alias,
    /// `"b": "npm:c@1"`); `None`: the last part of its path.
    pub name: Option<String>,
    /// Its version.
    pub version: String,
    /// The tarball's URL.
    pub url: String,
    /// The registry's `dist.integrity` of the tarball (SRI, sha512 as a rule).
    pub integrity: String,
    /// When the registry says this version was published (its document's
    /// `time[version]`, as written): a registry key that expired before it does not count.
    /// `None` when the registry gave none, and in locks written before berth recorded it.
    pub published: Option<String>,
    /// The registry's signature of `NAME@VERSION:INTEGRITY`; `None` when the registry gave
    /// none, and in locks written before berth recorded signatures.
    pub signature: Option<NpmSignature>,
    /// What the package's npm provenance names, verified at `lock`; `None` when the
    /// registry lists none, and in locks written before berth recorded it.
    pub provenance: Option<NpmProvenance>,
}

impl LockedNpmPackage {
    /// The name the registry knows it by: `name`, else the last part of its path
    /// (`@scope/name` for a scoped package).
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_else(|| {
            self.path
                .rsplit("node_modules/")
                .next()
                .unwrap_or(&self.path)
        })
    }

    /// What its registry signed: `NAME@VERSION:INTEGRITY`.
    pub fn signed_text(&self) -> String {
        format!("{}@{}:{}", self.name(), self.version, self.integrity)
    }
}

/// One registry signature of a package (an entry of `dist.signatures`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpmSignature {
    /// The id of the registry key that made it (`SHA256:...`), a `[[registry_key]]`'s
    /// `keyid` when the lock holds that key.
    #[schemars(length(min = 1))]
    pub keyid: String,
    /// The signature: base64 of a DER ECDSA signature.
    #[schemars(length(min = 1))]
    pub sig: String,
}

/// What a package version's npm provenance (its SLSA attestation, a Sigstore bundle)
/// names, as `lock` verified it: the fields of its signing certificate, which the
/// Sigstore certificate authority vouches for from the CI's identity token, and the
/// transparency log entry that recorded the signature. The statement's own claims (the
/// builder, the invocation) are the build's word and are not recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpmProvenance {
    /// The source repository built (`https://github.com/OWNER/REPO`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub repository: Option<String>,
    /// The commit built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub commit: Option<String>,
    /// The workflow that signed, with its ref (`…/.github/workflows/release.yml@refs/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub workflow: Option<String>,
    /// The identity token's issuer (`https://token.actions.githubusercontent.com`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub issuer: Option<String>,
    /// The index of the signature's entry in its transparency log (Rekor).
    #[schemars(range(min = 0))]
    pub log_index: i64,
    /// Where its attestations document was read (npm's `dist.attestations.url`, without
    /// credentials): `sync` fetches it again with the tarball, into the closure's
    /// `attestations/` folder, and verifies the provenance again offline.
    #[schemars(length(min = 1))]
    pub url: String,
}

impl NpmProvenance {
    /// The workflow without its ref: what a release built from another tag keeps.
    pub fn workflow_file(&self) -> Option<&str> {
        self.workflow
            .as_deref()
            .map(|w| w.split_once('@').map_or(w, |(file, _)| file))
    }
}

/// One `[[payload.npm]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockedNpmPackageWire {
    /// Its folder in the closure (`node_modules/...`).
    #[schemars(regex(pattern = r"^node_modules/"))]
    pub path: String,
    /// The name the registry knows it by, when its path names it otherwise (an alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pub name: Option<String>,
    /// Its version.
    #[schemars(length(min = 1))]
    pub version: String,
    /// The tarball's URL.
    #[schemars(length(min = 1))]
    pub url: String,
    /// The tarball's integrity, SRI (`sha512-...`).
    #[schemars(length(min = 8))]
    pub integrity: String,
    /// When the registry says the version was published (RFC 3339, as the registry wrote
    /// it); absent when it gave none, and in older locks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub published: Option<String>,
    /// The registry's signature of `NAME@VERSION:INTEGRITY` (`dist.signatures`); absent
    /// when the registry gave none, and in older locks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<NpmSignature>,
    /// What its npm provenance names, verified at `lock`; absent when the registry lists
    /// none, and in older locks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<NpmProvenance>,
}

/// A registry's public key, as its `/-/npm/v1/keys` gave it: what the lock's npm
/// signatures are checked against, offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryKey {
    /// The registry that published it, without credentials.
    pub registry: String,
    /// Its id, which signatures name (`SHA256:...`).
    pub keyid: String,
    /// Its type (`ecdsa-sha2-nistp256`: the only one berth checks).
    pub keytype: String,
    /// The key: base64 of its DER `SubjectPublicKeyInfo`.
    pub key: String,
    /// When it expires, as the registry wrote it: a package published after it is not
    /// vouched for by it. `None`: it does not.
    pub expires: Option<String>,
}

/// One `[[registry_key]]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryKeyWire {
    /// The npm registry that published it (http or https, no credentials).
    #[schemars(regex(pattern = r"^https?://[^/@?#]+(/.*)?$"))]
    pub registry: String,
    /// Its id (`SHA256:...`), unique in the lock.
    #[schemars(length(min = 1))]
    pub keyid: String,
    /// Its type, as the registry names it (`ecdsa-sha2-nistp256`).
    #[schemars(length(min = 1))]
    pub keytype: String,
    /// Base64 of the key's DER `SubjectPublicKeyInfo`.
    #[schemars(length(min = 1))]
    pub key: String,
    /// When it expires (RFC 3339, as the registry wrote it); absent when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expires: Option<String>,
}

/// Whether `path` is a plain `node_modules/...` path with no way out of the closure.
pub(super) fn is_closure_path(path: &str) -> bool {
    path.starts_with("node_modules/")
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\\'))
}

/// A recorded registry is an http(s) URL with no userinfo: a lock holds no credential.
pub(super) fn check_registry(registry: &str) -> Result<(), String> {
    let rest = registry
        .strip_prefix("https://")
        .or_else(|| registry.strip_prefix("http://"))
        .ok_or_else(|| format!("`registry = \"{registry}\"` is not an http(s) URL"))?;
    let authority = &rest[..rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len())];
    if authority.is_empty() || authority.contains('@') {
        return Err(format!(
            "`registry = \"{}\"` must name a host and carry no credentials",
            crate::redact(registry).text
        ));
    }
    Ok(())
}

/// Whether `text` is an instant, as a registry writes one (`2025-01-29T00:00:00.000Z`).
pub(super) fn check_instant(key: &str, text: &str) -> Result<(), String> {
    text.parse::<jiff::Timestamp>()
        .map(|_| ())
        .map_err(|_| format!("`{key} = \"{text}\"` is not an RFC 3339 instant"))
}

impl TryFrom<LockedNpmPackageWire> for LockedNpmPackage {
    type Error = String;

    fn try_from(p: LockedNpmPackageWire) -> Result<Self, String> {
        if !is_closure_path(&p.path) {
            return Err(format!("`{}` is not a `node_modules/` path", p.path));
        }
        if !(p.url.starts_with("https://") || p.url.starts_with("http://")) {
            return Err(format!(
                "`{}` comes from `{}`, which is not an http(s) URL",
                p.path, p.url
            ));
        }
        if let Some(published) = &p.published {
            check_instant("published", published)?;
        }
        if let Some(signature) = &p.signature
            && (signature.keyid.is_empty() || signature.sig.is_empty())
        {
            return Err(format!(
                "`{}`: a `signature` has a `keyid` and a `sig`",
                p.path
            ));
        }
        if p.provenance.as_ref().is_some_and(|v| v.log_index < 0) {
            return Err(format!(
                "`{}`: a provenance's `log_index` cannot be negative",
                p.path
            ));
        }
        if p.provenance.as_ref().is_some_and(|v| v.url.is_empty()) {
            return Err(format!(
                "`{}`: a provenance's `url` names where its attestations are",
                p.path
            ));
        }
        Ok(LockedNpmPackage {
            path: p.path,
            name: p.name,
            version: p.version,
            url: p.url,
            integrity: p.integrity,
            published: p.published,
            signature: p.signature,
            provenance: p.provenance,
        })
    }
}

impl TryFrom<RegistryKeyWire> for RegistryKey {
    type Error = String;

    fn try_from(w: RegistryKeyWire) -> Result<Self, String> {
        check_registry(&w.registry)?;
        if w.keyid.is_empty() || w.keytype.is_empty() {
            return Err("a registry key has a `keyid` and a `keytype`".to_owned());
        }
        if !base64::engine::general_purpose::STANDARD
            .decode(&w.key)
            .is_ok_and(|der| !der.is_empty())
        {
            return Err("`key` is not base64 of a public key".to_owned());
        }
        if let Some(expires) = &w.expires {
            check_instant("expires", expires)?;
        }
        Ok(RegistryKey {
            registry: w.registry,
            keyid: w.keyid,
            keytype: w.keytype,
            key: w.key,
            expires: w.expires,
        })
    }
}

impl LockedNpmPackage {
    /// The canonical `[[payload.npm]]` text (with its leading blank line).
    pub(crate) fn write_toml(&self, out: &mut String) {
        out.push_str("\n[[payload.npm]]\n");
        write_fields(
            out,
            &[
                ("path", Some(&self.path)),
                ("name", self.name.as_ref()),
                ("version", Some(&self.version)),
                ("url", Some(&self.url)),
                ("integrity", Some(&self.integrity)),
                ("published", self.published.as_ref()),
            ],
        );
        if let Some(s) = &self.signature {
            out.push_str(&format!(
                "signature = {{ keyid = {}, sig = {} }}\n",
                toml_string(&s.keyid),
                toml_string(&s.sig)
            ));
        }
        if let Some(p) = &self.provenance {
            p.write_toml(out);
        }
    }
}

impl NpmProvenance {
    /// `provenance = { repository = …, log_index = N }`, one line.
    fn write_toml(&self, out: &mut String) {
        let mut fields: Vec<String> = [
            ("repository", &self.repository),
            ("commit", &self.commit),
            ("workflow", &self.workflow),
            ("issuer", &self.issuer),
        ]
        .into_iter()
        .filter_map(|(key, value)| {
            value
                .as_ref()
                .map(|v| format!("{key} = {}", toml_string(v)))
        })
        .collect();
        fields.push(format!("log_index = {}", self.log_index));
        fields.push(format!("url = {}", toml_string(&self.url)));
        out.push_str(&format!("provenance = {{ {} }}\n", fields.join(", ")));
    }
}

impl RegistryKey {
    /// The canonical `[[registry_key]]` text (with its leading blank line).
    pub(crate) fn write_toml(&self, out: &mut String) {
        out.push_str("\n[[registry_key]]\n");
        write_fields(
            out,
            &[
                ("registry", Some(&self.registry)),
                ("keyid", Some(&self.keyid)),
                ("keytype", Some(&self.keytype)),
                ("key", Some(&self.key)),
                ("expires", self.expires.as_ref()),
            ],
        );
    }
}

/// The keys of a lock in their canonical order (by `keyid`), one per key id; two
/// different keys under one id are refused.
pub fn sorted_keys(mut keys: Vec<RegistryKey>) -> Result<Vec<RegistryKey>, String> {
    keys.sort_by(|a, b| a.keyid.cmp(&b.keyid));
    keys.dedup();
    if let Some(pair) = keys.windows(2).find(|w| w[0].keyid == w[1].keyid) {
        return Err(format!(
            "two different keys have the id `{}` (from `{}` and `{}`)",
            pair[0].keyid, pair[0].registry, pair[1].registry
        ));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use crate::lock::parse_lock;

    /// A lock with one signed package and the key that signed it.
    const SIGNED: &str = "version = 1\n\n\
        [[payload]]\nplugin = \"tools\"\nserver = \"fake\"\nrunner = \"npx\"\n\
        spec = \"fake-mcp@^1\"\necosystem = \"npm\"\npackage = \"fake-mcp\"\n\
        version = \"1.1.0\"\nregistry = \"https://registry.example/\"\n\
        entry = \"node_modules/fake-mcp/bin/server.js\"\n\
        hash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n\n\
        [[payload.npm]]\npath = \"node_modules/fake-mcp\"\nversion = \"1.1.0\"\n\
        url = \"https://registry.example/fake-mcp/-/fake-mcp-1.1.0.tgz\"\n\
        integrity = \"sha512-AAAA\"\npublished = \"2026-01-02T03:04:05.000Z\"\n\
        signature = { keyid = \"SHA256:k1\", sig = \"MEUCIQ==\" }\n\
        provenance = { repository = \"https://github.com/o/r\", commit = \"0123\", \
        workflow = \"https://github.com/o/r/.github/workflows/release.yml@refs/tags/v1\", \
        issuer = \"https://token.actions.githubusercontent.com\", log_index = 7, \
        url = \"https://registry.example/-/npm/v1/attestations/fake-mcp@1.1.0\" }\n\n\
        [[payload.npm]]\npath = \"node_modules/fake-mcp/node_modules/dep\"\n\
        name = \"real-dep\"\nversion = \"1.0.0\"\n\
        url = \"https://registry.example/real-dep/-/real-dep-1.0.0.tgz\"\n\
        integrity = \"sha512-BBBB\"\n\n\
        [[registry_key]]\nregistry = \"https://registry.example/\"\nkeyid = \"SHA256:k1\"\n\
        keytype = \"ecdsa-sha2-nistp256\"\nkey = \"MFkw\"\nexpires = \"2027-01-01T00:00:00.000Z\"\n";

    #[test]
    fn signatures_and_keys_round_trip_through_the_canonical_writer() {
        let lock = parse_lock("plugins.lock", SIGNED).expect("valid");
        assert_eq!(lock.to_toml(), format!("{}{SIGNED}", crate::LOCK_HEADER));
        let npm = &lock.payloads[0].npm;
        assert_eq!(npm[0].signed_text(), "fake-mcp@1.1.0:sha512-AAAA");
        assert_eq!(npm[1].name(), "real-dep", "an alias signs its own name");
        assert_eq!(npm[1].signature, None);
        let provenance = npm[0].provenance.as_ref().expect("a provenance");
        assert_eq!(provenance.log_index, 7);
        assert_eq!(
            provenance.workflow_file(),
            Some("https://github.com/o/r/.github/workflows/release.yml")
        );
        assert_eq!(npm[1].provenance, None);
        assert_eq!(lock.registry_keys.len(), 1);
        assert_eq!(
            lock.registry_keys[0].expires.as_deref(),
            Some("2027-01-01T00:00:00.000Z")
        );
    }

    #[test]
    fn a_bad_key_or_instant_is_refused_and_names_what() {
        for (from, to, why) in [
            ("key = \"MFkw\"", "key = \"not base64!\"", "not base64"),
            ("expires = \"2027", "expires = \"soon 2027", "RFC 3339"),
            ("published = \"2026", "published = \"then 2026", "RFC 3339"),
            (
                "registry = \"https://registry.example/\"\nkeyid",
                "registry = \"https://u:p@registry.example/\"\nkeyid",
                "no credentials",
            ),
            ("sig = \"MEUCIQ==\"", "sig = \"\"", "a `keyid` and a `sig`"),
            ("log_index = 7", "log_index = -7", "cannot be negative"),
            (
                "url = \"https://registry.example/-/npm/v1/attestations/fake-mcp@1.1.0\"",
                "url = \"\"",
                "where its attestations are",
            ),
        ] {
            let text = SIGNED.replace(from, to);
            let err = parse_lock("plugins.lock", &text)
                .expect_err(why)
                .to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
        let twice = SIGNED.to_owned()
            + "\n[[registry_key]]\nregistry = \"https://other.example/\"\n\
               keyid = \"SHA256:k1\"\nkeytype = \"ecdsa-sha2-nistp256\"\nkey = \"MFkx\"\n";
        let err = parse_lock("plugins.lock", &twice)
            .expect_err("one id, two keys")
            .to_string();
        assert!(
            err.contains("two different keys have the id `SHA256:k1`"),
            "{err}"
        );
    }
}
