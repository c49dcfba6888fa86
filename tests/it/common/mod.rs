//! The test harness shared by the end-to-end tests: a [`TestContext`] owns a temporary
//! home, store, working folder and an "upstream" folder of git repositories that the
//! tests build with the real `git`, served to berth as `file://` URLs (and as `github:`
//! through `BERTH_GITHUB_URL`). Nothing reaches the network.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The real OpenHands agent server on 127.0.0.1.
pub mod agent_server;
/// The marketplace the marketplace tests build.
pub mod market;
/// A real S3 server on 127.0.0.1.
pub mod moto;
/// A tmpfs or a read-only view of a folder, for the fault tests.
pub mod mount;
/// berth's Python extension, built for the tests that load it.
pub mod native;
/// A static npm registry on 127.0.0.1.
pub mod npm;
// The CI rule for a missing tool, shared with the store's tests.
#[path = "skip.rs"]
mod skip;
#[allow(unused_imports)] // each test binary uses a part of the harness
pub use skip::{in_ci, require_or_skip};

/// Whether the program `tool` is on `PATH` (an executable file of that name in one of
/// its folders).
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Runs a berth command and snapshots what a user sees of it, as uv's `uv_snapshot!`: its
/// exit status, stdout and stderr, after `filters` (from [`TestContext::filters`]) replace
/// what changes from run to run. Returns the [`Run`] for further checks.
///
/// ```ignore
/// berth_snapshot!(ctx.filters(), ctx.berth().args(["plugins", "lock"]), @r"
/// success: false
/// exit_code: 1
/// ----- stdout -----
///
/// ----- stderr -----
/// error: …
/// ");
/// ```
///
/// Review a changed or new snapshot with `cargo insta review`, or accept them all with
/// `INSTA_UPDATE=always` after reading the diff (docs/testing.md).
macro_rules! berth_snapshot {
    ($filters:expr, $cmd:expr, @$snapshot:literal) => {{
        let (snapshot, run) = $crate::common::run_and_format($cmd, &$filters);
        ::insta::assert_snapshot!(snapshot, @$snapshot);
        run
    }};
}

/// Runs `cmd` and returns the text `berth_snapshot!` compares (status, then stdout and
/// stderr with `filters` applied) and the run itself, unfiltered.
pub fn run_and_format(cmd: &mut Command, filters: &[(String, String)]) -> (String, Run) {
    let run = Run::from(cmd.output().expect("run berth"));
    let snapshot = format!(
        "success: {}\nexit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        run.code == 0,
        run.code,
        apply_filters(&run.stdout, filters),
        apply_filters(&run.stderr, filters),
    );
    (snapshot, run)
}

/// `text` with every `(regex, replacement)` of `filters` applied, in order.
pub fn apply_filters(text: &str, filters: &[(String, String)]) -> String {
    let mut text = text.to_owned();
    for (pattern, replacement) in filters {
        let regex = regex::Regex::new(pattern).expect("a filter is a valid regex");
        text = regex.replace_all(&text, replacement.as_str()).into_owned();
    }
    text
}

/// Runs `cmd` (a berth command) with `BERTH_FAULT_PAUSE=step`, waits until it pauses at
/// that step and kills it with SIGKILL there. Fails the test if berth ends without
/// reaching the step. Returns what berth printed to stderr before pausing.
pub fn kill_at_step(cmd: &mut Command, step: &str) -> String {
    use std::io::BufRead;
    let mut child = cmd
        .env(berth_store::fault::ENV, step)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn berth");
    let marker = format!("{}{step}", berth_store::fault::MARKER);
    let mut seen = String::new();
    for line in std::io::BufReader::new(child.stderr.take().expect("stderr")).lines() {
        let line = line.expect("read berth's stderr");
        if line == marker {
            child.kill().expect("SIGKILL");
            child.wait().expect("reap");
            return seen;
        }
        seen.push_str(&line);
        seen.push('\n');
    }
    let status = child.wait().expect("reap");
    panic!("berth ended ({status}) without reaching fault step `{step}`:\n{seen}");
}

/// The processes of this machine whose command line holds every one of `words` (read from
/// `/proc/*/cmdline`; a zombie's is empty): what a test looks for to show that a program it
/// had berth start is gone.
pub fn processes_mentioning(words: &[&str]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| {
            let line = std::fs::read(e.path().join("cmdline")).ok()?;
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            words
                .iter()
                .all(|w| line.contains(w))
                .then(|| format!("{}: {}", e.file_name().to_string_lossy(), line.trim()))
        })
        .collect()
}

/// Waits up to `seconds` for [`processes_mentioning`] `words` to find none; returns what
/// it still finds then.
pub fn processes_left(words: &[&str], seconds: u64) -> Vec<String> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        let left = processes_mentioning(words);
        if left.is_empty() || std::time::Instant::now() > until {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Every regular file under `dir` (symlinks are not followed), appended to `out`.
pub fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        if meta.is_dir() {
            all_files(&path, out);
        } else if meta.is_file() {
            out.push(path);
        }
    }
}

/// Starts `cmd` (a `berth serve --addr 127.0.0.1:0 …`) with `BERTH_FAULT_PAUSE=step`, sends
/// it `POST /api/conversations` with `body` once it listens, and kills it with SIGKILL
/// where the start pauses at `step`. Fails the test if the server never gets there.
pub fn kill_serve_mid_start(cmd: &mut Command, step: &str, body: &serde_json::Value) {
    use std::io::BufRead;
    let mut child = cmd
        .env(berth_store::fault::ENV, step)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start berth serve");
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("berth serve printed its address")
            .expect("line");
        if let Some(addr) = line.split("Listening on ").nth(1) {
            break addr.trim().to_owned();
        }
    };
    let body = body.to_string();
    std::thread::spawn(move || {
        // Never answered: the server is killed first.
        let _ = reqwest::blocking::Client::new()
            .post(format!("{base}/api/conversations"))
            .header("content-type", "application/json")
            .body(body)
            .send();
    });
    let marker = format!("{}{step}", berth_store::fault::MARKER);
    let reached = lines.any(|line| line.is_ok_and(|l| l == marker));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert!(
        reached,
        "berth serve ended without reaching fault step `{step}`"
    );
}

/// The `berth` binary under test, pinned for this test process (see [`pinned`]).
pub fn berth_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| pinned(Path::new(env!("CARGO_BIN_EXE_berth"))))
        .clone()
}

/// `built` (a file cargo built) under a name the tests own: a hard link, in cargo's folder
/// for test data, to the very file. The tests run side by side in one process, and one of
/// them builds berth again (the wheel in `python_package` builds through cargo in the same
/// target folder), which makes cargo replace `target/debug/berth` and
/// `libberth_native.so`: through the link, a test running beside it still starts the file
/// it started with instead of finding the path missing for a moment. The link is replaced
/// by a rename, so no process ever sees it missing either.
pub fn pinned(built: &Path) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pinned");
    std::fs::create_dir_all(&dir).expect("create the folder for pinned binaries");
    let name = built.file_name().expect("a built file has a name");
    let pinned = dir.join(name);
    let staged = dir.join(format!("{}.{}", name.to_string_lossy(), std::process::id()));
    let _ = std::fs::remove_file(&staged);
    std::fs::hard_link(built, &staged).expect("link the built file");
    std::fs::rename(&staged, &pinned).expect("rename the link into place");
    pinned
}

/// The repository's `fixtures/` folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

pub struct TestContext {
    _root: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub work: PathBuf,
    pub store: PathBuf,
    pub upstream: PathBuf,
    /// Where `github:` leads: `file://` the upstream folder, unless
    /// [`TestContext::serve_github_over_http`] set a server.
    github_url: std::sync::Mutex<Option<String>>,
}

impl Default for TestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl TestContext {
    pub fn new() -> Self {
        let root_dir = tempfile::Builder::new()
            .prefix("berth-test-")
            .tempdir()
            .expect("create temp dir");
        let root = root_dir.path().canonicalize().expect("canonical temp dir");
        let ctx = Self {
            home: root.join("home"),
            work: root.join("work"),
            store: root.join("store"),
            upstream: root.join("upstream"),
            root,
            _root: root_dir,
            github_url: std::sync::Mutex::new(None),
        };
        for dir in [&ctx.home, &ctx.work, &ctx.upstream] {
            std::fs::create_dir_all(dir).expect("create test folder");
        }
        ctx
    }

    /// `berth` with this context's home, store and `github:` base, run in the work folder.
    pub fn berth(&self) -> Command {
        let mut cmd = Command::new(berth_bin());
        cmd.current_dir(&self.work);
        apply_env(&mut cmd, &self.home);
        cmd.env("BERTH_STORE", &self.store)
            .env("BERTH_GITHUB_URL", self.github_url());
        cmd
    }

    /// The `github:` base the commands run here get.
    pub fn github_url(&self) -> String {
        self.github_url
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| format!("file://{}", self.upstream.display()))
    }

    /// Serves the upstream repositories over HTTP (`git http-backend` on 127.0.0.1) and
    /// points `github:` at the server for every later command, for tests of what only a
    /// remote has (git caches, fetch progress): a `file://` repository is read in place.
    pub fn serve_github_over_http(&self) -> GitHttpServer {
        let server = GitHttpServer::start(&self.upstream, &self.root.join("github-http.log"), &[]);
        *self
            .github_url
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(server.url());
        server
    }

    /// Runs `berth ARGS` and returns what it did.
    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.berth().args(args).output().expect("run berth"))
    }

    /// Runs `berth ARGS` and fails the test unless it succeeds.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(run.code, 0, "berth {args:?} failed:\n{}", run.stderr);
        run
    }

    /// Runs `berth ARGS` in folder `dir` and fails the test unless it succeeds.
    pub fn ok_in(&self, dir: &Path, args: &[&str]) -> Run {
        let run = Run::from(
            self.berth()
                .current_dir(dir)
                .args(args)
                .output()
                .expect("run berth"),
        );
        assert_eq!(
            run.code,
            0,
            "berth {args:?} in {} failed:\n{}",
            dir.display(),
            run.stderr
        );
        run
    }

    pub fn write_manifest(&self, text: &str) {
        std::fs::write(self.work.join("plugins.toml"), text).expect("write manifest");
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.work.join("plugins.toml")
    }

    pub fn lock_path(&self) -> PathBuf {
        self.work.join("plugins.lock")
    }

    pub fn lock_text(&self) -> String {
        std::fs::read_to_string(self.lock_path()).expect("read plugins.lock")
    }

    /// A new git repository `upstream/NAME.git` (reachable as `github:acme/NAME` too,
    /// through the `acme` link the context makes).
    pub fn repo(&self, name: &str) -> GitRepo {
        let acme = self.upstream.join("acme");
        if !acme.exists() {
            std::os::unix::fs::symlink(&self.upstream, &acme).expect("acme link");
        }
        GitRepo::init(&self.upstream.join(format!("{name}.git")), &self.home)
    }

    /// `text` with this context's temporary folder replaced by `[TMP]`, so a snapshot of
    /// it is the same on every run.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.root.display().to_string(), "[TMP]")
    }

    /// What [`berth_snapshot!`] replaces in a command's output, so a snapshot is the same
    /// on every run: this context's temporary folder (`[TMP]`), a port the system chose on
    /// 127.0.0.1 (`[PORT]`; fixed low ports such as the discard port 9 stay) and the time a
    /// command took (`[TIME]`).
    pub fn filters(&self) -> Vec<(String, String)> {
        vec![
            (
                regex::escape(&self.root.display().to_string()),
                "[TMP]".to_owned(),
            ),
            (
                r"127\.0\.0\.1:\d{4,5}\b".to_owned(),
                "127.0.0.1:[PORT]".to_owned(),
            ),
            (r"\bin \d+\.\d+s\b".to_owned(), "in [TIME]".to_owned()),
        ]
    }

    /// [`Self::filters`], and the `Fetching` and `Added` status lines left out: berth
    /// fetches and adds plugins side by side, so with more than one those lines come in
    /// a different order from run to run.
    pub fn filters_unordered(&self) -> Vec<(String, String)> {
        let mut filters = self.filters();
        filters.push((r"(?m)^ *(Fetching|Added) .*\n".to_owned(), String::new()));
        filters
    }

    /// The store's entries (`store-v1/*`), sorted.
    pub fn store_entries(&self) -> Vec<String> {
        list_dir(&self.store.join("store-v1"))
    }

    /// Removes every store entry: `lock` stores what it adds (to scan it), so a test of
    /// what `sync` alone adds starts from an empty store.
    #[allow(dead_code)]
    pub fn wipe_store_entries(&self) {
        for entry in self.store_entries() {
            berth_store::remove_tree(&self.store.join("store-v1").join(entry))
                .expect("remove a store entry");
        }
    }
}

/// Where berth keeps a plugin's writable data (`${PLUGIN_DATA}`): per plugin, by its name
/// and locked source (docs/openhands-sdk.md), so an update keeps it.
#[allow(dead_code)]
pub fn plugin_data_dir(store: &Path, name: &str, source: &str) -> PathBuf {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(source.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    store.join("plugin-data-v1").join(format!("{name}-{hex}"))
}

/// `fixtures/git_http_server.py` serving a folder of repositories on 127.0.0.1; stopped
/// when dropped. Its request log is read with [`GitHttpServer::requests`].
pub struct GitHttpServer {
    child: std::process::Child,
    pub port: u16,
    log: PathBuf,
}

impl GitHttpServer {
    pub fn start(root: &Path, log: &Path, extra: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .arg(fixtures().join("git_http_server.py"))
            .arg(root)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).expect("create server log"))
            .spawn()
            .expect("start git_http_server.py (needs python3)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read port");
        let port = line.trim().parse().expect("the server prints its port");
        Self {
            child,
            port,
            log: log.to_owned(),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The request lines served so far (`GET /path`, `POST /path`).
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with("INFLIGHT") && !l.starts_with("FETCH"))
            .map(str::to_owned)
            .collect()
    }

    /// The repositories (paths) a pack was requested from, one entry per pack request.
    pub fn fetches(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("FETCH "))
            .map(str::to_owned)
            .collect()
    }

    /// The most requests that were being served at the same time.
    pub fn max_in_flight(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("INFLIGHT ")?.parse().ok())
            .max()
            .unwrap_or(0)
    }
}

impl Drop for GitHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small HTTP/1.1 file server on 127.0.0.1 for archive tests: serves `root`, can cut a
/// file's body short (a truncated download), can demand basic auth, and logs requests.
/// A path ending in `/` serves that folder's `index.html` (so it can serve the PEP 503
/// index [`build_agent_index`] writes); `.html` goes out as `text/html`, the rest as
/// `application/octet-stream`.
pub struct FileServer {
    pub port: u16,
    pub root: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    truncated: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    slow: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    redirects: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl FileServer {
    /// Serves `root`; with `auth` (`user:password`) every request needs it.
    pub fn start(root: &Path, auth: Option<&str>) -> Self {
        let expected_auth = auth.map(|a| {
            use base64::Engine as _;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(a)
            )
        });
        Self::serve(root, expected_auth)
    }

    /// Serves `root` to requests whose `Authorization` header is `authorization`
    /// (`Bearer TOKEN`), answering any other with 401.
    pub fn start_requiring(root: &Path, authorization: &str) -> Self {
        Self::serve(root, Some(authorization.to_owned()))
    }

    fn serve(root: &Path, expected_auth: Option<String>) -> Self {
        use std::io::{BufRead, BufReader, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let truncated: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let slow: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let redirects: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>> = Default::default();
        let log: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let (root_dir, stop2, truncated2, slow2, redirects2, log2) = (
            root.to_owned(),
            stop.clone(),
            truncated.clone(),
            slow.clone(),
            redirects.clone(),
            log.clone(),
        );
        let handle = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut stream) = stream else { continue };
                let (root, truncated, slow, redirects, log, expected_auth) = (
                    root_dir.clone(),
                    truncated2.clone(),
                    slow2.clone(),
                    redirects2.clone(),
                    log2.clone(),
                    expected_auth.clone(),
                );
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut request = String::new();
                    let _ = reader.read_line(&mut request);
                    let mut authorization = None;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = line.split_once(':')
                            && k.eq_ignore_ascii_case("authorization")
                        {
                            authorization = Some(v.trim().to_owned());
                        }
                    }
                    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    log.lock()
                        .expect("log")
                        .push(format!("GET {path} auth={}", authorization.is_some()));
                    let location = redirects
                        .lock()
                        .expect("lock")
                        .iter()
                        .find(|(from, _)| *from == path)
                        .map(|(_, to)| to.clone());
                    if let Some(location) = location {
                        let _ = stream.write_all(format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes());
                        return;
                    }
                    if expected_auth.is_some() && authorization != expected_auth {
                        let _ = stream.write_all(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        return;
                    }
                    let rel = path
                        .trim_start_matches('/')
                        .split(['?', '#'])
                        .next()
                        .unwrap_or("");
                    let mut file = root.join(rel);
                    if rel.is_empty() || rel.ends_with('/') {
                        // A folder with an `index.json` is a PEP 691 simple-index page.
                        file.push("index.json");
                        if !file.is_file() {
                            file.set_file_name("index.html");
                        }
                    }
                    let content_type = match file.extension().and_then(|e| e.to_str()) {
                        Some("html") => "text/html",
                        Some("json") if file.ends_with("index.json") => {
                            "application/vnd.pypi.simple.v1+json"
                        }
                        _ => "application/octet-stream",
                    };
                    let Ok(body) = std::fs::read(&file) else {
                        let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        return;
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let cut = truncated.lock().expect("lock").contains(&path);
                    let send = if cut {
                        &body[..body.len() / 2]
                    } else {
                        &body[..]
                    };
                    if slow.lock().expect("lock").contains(&path) {
                        // A trickle: 1 KiB every 50 ms, until the client hangs up.
                        for chunk in send.chunks(1024) {
                            if stream
                                .write_all(chunk)
                                .and_then(|()| stream.flush())
                                .is_err()
                            {
                                log.lock().expect("log").push(format!("HANGUP {path}"));
                                return;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(50));
                        }
                        log.lock().expect("log").push(format!("SENT {path}"));
                    } else {
                        let _ = stream.write_all(send);
                    }
                    let _ = stream.flush();
                });
            }
        });
        Self {
            port,
            root: root.to_owned(),
            stop,
            truncated,
            slow,
            redirects,
            log,
            handle: Some(handle),
        }
    }

    /// Answers `path` (with its query, if any) with `302 Location: location` from now on.
    pub fn redirect(&self, path: &str, location: &str) {
        self.redirects
            .lock()
            .expect("lock")
            .push((format!("/{path}"), location.to_owned()));
    }

    /// Sends `path`'s body slowly from now on (1 KiB every 50 ms), logging `HANGUP /path`
    /// if the client stops reading and `SENT /path` if it took it all.
    pub fn slow(&self, path: &str) {
        self.slow.lock().expect("lock").push(format!("/{path}"));
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// Sends only half of `path`'s body from now on (with the full `Content-Length`).
    pub fn truncate(&self, path: &str) {
        self.truncated
            .lock()
            .expect("lock")
            .push(format!("/{path}"));
    }

    pub fn requests(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// Builds the agent packages of `fixtures/agents/` into a PEP 503 index under `out` (wheels in `out/files/`).
/// With `deps` > 0 it also generates `bench-agent` 1.0.0, which depends on
/// `bench-dep-01`..`bench-dep-NN`. Needs `python3` >= 3.11 (stdlib only, no network).
pub fn build_agent_index(out: &Path, deps: usize) {
    let mut cmd = Command::new("python3");
    cmd.arg(fixtures().join("agents/build_index.py")).arg(out);
    if deps > 0 {
        cmd.arg("--deps").arg(deps.to_string());
    }
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .expect("run fixtures/agents/build_index.py (needs python3 >= 3.11)");
    assert!(
        output.status.success(),
        "build_index.py {} failed:\n{}",
        out.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A `.tar.gz` of `dir` with its files under `prefix/` (no prefix: at the top).
pub fn tar_gz(dir: &Path, prefix: &str) -> Vec<u8> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(encoder);
    builder.follow_symlinks(false);
    builder
        .append_dir_all(if prefix.is_empty() { "." } else { prefix }, dir)
        .expect("tar dir");
    builder.into_inner().expect("tar").finish().expect("gzip")
}

/// A plain `.tar` of `dir` under `prefix/`.
pub fn tar(dir: &Path, prefix: &str) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    builder.append_dir_all(prefix, dir).expect("tar dir");
    builder.into_inner().expect("tar")
}

/// A `.zip` of `dir` under `prefix/`, keeping the execute bits.
pub fn zip(dir: &Path, prefix: &str) -> Vec<u8> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    fn walk(dir: &Path, rel: &str, writer: &mut zip::ZipWriter<std::io::Cursor<Vec<u8>>>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry"))
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = format!("{rel}{}", entry.file_name().to_string_lossy());
            let meta = entry.metadata().expect("meta");
            if meta.is_dir() {
                writer
                    .add_directory(format!("{name}/"), zip::write::SimpleFileOptions::default())
                    .expect("dir");
                walk(&entry.path(), &format!("{name}/"), writer);
            } else {
                let options = zip::write::SimpleFileOptions::default()
                    .unix_permissions(meta.permissions().mode());
                writer.start_file(name, options).expect("file");
                writer
                    .write_all(&std::fs::read(entry.path()).expect("read"))
                    .expect("write");
            }
        }
    }
    let rel = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    if !prefix.is_empty() {
        writer
            .add_directory(rel.clone(), zip::write::SimpleFileOptions::default())
            .expect("dir");
    }
    walk(dir, &rel, &mut writer);
    writer.finish().expect("zip").into_inner()
}

/// The environment every spawned process gets: a private home, no user or system git
/// config, English messages, and none of the caller's berth settings.
pub fn apply_env(cmd: &mut Command, home: &Path) {
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("BERTH_LOG")
        .env_remove("BERTH_STORE")
        .env_remove("BERTH_GITHUB_URL")
        .env_remove("GIT_DIR");
}

pub fn list_dir(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| {
                e.expect("dir entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// What a berth run did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Self {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Run {
    /// The `error:` lines of stderr.
    pub fn errors(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect()
    }

    /// stderr without its status lines (which carry timings): the errors, warnings and
    /// notes a user reads, one per line.
    pub fn messages(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| !is_status(l)).collect()
    }
}

/// A cargo-style status line: a capitalised verb right-aligned to 12 columns.
pub fn is_status(line: &str) -> bool {
    let Some(verb) = line.get(..12) else {
        return false;
    };
    line.len() > 13
        && verb.starts_with("   ")
        && verb.trim_start().starts_with(char::is_uppercase)
        && line.as_bytes()[12] == b' '
}

/// A git repository built with the real `git`, with fixed identities and dates so the same
/// steps give the same commits.
pub struct GitRepo {
    pub path: PathBuf,
    home: PathBuf,
    tick: std::cell::Cell<u32>,
    /// The date the next commands commit and tag at ([`GitRepo::at`]), instead of the
    /// ticking one.
    date: std::cell::RefCell<Option<String>>,
}

impl GitRepo {
    pub fn init(path: &Path, home: &Path) -> Self {
        std::fs::create_dir_all(path).expect("create repo folder");
        let repo = Self {
            path: path.to_owned(),
            home: home.to_owned(),
            tick: std::cell::Cell::new(0),
            date: std::cell::RefCell::new(None),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// `file://` URL of the repository.
    pub fn url(&self) -> String {
        format!("file://{}", self.path.display())
    }

    pub fn git(&self, args: &[&str]) -> String {
        let tick = self.tick.get() + 1;
        self.tick.set(tick);
        let date = self
            .date
            .borrow()
            .clone()
            .unwrap_or_else(|| format!("{} +0000", 1_700_000_000 + u64::from(tick) * 60));
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.path).args(args);
        apply_env(&mut cmd, &self.home);
        let out = cmd
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .stdin(Stdio::null())
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Commits and tags from now on at `date` (as git reads `GIT_COMMITTER_DATE`:
    /// `2026-12-01T00:00:00Z`), the author, committer and tagger dates alike.
    pub fn at(&self, date: &str) -> &Self {
        *self.date.borrow_mut() = Some(date.to_owned());
        self
    }

    pub fn write(&self, rel: &str, content: &str) -> &Self {
        let path = self.path.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write file");
        self
    }

    pub fn write_exec(&self, rel: &str, content: &str) -> &Self {
        use std::os::unix::fs::PermissionsExt;
        self.write(rel, content);
        std::fs::set_permissions(self.path.join(rel), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        self
    }

    /// Copies a fixture plugin tree into `rel` (`""` for the root).
    pub fn copy_fixture(&self, fixture: &str, rel: &str) -> &Self {
        copy_tree(
            &fixtures().join("plugins").join(fixture),
            &self.path.join(rel),
        );
        self
    }

    /// Stages everything and commits; returns the commit id.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    pub fn rev(&self, name: &str) -> String {
        self.git(&["rev-parse", &format!("{name}^{{commit}}")])
    }

    pub fn tag(&self, name: &str) {
        self.git(&["tag", name]);
    }

    pub fn tag_annotated(&self, name: &str) {
        self.git(&["tag", "-a", name, "-m", &format!("release {name}")]);
    }
}

/// Copies folders, files (with their modes) and symlinks.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("entry");
        let kind = entry.file_type().expect("file type");
        let dest = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &dest);
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).expect("readlink");
            std::os::unix::fs::symlink(target, dest).expect("symlink");
        } else {
            std::fs::copy(entry.path(), dest).expect("copy");
        }
    }
}

/// The value of `key` in the `index`th `[[plugin]]` entry of a lockfile's text.
/// The `[[plugin]]` tables of a lockfile's text.
pub fn lock_plugins(lock: &str) -> Vec<toml::Value> {
    let value: toml::Value = toml::from_str(lock).expect("lockfile is TOML");
    value["plugin"].as_array().expect("plugins").clone()
}

pub fn lock_field(lock: &str, index: usize, key: &str) -> Option<String> {
    let value: toml::Value = toml::from_str(lock).expect("lockfile is TOML");
    value["plugin"]
        .as_array()?
        .get(index)?
        .get(key)?
        .as_str()
        .map(str::to_owned)
}

/// A running `berth serve` started from `cmd` (which must hold `serve --addr 127.0.0.1:0`),
/// killed on drop.
pub struct ServeProcess {
    child: std::process::Child,
    pub base: String,
    /// Everything the server logged so far.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl ServeProcess {
    pub fn start(mut cmd: Command) -> Self {
        use std::io::BufRead;
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start berth serve");
        let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("berth serve printed its address")
                .expect("line");
            if let Some(addr) = line.split("Listening on ").nth(1) {
                break addr.trim().to_owned();
            }
        };
        // Keep draining the log (and keep it) so the server never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut kept = kept.lock().expect("log");
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        Self { child, base, log }
    }

    /// What the server logged so far (after it printed its address).
    pub fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    pub fn delete(&self, path: &str) -> (u16, String) {
        let response = Self::client()
            .delete(format!("{}{path}", self.base))
            .send()
            .expect("DELETE");
        (response.status().as_u16(), response.text().expect("body"))
    }

    fn client() -> reqwest::blocking::Client {
        reqwest::blocking::Client::builder()
            .timeout(std::time::Duration::from_secs(120))
            .build()
            .expect("client")
    }

    pub fn post(&self, body: &serde_json::Value) -> (u16, String) {
        self.post_to("/api/conversations", body)
    }

    /// `POST PATH` with a JSON body.
    pub fn post_to(&self, path: &str, body: &serde_json::Value) -> (u16, String) {
        let response = Self::client()
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .expect("POST");
        (response.status().as_u16(), response.text().expect("body"))
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        let response = Self::client()
            .get(format!("{}{path}", self.base))
            .send()
            .expect("GET");
        (response.status().as_u16(), response.text().expect("body"))
    }

    /// SIGTERM without waiting: the server drains and finishes what it started.
    pub fn terminate(&self) {
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::TERM,
        )
        .expect("SIGTERM berth serve");
    }

    /// Waits for the server to exit on its own (after [`ServeProcess::terminate`]).
    pub fn wait_exit(mut self) -> std::process::ExitStatus {
        let status = self.child.wait().expect("wait");
        std::mem::forget(self);
        status
    }

    /// SIGTERM and wait: the graceful way an operator restarts it.
    pub fn stop(mut self) {
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::TERM,
        )
        .expect("SIGTERM berth serve");
        let status = self.child.wait().expect("wait");
        assert!(
            status.success(),
            "berth serve exits cleanly on SIGTERM: {status:?}"
        );
        std::mem::forget(self);
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
