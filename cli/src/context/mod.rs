//! What every `plugins` command needs: where the manifest, lock and store are, and the
//! settings the resolver runs with. Reading and writing the two files happens here.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use berth_lockfile_schema::release_age::{self, Timestamp};
use berth_lockfile_schema::{Lock, LockError, Manifest, parse_lock, parse_manifest};
use berth_resolver::{DEFAULT_GITHUB_URL, Network, ReleaseAge, Settings};
use berth_review::sandbox::Sandboxing;
use berth_store::Store;
use berth_transport::extract::ArchiveLimits;
use berth_transport::registries;

use crate::args::{CacheArgs, Cli, FetchArgs, ObserveSwitch, ProjectArgs, SandboxSwitch};
use crate::printer::Printer;

pub use crate::failure::{Exit, Failure, error_text};

mod find;
use find::{MANIFEST_FILE, find_manifest};

/// The default number of plugins resolved or fetched at once: fetches wait on the network
/// or on `git-upload-pack`, so more than the core count pays off.
const DEFAULT_JOBS: usize = 8;

/// The policy file read when `--policy` is not given, next to the manifest.
pub use berth_lockfile_schema::governance::POLICY_FILE;

#[derive(Debug)]
pub struct Context {
    pub printer: Printer,
    pub store: Store,
    pub manifest_path: PathBuf,
    pub lock_path: PathBuf,
    /// Relative local sources are resolved from the manifest's folder...
    manifest_dir: PathBuf,
    /// ...or, when the manifest is not read (`--frozen`), from the lockfile's.
    lock_dir: PathBuf,
    /// Whether the manifest was looked for (no `--manifest`), for what a missing one says.
    manifest_searched: bool,
    pub jobs: usize,
    pub github_url: String,
    pub home_dir: Option<PathBuf>,
    pub archive_limits: ArchiveLimits,
    /// `--index-url` / `$BERTH_INDEX_URL`, above uv's configuration.
    pub index_url: Option<String>,
    /// Binary caches tried before upstream (`--substituter`).
    pub substituters: Vec<std::sync::Arc<berth_transport::cache::Cache>>,
    /// The policy file: `--policy`, else `berth-policy.toml` next to the manifest if it
    /// exists; `None`: berth's defaults.
    pub policy_path: Option<PathBuf>,
    /// `plugins.approvals.toml`: the lockfile's name with `.approvals.toml`.
    pub approvals_path: PathBuf,
    /// The time of locking: the clock's, or `$BERTH_NOW` (for tests and reproducing a
    /// lock: an `exclude-newer` span counts back from it).
    pub now: Timestamp,
    /// Whether locking starts MCP servers to record what they offer: not with
    /// `--no-observe` or `BERTH_NO_OBSERVE` set (to anything but `0`/`false`).
    pub observe: bool,
    /// Whether observing runs servers outside the sandbox (`--observe-unsandboxed`): then
    /// only plugins the policy and the approvals let run are observed.
    pub observe_unsandboxed: bool,
}

impl Context {
    pub fn new(cli: &Cli, project: &ProjectArgs, printer: Printer) -> Result<Self> {
        let home_dir = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let store_root = match &cli.store {
            Some(dir) => dir.clone(),
            None => default_store_root(home_dir.as_deref())?,
        };
        let manifest_path = project.manifest.clone().unwrap_or_else(find_manifest);
        let lock_path = project
            .lockfile
            .clone()
            .unwrap_or_else(|| manifest_path.with_extension("lock"));
        let manifest_dir = parent_dir(&manifest_path);
        let lock_dir = parent_dir(&lock_path);
        let github_url = std::env::var("BERTH_GITHUB_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| DEFAULT_GITHUB_URL.to_owned());
        let archive_limits = ArchiveLimits::from_env()?;
        let policy_path = project.policy.clone().or_else(|| {
            let default = if manifest_dir == Path::new(".") {
                PathBuf::from(POLICY_FILE)
            } else {
                manifest_dir.join(POLICY_FILE)
            };
            default.is_file().then_some(default)
        });
        let approvals_path = lock_path.with_extension("approvals.toml");
        let now = match std::env::var("BERTH_NOW").ok().filter(|t| !t.is_empty()) {
            Some(text) => release_age::parse_now(&text).map_err(anyhow::Error::msg)?,
            None => Timestamp::now(),
        };
        let observe = !std::env::var("BERTH_NO_OBSERVE")
            .is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false" | "no"));
        Ok(Self {
            now,
            observe,
            observe_unsandboxed: false,
            policy_path,
            approvals_path,
            archive_limits,
            printer,
            // A step of a command does not check again what an earlier one just added or
            // found unchanged; after a second, as in the server, an entry is checked again.
            store: Store::new(store_root)
                .remembering_checks_for(berth_server::ENTRY_RECHECK_WINDOW),
            manifest_path,
            manifest_searched: project.manifest.is_none(),
            lock_path,
            manifest_dir,
            lock_dir,
            jobs: DEFAULT_JOBS,
            github_url,
            home_dir,
            index_url: None,
            substituters: open_substituters(&legacy_caches(cli, None))?,
        })
    }

    /// The context of a command that may fetch: its `--jobs`, `--index-url` and binary
    /// caches.
    pub fn fetching(mut self, cli: &Cli, fetch: &FetchArgs) -> Result<Self> {
        self.jobs = fetch.jobs.unwrap_or(DEFAULT_JOBS).max(1);
        self.index_url = fetch.index_url.clone();
        self.substituters = open_substituters(&legacy_caches(cli, Some(&fetch.caches)))?;
        Ok(self)
    }

    /// The context of a command that locks: whether it observes MCP servers, and how.
    pub fn observing(mut self, switch: &ObserveSwitch) -> Self {
        self.observe &= !switch.no_observe;
        self.sandboxed(&switch.sandbox)
    }

    /// The context of a command that observes: `--observe-unsandboxed` starts servers as
    /// the user, which is said before anything starts.
    pub fn sandboxed(mut self, switch: &SandboxSwitch) -> Self {
        if switch.observe_unsandboxed {
            self.observe_unsandboxed = true;
            self.printer.warn(
                "`--observe-unsandboxed`: the MCP servers observed now run as you, with your files (and your network where `unshare -rn` cannot cut it)",
            );
        }
        self
    }

    /// How the MCP servers observed are started: in the sandbox (or not at all), unless
    /// `--observe-unsandboxed` was given.
    pub fn sandboxing(&self) -> Sandboxing {
        if self.observe_unsandboxed {
            Sandboxing::Unsandboxed
        } else {
            Sandboxing::Required
        }
    }

    /// Resolver settings for commands that read the manifest.
    pub fn settings(&self, network: Network) -> Settings {
        self.settings_from(network, &self.manifest_dir)
    }

    /// Resolver settings for `sync --frozen`, which reads only the lockfile.
    pub fn frozen_settings(&self, network: Network) -> Settings {
        self.settings_from(network, &self.lock_dir)
    }

    fn settings_from(&self, network: Network, base_dir: &Path) -> Settings {
        // npm's and uv's own configuration, read as they read it: the project's files are
        // the manifest's (or, frozen, the lockfile's) folder's.
        let env = registries::process_env();
        let inputs = registries::ConfigInputs {
            env: &env,
            project_dir: Some(base_dir),
            home: self.home_dir.as_deref(),
            read: &registries::read_config_file,
        };
        let berth_npm = env.get("BERTH_NPM_REGISTRY").map(String::as_str);
        Settings {
            github_url: self.github_url.clone(),
            network,
            jobs: self.jobs,
            base_dir: base_dir.to_owned(),
            home_dir: self.home_dir.clone(),
            archive_limits: self.archive_limits,
            index: registries::PackageIndex::resolve(self.index_url.as_deref(), &inputs),
            shared: None,
            cancel: Default::default(),
            policy: None,
            substituters: self.substituters.clone(),
            ref_ttl: std::time::Duration::ZERO,
            npm: registries::NpmConfig::load(&inputs, berth_npm),
            payload_finder: Some(berth_runtime::runners::wanted),
            release_age: ReleaseAge {
                policy: Vec::new(),
                now: self.now,
                signed_sources: false,
            },
            sources: Default::default(),
            pins: Default::default(),
            npm_latest: false,
            signature_reader: Some(berth_review::read_source_signature),
            require_registry_signatures: None,
        }
    }

    pub fn manifest_label(&self) -> String {
        self.manifest_path.display().to_string()
    }

    pub fn lock_label(&self) -> String {
        self.lock_path.display().to_string()
    }

    /// Reads and validates the manifest, printing its warnings.
    pub fn read_manifest(&self) -> Result<Manifest> {
        let label = self.manifest_label();
        let text = match std::fs::read_to_string(&self.manifest_path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{}; start a project here with `berth init`, or pass `--manifest FILE`",
                self.no_manifest()
            ),
            Err(e) => return Err(e).with_context(|| format!("could not read `{label}`")),
        };
        let parsed = parse_manifest(&label, &text)?;
        for warning in &parsed.warnings {
            self.printer.warn(&warning.to_string());
        }
        Ok(parsed.manifest)
    }

    /// Reads the lockfile if there is one; returns it with its exact text.
    pub fn read_lock(&self) -> Result<Option<(Lock, String)>> {
        let label = self.lock_label();
        let text = match std::fs::read_to_string(&self.lock_path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("could not read `{label}`")),
        };
        let lock = parse_lock(&label, &text)?;
        Ok(Some((lock, text)))
    }

    /// Reads the lockfile before replacing it: a damaged one (not TOML, or bad entries) is
    /// reported and treated as absent, so `berth plugins lock` can always repair it. A lock
    /// from a newer berth is still refused: rewriting it would downgrade its format.
    pub fn read_lock_to_replace(&self) -> Result<Option<(Lock, String)>> {
        match self.read_lock() {
            Err(e) => match e.downcast_ref::<LockError>() {
                Some(LockError::Syntax(_) | LockError::Invalid { .. }) => {
                    self.printer.warn(&format!(
                        "{}; it will be regenerated from the manifest",
                        error_text(&e)
                    ));
                    Ok(None)
                }
                _ => Err(e),
            },
            other => other,
        }
    }

    /// Reads the lockfile, which must exist.
    pub fn require_lock(&self, flag: &str) -> Result<Lock> {
        match self.read_lock()? {
            Some((lock, _)) => Ok(lock),
            None if self.manifest_path.exists() || !flag.is_empty() => bail!(
                "{flag}there is no lockfile at `{}`; run `berth plugins lock` to create it",
                self.lock_label()
            ),
            None => bail!(
                "there is no lockfile at `{}`, and {}; start a project with `berth init` (then `berth plugins add SOURCE`), or pass `--manifest FILE`",
                self.lock_label(),
                self.no_manifest()
            ),
        }
    }

    /// What is missing when the manifest is: where it was looked for.
    fn no_manifest(&self) -> String {
        let label = self.manifest_label();
        if self.manifest_searched {
            format!("no `{MANIFEST_FILE}` in this folder or any folder above it")
        } else {
            format!("no manifest at `{label}`")
        }
    }

    /// Serialises lock-writing berth processes on this lockfile, so two `sync`s started
    /// together resolve once: the second waits, then finds the lock up to date.
    pub fn guard_lockfile(&self) -> Result<berth_store::FileLock> {
        use sha2::Digest as _;
        let dir = self
            .lock_dir
            .canonicalize()
            .unwrap_or_else(|_| self.lock_dir.clone());
        let key = dir.join(self.lock_path.file_name().unwrap_or_default());
        let digest = sha2::Sha256::digest(key.as_os_str().as_encoded_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let label = self.lock_label();
        Ok(self.store.lock(&format!("lockfile-{hex}"), || {
            self.printer
                .status("Waiting", &format!("for another berth writing `{label}`"));
        })?)
    }

    /// Replaces the lockfile atomically: written beside it, then renamed over it. The
    /// lockfile becomes a root of the store (`berth store gc` keeps what it names).
    pub fn write_lock(&self, text: &str) -> Result<()> {
        write_atomically(&self.lock_path, text.as_bytes())
            .with_context(|| format!("could not write `{}`", self.lock_label()))?;
        self.register_root()
    }

    /// Registers the lockfile as a store root. A store this user cannot write keeps no
    /// new root (its `gc` cannot be run by this user either), and is still read.
    pub fn register_root(&self) -> Result<()> {
        match self.store.register_root(&self.lock_path) {
            Err(berth_store::StoreError::Io(e)) if berth_store::is_read_only(&e) => {
                tracing::debug!("the store is read-only, so no root was registered: {e}");
                Ok(())
            }
            result => result.with_context(|| {
                format!("could not register `{}` as a store root", self.lock_label())
            }),
        }
    }

    /// Holds the store for this command: `berth store gc` waits until it is done.
    pub fn hold_store(&self) -> Result<berth_store::SharedUse> {
        Ok(self.store.shared_use(|| {
            self.printer
                .status("Waiting", "for a running `berth store gc` to finish");
        })?)
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

pub fn default_store_root(home: Option<&Path>) -> Result<PathBuf> {
    berth_store::default_root(home)
        .context("cannot find a store folder: set `BERTH_STORE` or pass `--store DIR`")
}

/// Writes `bytes` to a temporary file in `path`'s folder, syncs it and renames it over
/// `path`, so readers see the old or the new file, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = fs_err::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        berth_store::fault::pause_at(berth_store::fault::FILE_BEFORE_RENAME);
        fs_err::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl Context {
    /// The lock the runtime uses: as it is with `--frozen` (or when there is no manifest),
    /// else only if it agrees with the manifest. Never resolves or fetches anything.
    pub fn runtime_lock(&self, frozen: bool) -> Result<Lock> {
        let flag = if frozen {
            "`--frozen` was given but "
        } else {
            ""
        };
        let lock = self.require_lock(flag)?;
        if frozen || !self.manifest_path.exists() {
            return Ok(lock);
        }
        let manifest = self.read_manifest()?;
        let stale = lock.staleness(&manifest);
        if stale.is_empty() {
            return Ok(lock);
        }
        Err(Failure {
            message: format!(
                "`{}` is out of date with `{}`; run `berth plugins sync` (or pass `--frozen` to use the lock as it is)",
                self.lock_label(),
                self.manifest_label()
            ),
            notes: stale.iter().map(ToString::to_string).collect(),
        }
        .into())
    }
}

impl Context {
    /// The lock `show` and `list` print: as it is, with a warning when the manifest beside
    /// it has moved on (what `run` would refuse), or refused under `--locked`.
    pub fn lock_to_read(&self, locked: bool) -> Result<Lock> {
        let lock = self.require_lock("")?;
        if !self.manifest_path.exists() {
            return Ok(lock);
        }
        let stale = lock.staleness(&self.read_manifest()?);
        if stale.is_empty() {
            return Ok(lock);
        }
        let (lock_label, manifest_label) = (self.lock_label(), self.manifest_label());
        if locked {
            let mut notes: Vec<String> = stale.iter().map(ToString::to_string).collect();
            notes.push(
                "hint: run `berth plugins lock` (or `berth plugins sync`) to update it".to_owned(),
            );
            return Err(Failure {
                message: format!(
                    "`--locked` was given but `{lock_label}` is out of date with `{manifest_label}`"
                ),
                notes,
            }
            .into());
        }
        let what: Vec<String> = stale.iter().map(ToString::to_string).collect();
        self.printer.warn(&format!(
            "`{lock_label}` is out of date with `{manifest_label}` ({}); this is the lock as it is: run `berth plugins lock` to update it",
            what.join("; ")
        ));
        Ok(lock)
    }
}

/// The caches given before the command (`berth --substituter URL plugins sync`, the form
/// older scripts use) and then the command's own.
pub fn legacy_caches(cli: &Cli, command: Option<&CacheArgs>) -> CacheArgs {
    let mut caches = CacheArgs {
        substituters: cli.substituters.clone(),
        trusted_public_keys: cli.trusted_public_keys.clone(),
    };
    if let Some(command) = command {
        caches
            .substituters
            .extend(command.substituters.iter().cloned());
        caches
            .trusted_public_keys
            .extend(command.trusted_public_keys.iter().cloned());
    }
    caches
}

/// Opens the binary caches named by `--substituter` / `$BERTH_SUBSTITUTERS`, each
/// requiring a signature by one of `--trusted-public-key` when any is given (empty words
/// between keys are skipped, so extra spaces do no harm). A key option or variable that
/// holds no key at all is an error: read as "no keys", it would turn signature checks off.
pub fn open_substituters(
    cli: &CacheArgs,
) -> Result<Vec<std::sync::Arc<berth_transport::cache::Cache>>> {
    let blank_variable = std::env::var_os("BERTH_TRUSTED_PUBLIC_KEYS")
        .is_some_and(|v| v.to_string_lossy().trim().is_empty());
    let blank_option = !cli.trusted_public_keys.is_empty()
        && cli.trusted_public_keys.iter().all(|k| k.trim().is_empty());
    if blank_variable || blank_option {
        bail!(
            "`--trusted-public-key` / `$BERTH_TRUSTED_PUBLIC_KEYS` is given but holds no key, which would turn signature checking off; give a key as `NAME:BASE64` (`berth store sign-key generate` prints one), or leave both unset to accept unsigned narinfos"
        );
    }
    let keys = cli
        .trusted_public_keys
        .iter()
        .filter(|k| !k.trim().is_empty())
        .map(|k| {
            berth_transport::cache::PublicKey::parse(k)
                .context("in `--trusted-public-key` / `$BERTH_TRUSTED_PUBLIC_KEYS`")
        })
        .collect::<Result<Vec<_>>>()?;
    cli.substituters
        .iter()
        .filter(|u| !u.trim().is_empty())
        .map(|u| {
            berth_transport::cache::Cache::open(u.trim())
                .map(|c| std::sync::Arc::new(c.with_trusted_keys(keys.clone())))
                .context("in `--substituter` / `$BERTH_SUBSTITUTERS`")
        })
        .collect()
}
