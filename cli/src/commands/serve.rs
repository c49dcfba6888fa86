//! `berth serve`

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use berth_server::{AppState, Config, DEFAULT_ALLOWED_HOSTS, DataDir, SourcePolicy};
use berth_store::Store;

use crate::args::{Cli, ServeArgs};
use crate::printer::Printer;

pub fn run(cli: &Cli, args: &ServeArgs, printer: Printer) -> Result<()> {
    let config = config(cli, args)?;
    let data_dir = config.data_dir.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    runtime.block_on(async {
        let started = std::time::Instant::now();
        let (state, report) = tokio::task::spawn_blocking(move || AppState::open(config))
            .await
            .context("restoring conversations")?
            .with_context(|| format!("could not open the data folder `{data_dir}`"))?;
        let listener = berth_server::bind(args.addr)
            .await
            .with_context(|| format!("could not listen on `{}`", args.addr))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        printer.status(
            "Restored",
            &format!(
                "{} conversations ({} with plugins to fetch again) in {:.2}s",
                report.conversations,
                report.incomplete,
                started.elapsed().as_secs_f64()
            ),
        );
        printer.status("Listening", &format!("on http://{addr}"));
        if let Some(policy) = &args.policy {
            printer.status(
                "Policy",
                &format!(
                    "`{}` (named `{}` in answers)",
                    policy.display(),
                    file_name_of(&policy.display().to_string())
                ),
            );
        }
        berth_server::serve(state, listener)
            .await
            .context("serving")
    })?;
    // Every request is answered. Work a request gave up on at its deadline was told to
    // stop and does so at its next check; the process does not wait on it for long.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(())
}

/// The server's configuration from the command line and the environment.
fn config(cli: &Cli, args: &ServeArgs) -> Result<Config> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let store_root = match &cli.store {
        Some(dir) => dir.clone(),
        None => crate::context::default_store_root(home.as_deref())?,
    };
    let data_dir = match args.data_dir.as_deref().filter(|d| !d.is_empty()) {
        Some(dir) => DataDir::parse(dir),
        None => DataDir::Folder(
            match (
                std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()),
                &home,
            ) {
                (Some(dir), _) => PathBuf::from(dir).join("berth"),
                (None, Some(home)) => home.join(".local/share/berth"),
                (None, None) => bail!("cannot find a data folder: pass `--data-dir DIR`"),
            },
        ),
    };
    let allowed_hosts = if args.allow_hosts.is_empty() {
        DEFAULT_ALLOWED_HOSTS
            .iter()
            .map(|h| (*h).to_owned())
            .collect()
    } else {
        args.allow_hosts.clone()
    };
    let github_url = std::env::var("BERTH_GITHUB_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| berth_resolver::DEFAULT_GITHUB_URL.to_owned());
    let policy = SourcePolicy {
        allowed_hosts,
        allow_local: args.allow_local_sources,
        github_url,
        pins: args.resolve.clone(),
    };
    let marketplaces = args
        .marketplaces
        .iter()
        .map(|text| marketplace(text, &policy))
        .collect::<Result<Vec<_>>>()?;
    let run_policy = run_policy(args, &policy.github_url)?;
    Ok(Config {
        run_policy,
        data_dir,
        store: Store::new(store_root),
        api_key: args.api_key.clone().filter(|k| !k.is_empty()),
        allowed_host_headers: args.allowed_host_headers.clone(),
        policy,
        marketplaces,
        offline: args.offline,
        fetch_timeout: Duration::from_secs(args.fetch_timeout.max(1)),
        jobs: args.jobs.max(1),
        home_dir: home,
        max_skills: args.max_skills,
        index_url: args.index_url.clone(),
        archive_limits: berth_transport::extract::ArchiveLimits::from_env()?,
        substituters: crate::context::open_substituters(&crate::context::legacy_caches(
            cli,
            Some(&args.caches),
        ))?,
        drain: Duration::from_secs(args.drain_secs),
        record_key: record_key(args)?,
        connections: limits(args),
        ref_ttl: Duration::from_secs(args.ref_ttl),
        push_to: match args.push_to.as_deref().filter(|u| !u.is_empty()) {
            Some(url) => Some(std::sync::Arc::new(
                berth_transport::cache::Cache::open(url).context("in `--push-to`")?,
            )),
            None => None,
        },
    })
}

/// A policy document's label as a server's answers show it: a file by its name alone (a
/// path on the server is not the client's business), a URL as it is.
fn file_name_of(label: &str) -> String {
    if label.contains("://") {
        return label.to_owned();
    }
    std::path::Path::new(label).file_name().map_or_else(
        || label.to_owned(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// How long clients may take and how many may connect (each at least 1).
fn limits(args: &ServeArgs) -> berth_server::Limits {
    berth_server::Limits {
        header_timeout: Duration::from_secs(args.header_timeout.max(1)),
        body_timeout: Duration::from_secs(args.body_timeout.max(1)),
        idle_timeout: Duration::from_secs(args.idle_timeout.max(1)),
        max_connections: args.max_connections.max(1),
    }
}

/// The fleet's record key: `--record-key FILE`'s content, else `BERTH_RECORD_KEY`'s value.
fn record_key(args: &ServeArgs) -> Result<Option<berth_server::RecordKey>> {
    let text = match &args.record_key {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .with_context(|| format!("could not read the record key `{}`", file.display()))?,
        ),
        None => std::env::var("BERTH_RECORD_KEY")
            .ok()
            .filter(|k| !k.is_empty()),
    };
    text.map(|text| {
        berth_server::RecordKey::new(&text)
            .map_err(|why| anyhow::anyhow!("{why} (`--record-key`, `BERTH_RECORD_KEY`)"))
    })
    .transpose()
}

/// A `--marketplace NAME=SOURCE[#REF]`, checked against the source policy.
fn marketplace(
    text: &str,
    policy: &SourcePolicy,
) -> Result<berth_lockfile_schema::marketplace::MarketplaceRequest> {
    let Some((name, rest)) = text.split_once('=') else {
        bail!(
            "`--marketplace {text}` is not `NAME=SOURCE`; write it as `official=github:anthropics/claude-plugins-official`"
        );
    };
    let (source, git_ref) = match rest.rsplit_once('#') {
        Some((source, r)) if !r.is_empty() => (source, Some(r)),
        _ => (rest, None),
    };
    let request =
        berth_lockfile_schema::marketplace::MarketplaceRequest::new(name, source, git_ref, None)
            .map_err(|(_, why)| anyhow::anyhow!("`--marketplace {text}`: {why}"))?;
    // A local folder is the operator's own, admitted as any flag is; a remote one must
    // pass the source policy like any source.
    if request.parsed_source().kind() != berth_lockfile_schema::SourceKind::Local {
        policy
            .check(source, request.parsed_source())
            .map_err(|e| anyhow::anyhow!("`--marketplace {text}`: {}", e.message))?;
    }
    Ok(request)
}

/// `--policy` and its approvals, read once at start (restart the server to change them).
fn run_policy(args: &ServeArgs, github_url: &str) -> Result<berth_server::RunPolicy> {
    let Some(path) = &args.policy else {
        // No policy file: its default rules, and the approvals of changes of signer.
        let Some(file) = &args.approvals else {
            return Ok(berth_server::RunPolicy::default());
        };
        let label = file.display().to_string();
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("could not read `{label}` (--approvals)"))?;
        return Ok(berth_server::RunPolicy {
            approvals: berth_lockfile_schema::governance::parse_approvals(&text, &label)?,
            approvals_file: Some(file_name_of(&label)),
            ..berth_server::RunPolicy::default()
        });
    };
    // Its files are named to clients by their file names; the log has the paths.
    let policy = berth_resolver::load_policy(
        path,
        berth_lockfile_schema::governance::Canon::new(github_url),
    )?
    .relabelled(file_name_of);
    let approvals_path = args.approvals.clone().unwrap_or_else(|| {
        path.parent()
            .unwrap_or(std::path::Path::new("."))
            .join("plugins.approvals.toml")
    });
    let label = approvals_path.display().to_string();
    let approvals = match std::fs::read_to_string(&approvals_path) {
        Ok(text) => berth_lockfile_schema::governance::parse_approvals(&text, &label)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && args.approvals.is_none() => {
            Default::default()
        }
        Err(e) => return Err(e).with_context(|| format!("could not read `{label}`")),
    };
    let now = match std::env::var("BERTH_NOW").ok().filter(|t| !t.is_empty()) {
        Some(text) => {
            Some(berth_lockfile_schema::release_age::parse_now(&text).map_err(anyhow::Error::msg)?)
        }
        None => None,
    };
    Ok(berth_server::RunPolicy {
        policy,
        approvals,
        approvals_file: Some(file_name_of(&label)),
        now,
        tools_env: args.tools_env,
    })
}
