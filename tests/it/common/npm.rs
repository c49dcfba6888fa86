//! A static npm registry on 127.0.0.1 for the payload tests: packuments and tarballs
//! built at test time, signed as the npm registry signs them (`dist.signatures`, with a
//! P-256 key made here from a fixed seed and published at `/-/npm/v1/keys`), and
//! `fake-mcp`, an MCP server that needs a dependency.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::{FileServer, require_or_skip, tar_gz};

/// Whether `node` and `npm` are here (else the test skips, or fails in CI).
pub fn have_node() -> bool {
    let works = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let found = works("node") && works("npm");
    if !found {
        require_or_skip("node and npm", "install Node.js (`apt-get install -y npm`)");
    }
    found
}

/// How [`Registry::publish`] signs what it publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signing {
    /// With the registry's key, as the npm registry does.
    Registry,
    /// Not at all (`dist.signatures` left out).
    Unsigned,
    /// With a key the registry does not publish.
    UnknownKey,
    /// With the registry's key, over another text than the version's: a signature that
    /// does not verify.
    Tampered,
}

/// A P-256 key made from `seed`: its signing half, its id (`SHA256:` and the unpadded
/// base64 of the sha256 of its DER `SubjectPublicKeyInfo`, as npm's ids read) and its
/// `SubjectPublicKeyInfo` in base64, as `/-/npm/v1/keys` gives it.
pub fn test_key(seed: u8) -> (SigningKey, String, String) {
    let signing = SigningKey::from_slice(&[seed; 32]).expect("a scalar");
    // `id-ecPublicKey` with `prime256v1`, then the uncompressed point.
    let header = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];
    let point = signing.verifying_key().to_encoded_point(false);
    let der = [&header[..], point.as_bytes()].concat();
    let keyid = format!(
        "SHA256:{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(sha2::Sha256::digest(&der))
    );
    let key = base64::engine::general_purpose::STANDARD.encode(&der);
    (signing, keyid, key)
}

/// The seed of every test registry's key.
const REGISTRY_SEED: u8 = 0x42;

/// A static npm registry under `root`: `registry/NAME` documents, `tarballs/*.tgz`, and
/// `registry/-/npm/v1/keys`.
pub struct Registry {
    root: PathBuf,
    pub server: FileServer,
    /// Per package: version -> (its `package.json`, its tarball's URL and integrity).
    packages: std::collections::BTreeMap<String, Vec<(String, Value)>>,
    /// Per package: version -> when it was published (the packument's `time`).
    times: std::collections::BTreeMap<String, serde_json::Map<String, Value>>,
    /// How the next [`Registry::publish`] signs.
    pub signing: Signing,
}

impl Registry {
    pub fn start(root: &Path) -> Self {
        Self::on(root, FileServer::start(root, None))
    }

    /// A registry that answers only requests with `Authorization: Bearer TOKEN`.
    pub fn start_requiring_token(root: &Path, token: &str) -> Self {
        Self::on(
            root,
            FileServer::start_requiring(root, &format!("Bearer {token}")),
        )
    }

    fn on(root: &Path, server: FileServer) -> Self {
        std::fs::create_dir_all(root.join("registry")).expect("mkdir");
        std::fs::create_dir_all(root.join("tarballs")).expect("mkdir");
        Self {
            root: root.to_owned(),
            server,
            packages: Default::default(),
            times: Default::default(),
            signing: Signing::Registry,
        }
        .with_keys()
    }

    /// Publishes the registry's key at `/-/npm/v1/keys`.
    fn with_keys(self) -> Self {
        let (_, keyid, key) = test_key(REGISTRY_SEED);
        let keys = json!({"keys": [{
            "expires": null,
            "keyid": keyid,
            "keytype": "ecdsa-sha2-nistp256",
            "scheme": "ecdsa-sha2-nistp256",
            "key": key,
        }]});
        let dir = self.root.join("registry/-/npm/v1");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("keys"), keys.to_string()).expect("write");
        self
    }

    /// The id of the key the registry signs with.
    pub fn keyid(&self) -> String {
        test_key(REGISTRY_SEED).1
    }

    /// `dist.signatures` of `name@version` with this integrity, as `self.signing` says.
    fn signatures(&self, name: &str, version: &str, integrity: &str) -> Option<Value> {
        let (seed, text) = match self.signing {
            Signing::Unsigned => return None,
            Signing::Registry => (REGISTRY_SEED, format!("{name}@{version}:{integrity}")),
            Signing::UnknownKey => (0x17, format!("{name}@{version}:{integrity}")),
            Signing::Tampered => (REGISTRY_SEED, format!("{name}@{version}0:{integrity}")),
        };
        let (signing, keyid, _) = test_key(seed);
        let signature: Signature = signing.sign(text.as_bytes());
        let sig = base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
        Some(json!([{"keyid": keyid, "sig": sig}]))
    }

    pub fn url(&self) -> String {
        self.server.url("registry")
    }

    /// Publishes `name@version` with these files (and `package.json` from `manifest`).
    pub fn publish(&mut self, name: &str, version: &str, manifest: Value, files: &[(&str, &str)]) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut manifest = manifest;
        manifest["name"] = json!(name);
        manifest["version"] = json!(version);
        std::fs::write(dir.path().join("package.json"), manifest.to_string()).expect("write");
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        let bytes = tar_gz(dir.path(), "package");
        let file = format!("{}-{version}.tgz", name.replace('/', "-"));
        std::fs::write(self.root.join("tarballs").join(&file), &bytes).expect("write");
        let integrity = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(&bytes))
        );
        let mut document = manifest.clone();
        document["dist"] = json!({
            "tarball": self.server.url(&format!("tarballs/{file}")),
            "integrity": integrity,
        });
        if let Some(signatures) = self.signatures(name, version, &integrity) {
            document["dist"]["signatures"] = signatures;
        }
        self.packages
            .entry(name.to_owned())
            .or_default()
            .push((version.to_owned(), document));
        self.write_document(name);
    }

    /// [`Registry::publish`], published at `time` (RFC 3339): the packument's `time`
    /// says so, as the npm registry's does.
    pub fn publish_at(
        &mut self,
        time: &str,
        name: &str,
        version: &str,
        manifest: Value,
        files: &[(&str, &str)],
    ) {
        self.times
            .entry(name.to_owned())
            .or_default()
            .insert(version.to_owned(), json!(time));
        self.publish(name, version, manifest, files);
    }

    /// The SHA-512 of `name@version`'s tarball, as its `dist.integrity` gives it.
    pub fn sha512(&self, name: &str, version: &str) -> [u8; 64] {
        let (_, document) = self.packages[name]
            .iter()
            .find(|(v, _)| v == version)
            .expect("a published version");
        let integrity = document["dist"]["integrity"]
            .as_str()
            .expect("an integrity");
        let digest = integrity.strip_prefix("sha512-").expect("a SHA-512");
        base64::engine::general_purpose::STANDARD
            .decode(digest)
            .expect("base64")
            .try_into()
            .expect("64 bytes")
    }

    /// Serves `document` as npm's attestations of `name@version`
    /// (`/-/npm/v1/attestations/NAME@VERSION`), which its `dist.attestations.url` names.
    pub fn serve_attestations(&mut self, name: &str, version: &str, document: &Value) {
        let dir = self.root.join("registry/-/npm/v1/attestations");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let file = format!("{}@{version}", name.replace('/', "%2f"));
        std::fs::write(dir.join(&file), document.to_string()).expect("write");
        let url = self
            .server
            .url(&format!("registry/-/npm/v1/attestations/{file}"));
        let versions = self.packages.get_mut(name).expect("a published package");
        let (_, published) = versions
            .iter_mut()
            .find(|(v, _)| v == version)
            .expect("a published version");
        published["dist"]["attestations"] = json!({
            "url": url,
            "provenance": {"predicateType": "https://slsa.dev/provenance/v1"},
        });
        self.write_document(name);
    }

    fn write_document(&self, name: &str) {
        let versions = &self.packages[name];
        let latest = versions.last().expect("a version").0.clone();
        let mut document = json!({
            "name": name,
            "dist-tags": {"latest": latest},
            "versions": versions.iter().cloned().collect::<serde_json::Map<_, _>>(),
        });
        if let Some(times) = self.times.get(name) {
            document["time"] = Value::Object(times.clone());
        }
        // npm asks for a scoped package as `@scope%2fname`.
        let file = name.replace('/', "%2f");
        std::fs::write(self.root.join("registry").join(file), document.to_string()).expect("write");
    }
}

/// `fake-mcp` (1.0.0, 1.1.0 and 2.0.0; a `bin` that needs `fake-dep`) and `fake-dep`.
pub fn fake_registry(root: &Path) -> Registry {
    publish_fake(Registry::start(root))
}

/// [`fake_registry`], answering only requests with `Authorization: Bearer TOKEN`.
pub fn fake_registry_requiring_token(root: &Path, token: &str) -> Registry {
    publish_fake(Registry::start_requiring_token(root, token))
}

/// [`fake_registry`], with `fake-dep` signed as `signing` says (the rest as the registry
/// signs).
pub fn fake_registry_signing_dep(root: &Path, signing: Signing) -> Registry {
    let mut registry = Registry::start(root);
    registry.signing = signing;
    publish_fake(registry)
}

/// Publishes `fake-dep` as `registry.signing` says, then `fake-mcp` signed by the registry.
fn publish_fake(mut registry: Registry) -> Registry {
    registry.publish(
        "fake-dep",
        "1.0.0",
        json!({"main": "index.js"}),
        &[("index.js", "module.exports = { who: 'fake-dep 1.0.0' };\n")],
    );
    registry.signing = Signing::Registry;
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        let server = format!(
            "#!/usr/bin/env node\n\
             const dep = require('fake-dep');\n\
             const lines = require('readline').createInterface({{ input: process.stdin }});\n\
             lines.on('line', (line) => {{\n\
               const request = JSON.parse(line);\n\
               if (request.method !== 'initialize') return;\n\
               process.stdout.write(JSON.stringify({{ jsonrpc: '2.0', id: request.id, result: {{\n\
                 protocolVersion: '2024-11-05', capabilities: {{}},\n\
                 serverInfo: {{ name: 'fake-mcp', version: '{version}', uses: dep.who }} }} }}) + '\\n');\n\
             }});\n"
        );
        registry.publish(
            "fake-mcp",
            version,
            json!({"bin": {"fake-mcp": "bin/server.js"}, "dependencies": {"fake-dep": "^1.0.0"}}),
            &[("bin/server.js", &server)],
        );
    }
    registry
}
