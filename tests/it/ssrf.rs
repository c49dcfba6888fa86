//! The server's fetches stay within its source policy (issue #17 item 1, read SSRF): a
//! redirect from an allowed host to an internal address, another host or plain http is
//! refused, for archives and for git over https, and an allowed name that resolves to an
//! internal address is refused before anything connects, unless the operator allows local
//! sources or pins the name (`--resolve`).
//!
//! Everything stays on this machine: a forge on 127.0.0.1 answers https for `github.com`
//! with a certificate from a CA made here (trusted by the server under test through
//! `SSL_CERT_FILE`, which reqwest's rustls verifier reads on Linux), the server pins
//! `github.com` to it with `--resolve`, and an "internal" service on 127.0.0.9 stands for
//! what the redirects aim at (a metadata service, an admin port). Each test first shows
//! the attack is real (the forge redirects, the internal service answers its secret), then
//! that the server refuses it with 403, writes nothing, and never reaches the internal
//! service.

use crate::common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::{ServeProcess, TestContext, fixtures, list_dir};
use serde_json::{Value, json};

/// Where the internal service listens: loopback, but not the forge's address.
const INTERNAL_IP: &str = "127.0.0.9";

/// A CA and a certificate for `github.com` and `localhost` it signed, made with the
/// `openssl` command in `dir`.
pub(crate) struct Certs {
    pub(crate) ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl Certs {
    /// `None` (after [`common::require_or_skip`], which fails in CI) when `openssl` or
    /// `python3` (the forge) is missing.
    pub(crate) fn make(dir: &Path) -> Option<Self> {
        for (tool, arg, package) in [
            ("openssl", "version", "openssl"),
            ("python3", "--version", "python3"),
        ] {
            if Command::new(tool).arg(arg).output().is_err() {
                common::require_or_skip(
                    &format!("`{tool}` (the test's certificates and forge)"),
                    &format!("install it (Debian: `{package}`)"),
                );
                return None;
            }
        }
        std::fs::create_dir_all(dir).expect("mkdir");
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .current_dir(dir)
                .args(args)
                .stdin(Stdio::null())
                .output()
                .expect("run openssl");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        openssl(
            &[
                &["req", "-x509", "-nodes", "-days", "2"],
                &ec[..],
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-subj",
                    "/CN=berth test CA",
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req", "-nodes"][..],
                &ec[..],
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=github.com",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            dir.join("server.ext"),
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\nsubjectAltName=DNS:github.com,DNS:localhost\n",
        )
        .expect("write extensions");
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ]);
        Some(Self {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        })
    }
}

/// `fixtures/https_server.py`: a forge on 127.0.0.1 serving `root` (files, and git
/// repositories through `git http-backend`) over https with [`Certs`]'s certificate.
pub(crate) struct Forge {
    child: std::process::Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl Forge {
    /// Starts it; each `(path, url)` of `redirects` answers `path` (with its query) with
    /// `302 Location: url`.
    pub(crate) fn start(
        root: &Path,
        certs: &Certs,
        log: &Path,
        redirects: &[(&str, String)],
    ) -> Self {
        use std::io::BufRead;
        let mut cmd = Command::new("python3");
        cmd.arg(fixtures().join("https_server.py"))
            .arg(root)
            .arg("--cert")
            .arg(&certs.cert)
            .arg("--key")
            .arg(&certs.key);
        for (path, url) in redirects {
            cmd.arg("--redirect").arg(path).arg(url);
        }
        let mut child = cmd
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).expect("create forge log"))
            .spawn()
            .expect("start fixtures/https_server.py");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read port");
        let port = line.trim().parse().expect("the forge prints its port");
        Self {
            child,
            port,
            log: log.to_owned(),
        }
    }

    /// Its log: `CONNECT address` per connection (before the TLS handshake), `GET /path`
    /// per request.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn connections(&self) -> usize {
        self.log()
            .iter()
            .filter(|l| l.starts_with("CONNECT "))
            .count()
    }

    /// `https://github.com:PORT/path`, which the server under test pins to 127.0.0.1.
    fn github(&self, path: &str) -> String {
        format!("https://github.com:{}/{path}", self.port)
    }
}

impl Drop for Forge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The internal service a redirect aims at: a plain listener on 127.0.0.9 that records
/// every connection (and its first line) and answers anything with a valid archive of a
/// plugin named `secret`, so a server that reached it would have something to store.
struct Internal {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Internal {
    fn start(dir: &Path) -> Self {
        let plugin = dir.join("secret-plugin");
        std::fs::create_dir_all(plugin.join("skills")).expect("mkdir");
        std::fs::write(
            plugin.join("skills/secret.md"),
            "the metadata service's token\n",
        )
        .expect("write");
        let body = common::tar_gz(&plugin, "secret");
        let listener = std::net::TcpListener::bind((INTERNAL_IP, 0)).expect("bind 127.0.0.9");
        let port = listener.local_addr().expect("addr").port();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut stream) = stream else { continue };
                let peer = stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                let mut head = vec![0u8; 1024];
                let n = stream.read(&mut head).unwrap_or(0);
                let head = &head[..n];
                let first = if head.first() == Some(&0x16) {
                    "a TLS handshake".to_owned()
                } else {
                    String::from_utf8_lossy(head)
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                };
                seen2.lock().expect("log").push(format!("{peer}: {first}"));
                let _ = stream.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                );
                let _ = stream.write_all(&body);
            }
        });
        Self {
            port,
            seen,
            stop,
            handle: Some(handle),
        }
    }

    fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://{INTERNAL_IP}:{}/{path}", self.port)
    }

    /// What reached it since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().expect("log"))
    }
}

impl Drop for Internal {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect((INTERNAL_IP, self.port));
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// One test's world: a context whose upstream folder the forge serves (archives at its
/// top, git repositories as `acme/NAME.git`), the certificates, the internal service.
struct Lab {
    ctx: TestContext,
    certs: Certs,
    internal: Internal,
}

impl Lab {
    fn new() -> Option<Self> {
        let ctx = TestContext::new();
        let certs = Certs::make(&ctx.root.join("tls"))?;
        let internal = Internal::start(&ctx.root);
        // Archives are served as `acme/NAME` too, as the context's repositories are.
        std::os::unix::fs::symlink(&ctx.upstream, ctx.upstream.join("acme")).expect("acme link");
        let plugin = ctx.root.join("tools");
        std::fs::create_dir_all(plugin.join("skills")).expect("mkdir");
        std::fs::write(plugin.join("skills/tools.md"), "a tool\n").expect("write");
        std::fs::write(
            ctx.upstream.join("x.tar.gz"),
            common::tar_gz(&plugin, "tools"),
        )
        .expect("write archive");
        Some(Self {
            ctx,
            certs,
            internal,
        })
    }

    /// A git repository served as `acme/NAME.git`.
    fn repo(&self, name: &str) {
        let repo = self.ctx.repo(name);
        repo.copy_fixture("lint", "");
        repo.write(".plugin/plugin.json", &format!("{{\"name\": \"{name}\"}}"));
        repo.commit("plugin");
    }

    fn forge(&self, redirects: &[(&str, String)]) -> Forge {
        Forge::start(
            &self.ctx.upstream,
            &self.certs,
            &self.ctx.root.join("forge.log"),
            redirects,
        )
    }

    /// `berth serve` with the default allowed hosts (github.com among them), trusting the
    /// test's CA, with `args`.
    fn serve(&self, data: &Path, args: &[&str]) -> ServeProcess {
        self.serve_with(data, args, None)
    }

    /// [`Lab::serve`], with `BERTH_RESOLVE` set to `resolve`.
    fn serve_with(&self, data: &Path, args: &[&str], resolve: Option<&str>) -> ServeProcess {
        let mut cmd = self.ctx.berth();
        cmd.env("SSL_CERT_FILE", &self.certs.ca)
            .env_remove("SSL_CERT_DIR")
            .env_remove("BERTH_RESOLVE");
        if let Some(resolve) = resolve {
            cmd.env("BERTH_RESOLVE", resolve);
        }
        // A proxy would resolve names itself; these requests go straight to 127.0.0.0/8.
        for proxy in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env_remove(proxy);
        }
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .args(args);
        ServeProcess::start(cmd)
    }

    /// A client of the test's own that trusts the CA, reaches `github.com` at the forge
    /// and follows no redirect: how the test shows an attack's setup is real.
    fn probe(&self, forge: &Forge) -> reqwest::blocking::Client {
        let ca = std::fs::read(&self.certs.ca).expect("read CA");
        reqwest::blocking::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&ca).expect("CA")])
            .resolve("github.com", SocketAddr::from(([127, 0, 0, 1], forge.port)))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .expect("client")
    }

    /// Shows the setup is real: `from` on the forge redirects to `to`, and the internal
    /// service answers its secret to anyone on this machine (that probe is then forgotten).
    fn show_redirect(&self, forge: &Forge, from: &str, to: &str) {
        let response = self.probe(forge).get(from).send().expect("GET the forge");
        assert_eq!(response.status().as_u16(), 302, "{from}");
        assert_eq!(
            response.headers()["location"].to_str().expect("location"),
            to
        );
        let secret = reqwest::blocking::Client::builder()
            .no_proxy()
            .build()
            .expect("client")
            .get(self.internal.url("http", "secret.tar.gz"))
            .send()
            .expect("GET the internal service")
            .bytes()
            .expect("body");
        assert!(secret.len() > 100, "the internal service answers");
        assert_eq!(self.internal.take().len(), 1);
    }

    /// Fails unless the server wrote nothing: no store entry, no conversation on disk or
    /// in its list.
    fn assert_nothing_written(&self, server: &ServeProcess, data: &Path) {
        assert!(
            self.ctx.store_entries().is_empty(),
            "nothing in store-v1/: {:?}",
            self.ctx.store_entries()
        );
        assert!(
            list_dir(&data.join("conversations")).is_empty(),
            "no conversation folder"
        );
        let (status, listed) = server.get("/api/conversations");
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<Value>(&listed).expect("JSON")["conversations"],
            json!([]),
            "no conversation listed"
        );
    }
}

/// `POST /api/conversations` with one plugin; the status and the error message (if any).
fn start(server: &ServeProcess, source: &str) -> (u16, String) {
    let (status, body) = server.post(&json!({"plugins": [{"source": source}]}));
    let message = serde_json::from_str::<Value>(&body).expect("JSON")["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (status, if status == 201 { body } else { message })
}

#[test]
fn an_archive_redirected_to_an_internal_address_is_refused() {
    let Some(lab) = Lab::new() else { return };
    let to = lab.internal.url("http", "secret.tar.gz");
    let forge = lab.forge(&[("/acme/x.tar.gz", to.clone())]);
    let from = forge.github("acme/x.tar.gz");
    lab.show_redirect(&forge, &from, &to);
    let data = lab.ctx.root.join("data");
    let server = lab.serve(&data, &["--resolve", "github.com=127.0.0.1"]);
    let (status, message) = start(&server, &from);
    assert_eq!(status, 403, "{message}");
    assert!(
        message.contains(&format!("redirect to `{to}` refused")),
        "the error names the redirect: {message}"
    );
    assert!(
        forge
            .log()
            .iter()
            .filter(|l| *l == "GET /acme/x.tar.gz")
            .count()
            == 2,
        "the server asked the forge (as the probe did): {:?}",
        forge.log()
    );
    assert_eq!(
        lab.internal.take(),
        Vec::<String>::new(),
        "nothing reached 127.0.0.9"
    );
    lab.assert_nothing_written(&server, &data);
    server.stop();
}

#[test]
fn an_archive_redirected_to_another_host_or_an_internal_https_address_is_refused() {
    let Some(lab) = Lab::new() else { return };
    // `evil.example` is pinned to the internal service too, so a server that followed
    // the redirect would reach 127.0.0.9 (and nothing off this machine): only the host
    // rule stands in its way, since a pinned name's address is not checked.
    let evil = format!("https://evil.example:{}/secret.tar.gz", lab.internal.port);
    let internal = lab.internal.url("https", "secret.tar.gz");
    let forge = lab.forge(&[
        ("/acme/evil.tar.gz", evil.clone()),
        ("/acme/internal.tar.gz", internal.clone()),
    ]);
    lab.show_redirect(&forge, &forge.github("acme/evil.tar.gz"), &evil);
    lab.show_redirect(&forge, &forge.github("acme/internal.tar.gz"), &internal);
    let data = lab.ctx.root.join("data");
    let server = lab.serve(
        &data,
        &[
            "--resolve",
            "github.com=127.0.0.1",
            "--resolve",
            &format!("evil.example={INTERNAL_IP}"),
        ],
    );
    for (path, to, why) in [
        (
            "acme/evil.tar.gz",
            &evil,
            "host `evil.example` is not allowed",
        ),
        ("acme/internal.tar.gz", &internal, "an internal address"),
    ] {
        let (status, message) = start(&server, &forge.github(path));
        assert_eq!(status, 403, "{path}: {message}");
        assert!(
            message.contains(&format!("redirect to `{to}` refused")),
            "the error names the redirect: {message}"
        );
        assert!(message.contains(why), "{message}");
    }
    assert_eq!(
        lab.internal.take(),
        Vec::<String>::new(),
        "nothing reached 127.0.0.9"
    );
    lab.assert_nothing_written(&server, &data);
    server.stop();
}

#[test]
fn git_over_https_redirected_to_an_internal_address_is_refused() {
    let Some(lab) = Lab::new() else { return };
    lab.repo("repo");
    lab.repo("moved");
    lab.repo("other");
    let refs = "info/refs?service=git-upload-pack";
    let to = lab.internal.url("http", &format!("acme/repo.git/{refs}"));
    let forge = lab.forge(&[
        (&format!("/acme/repo.git/{refs}"), to.clone()),
        // To an allowed host: still refused, git must fetch the URL that was checked.
        (
            &format!("/acme/moved.git/{refs}"),
            format!("https://github.com:{{PORT}}/acme/other.git/{refs}"),
        ),
    ]);
    lab.show_redirect(&forge, &forge.github(&format!("acme/repo.git/{refs}")), &to);
    let data = lab.ctx.root.join("data");
    let server = lab.serve(&data, &["--resolve", "github.com=127.0.0.1"]);
    let (status, message) = start(&server, &forge.github("acme/repo.git"));
    assert_eq!(status, 403, "{message}");
    assert!(
        message.contains(&format!("redirect to `{to}` refused")),
        "the error names the redirect: {message}"
    );
    assert_eq!(
        lab.internal.take(),
        Vec::<String>::new(),
        "nothing reached 127.0.0.9"
    );
    let (status, message) = start(&server, &forge.github("acme/moved.git"));
    assert_eq!(status, 403, "{message}");
    assert!(message.contains("give that URL instead"), "{message}");
    assert!(
        !forge.log().iter().any(|l| l.starts_with("POST")),
        "git never asked the forge for a pack: {:?}",
        forge.log()
    );
    lab.assert_nothing_written(&server, &data);
    // The same forge, without a redirect: git over https under the pin works.
    let (status, body) = start(&server, &forge.github("acme/other.git"));
    assert_eq!(status, 201, "{body}");
    assert!(
        forge
            .log()
            .iter()
            .any(|l| l == "POST /acme/other.git/git-upload-pack")
    );
    assert_eq!(lab.internal.take(), Vec::<String>::new());
    server.stop();
}

#[test]
fn an_allowed_name_that_resolves_to_loopback_is_refused_unless_local_sources_are_on() {
    let Some(lab) = Lab::new() else { return };
    lab.repo("repo");
    let forge = lab.forge(&[]);
    let archive = format!("https://localhost:{}/acme/x.tar.gz", forge.port);
    let git = format!("https://localhost:{}/acme/repo.git", forge.port);
    // The setup is real: `localhost` is this machine, and the forge answers it.
    let ca = std::fs::read(&lab.certs.ca).expect("read CA");
    let probe = reqwest::blocking::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&ca).expect("CA")])
        .no_proxy()
        .build()
        .expect("client");
    assert_eq!(
        probe.get(&archive).send().expect("GET").status().as_u16(),
        200
    );
    let before = forge.connections();
    let data = lab.ctx.root.join("data");
    let server = lab.serve(&data, &["--allow-host", "localhost"]);
    for source in [&archive, &git] {
        let (status, message) = start(&server, source);
        assert_eq!(status, 403, "{source}: {message}");
        assert!(
            message.contains("`localhost` is at `127.0.0.1`, an internal address"),
            "{message}"
        );
    }
    assert_eq!(
        forge.connections(),
        before,
        "nothing connected to the forge: {:?}",
        forge.log()
    );
    lab.assert_nothing_written(&server, &data);
    server.stop();
    // With local sources on, the same fetches are made.
    let data = lab.ctx.root.join("data-local");
    let server = lab.serve(
        &data,
        &["--allow-host", "localhost", "--allow-local-sources"],
    );
    for source in [&archive, &git] {
        let (status, body) = start(&server, source);
        assert_eq!(status, 201, "{source}: {body}");
    }
    assert!(forge.connections() > before);
    server.stop();
}

#[test]
fn an_archive_on_a_pinned_allowed_host_is_fetched() {
    // The control: the certificates, the forge and the pin work, so the refusals above
    // are the policy's, not a broken setup's.
    let Some(lab) = Lab::new() else { return };
    let forge = lab.forge(&[]);
    let data = lab.ctx.root.join("data");
    let server = lab.serve(&data, &["--resolve", "github.com=127.0.0.1"]);
    let (status, body) = start(&server, &forge.github("acme/x.tar.gz"));
    assert_eq!(status, 201, "{body}");
    assert_eq!(lab.ctx.store_entries().len(), 1);
    assert!(forge.log().iter().any(|l| l == "GET /acme/x.tar.gz"));
    // The pin comes from `BERTH_RESOLVE` as well as from the flag.
    server.stop();
    let data = lab.ctx.root.join("data-env");
    let server = lab.serve_with(
        &data,
        &[],
        Some("gitlab.com=127.0.0.2,github.com=127.0.0.1"),
    );
    let fetched = |log: Vec<String>| log.iter().filter(|l| *l == "GET /acme/x.tar.gz").count();
    let before = fetched(forge.log());
    let (status, body) = start(&server, &forge.github("acme/x.tar.gz"));
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        fetched(forge.log()),
        before + 1,
        "fetched again, at the pin"
    );
    assert_eq!(lab.internal.take(), Vec::<String>::new());
    server.stop();
}
