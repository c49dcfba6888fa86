//! The npm package a plugin was taken from (a marketplace entry `{"source": "npm"}`): the
//! `npm` inline table of its `[[plugin]]` entry, with the registry's signature of it
//! (`dist.signatures`, checked at `lock` and offline at `sync` against the lock's
//! `[[registry_key]]` tables, as a payload's packages are).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::npm::{LockedNpmPackage, NpmSignature, check_instant};
use super::writer::toml_string;

/// `npm = { package = "…", version = "…", integrity = "sha512-…", published = "…",
/// signature = { keyid = "…", sig = "…" } }` of a `[[plugin]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpmSource {
    /// The package's name in its registry (`@scope/name` for a scoped one).
    #[schemars(length(min = 1))]
    pub package: String,
    /// The version locked.
    #[schemars(length(min = 1))]
    pub version: String,
    /// The registry's `dist.integrity` of the tarball, as it wrote it: what it signed, and
    /// what the tarball (the entry's `url`) was checked against.
    #[schemars(length(min = 8))]
    pub integrity: String,
    /// When the registry says the version was published (`time[version]`, RFC 3339);
    /// absent when it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub published: Option<String>,
    /// The registry's signature of `NAME@VERSION:INTEGRITY`; absent when it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<NpmSignature>,
}

impl NpmSource {
    /// What its registry signed: `NAME@VERSION:INTEGRITY`.
    pub fn signed_text(&self) -> String {
        format!("{}@{}:{}", self.package, self.version, self.integrity)
    }

    /// It as a closure's package is recorded (fetched from `url`), to check its signature
    /// as one is.
    pub fn as_package(&self, url: &str) -> LockedNpmPackage {
        LockedNpmPackage {
            path: format!("node_modules/{}", self.package),
            name: Some(self.package.clone()),
            version: self.version.clone(),
            url: url.to_owned(),
            integrity: self.integrity.clone(),
            published: self.published.clone(),
            signature: self.signature.clone(),
            provenance: None,
        }
    }

    /// Refuses a table the lock cannot hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.package.is_empty() || self.version.is_empty() || self.integrity.len() < 8 {
            return Err("`npm` has a `package`, a `version` and an `integrity`".to_owned());
        }
        if let Some(published) = &self.published {
            check_instant("published", published)?;
        }
        match &self.signature {
            Some(s) if s.keyid.is_empty() || s.sig.is_empty() => Err(format!(
                "`npm` of `{}`: a `signature` has a `keyid` and a `sig`",
                self.package
            )),
            _ => Ok(()),
        }
    }

    /// The inline table the lock writes, one line.
    pub(crate) fn write_toml(&self, out: &mut String) {
        let mut fields = vec![
            format!("package = {}", toml_string(&self.package)),
            format!("version = {}", toml_string(&self.version)),
            format!("integrity = {}", toml_string(&self.integrity)),
        ];
        if let Some(published) = &self.published {
            fields.push(format!("published = {}", toml_string(published)));
        }
        if let Some(s) = &self.signature {
            fields.push(format!(
                "signature = {{ keyid = {}, sig = {} }}",
                toml_string(&s.keyid),
                toml_string(&s.sig)
            ));
        }
        out.push_str(&format!("npm = {{ {} }}\n", fields.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use crate::lock::parse_lock;

    /// A plugin taken from an npm package, signed, and the key that signed it.
    const SIGNED: &str = "version = 1\n\n\
        [[plugin]]\nname = \"tools\"\nrequested = \"tools@market\"\n\
        source = \"https://registry.example/tools/-/tools-1.0.0.tgz\"\n\
        url = \"https://registry.example/tools/-/tools-1.0.0.tgz\"\n\
        archive_hash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n\
        hash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n\
        npm = { package = \"@acme/tools\", version = \"1.0.0\", integrity = \"sha512-AAAA\", \
        published = \"2026-01-02T03:04:05.000Z\", \
        signature = { keyid = \"SHA256:k1\", sig = \"MEUCIQ==\" } }\n\n\
        [[registry_key]]\nregistry = \"https://registry.example/\"\nkeyid = \"SHA256:k1\"\n\
        keytype = \"ecdsa-sha2-nistp256\"\nkey = \"MFkw\"\n";

    #[test]
    fn a_plugins_npm_source_round_trips_through_the_canonical_writer() {
        let lock = parse_lock("plugins.lock", SIGNED).expect("valid");
        assert_eq!(lock.to_toml(), format!("{}{SIGNED}", crate::LOCK_HEADER));
        let npm = lock.plugins[0].npm.as_ref().expect("an npm source");
        assert_eq!(npm.signed_text(), "@acme/tools@1.0.0:sha512-AAAA");
        let package = npm.as_package("https://registry.example/x.tgz");
        assert_eq!(package.signed_text(), npm.signed_text());
        let unsigned = SIGNED.replace(
            ", published = \"2026-01-02T03:04:05.000Z\", \
             signature = { keyid = \"SHA256:k1\", sig = \"MEUCIQ==\" }",
            "",
        );
        let lock = parse_lock("plugins.lock", &unsigned).expect("valid unsigned");
        assert_eq!(lock.plugins[0].npm.as_ref().expect("npm").signature, None);
        assert_eq!(lock.to_toml(), format!("{}{unsigned}", crate::LOCK_HEADER));
    }

    #[test]
    fn a_bad_npm_source_is_refused_and_names_what() {
        for (from, to, why) in [
            ("published = \"2026", "published = \"then 2026", "RFC 3339"),
            ("sig = \"MEUCIQ==\"", "sig = \"\"", "a `keyid` and a `sig`"),
            ("version = \"1.0.0\", ", "version = \"\", ", "a `package`"),
            (
                "archive_hash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n",
                "rev = \"0123456789012345678901234567890123456789\"\n",
                "`npm` goes with an archive source",
            ),
        ] {
            let text = SIGNED.replace(from, to);
            let err = parse_lock("plugins.lock", &text)
                .expect_err(why)
                .to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
    }
}
