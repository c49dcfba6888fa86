//! A static npm registry on 127.0.0.1 for the payload tests: packuments and tarballs
//! built at test time, and `fake-mcp`, an MCP server that needs a dependency.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
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

/// A static npm registry under `root`: `registry/NAME` documents, `tarballs/*.tgz`.
pub struct Registry {
    root: PathBuf,
    pub server: FileServer,
    /// Per package: version -> (its `package.json`, its tarball's URL and integrity).
    packages: std::collections::BTreeMap<String, Vec<(String, Value)>>,
    /// Per package: version -> when it was published (the packument's `time`).
    times: std::collections::BTreeMap<String, serde_json::Map<String, Value>>,
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
        }
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

fn publish_fake(mut registry: Registry) -> Registry {
    registry.publish(
        "fake-dep",
        "1.0.0",
        json!({"main": "index.js"}),
        &[("index.js", "module.exports = { who: 'fake-dep 1.0.0' };\n")],
    );
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
