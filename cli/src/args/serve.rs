//! `berth serve`: the server's flags.

use clap::Args;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on (port 0 picks a free one)
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:8000",
        env = "BERTH_ADDR"
    )]
    pub addr: std::net::SocketAddr,

    /// Where conversations are kept: a folder, or object storage a fleet of servers shares
    /// (`file:///path`, `s3://bucket/prefix`) [default: $XDG_DATA_HOME/berth, else
    /// ~/.local/share/berth]
    ///
    /// A folder is this server's own. On object storage every server reads any
    /// conversation on demand, lists all of them, and honours a delete made by another;
    /// pair it with `--push-to` (and `--substituter`) on the fleet's binary cache so their
    /// plugins follow. S3 settings and credentials come from the AWS variables and files,
    /// as for caches.
    #[arg(long, value_name = "DIR|URL", env = "BERTH_DATA_DIR")]
    pub data_dir: Option<String>,

    /// Require this key on every route but /health and /ready (`X-Session-API-Key` or
    /// `Authorization: Bearer`)
    #[arg(
        long,
        value_name = "KEY",
        env = "BERTH_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,

    /// Without an API key, also answer requests whose `Host` header is NAME (repeatable;
    /// `name` for any port, `name:port` for one)
    ///
    /// Without an API key the server answers only requests whose `Host` names it: its
    /// listening address, `localhost`, `127.0.0.1` or `[::1]`, any port. Anything else is
    /// 421, so a web page cannot reach the server through a name it points at this machine
    /// (DNS rebinding). With an API key the header is not checked.
    #[arg(
        long = "allowed-host-header",
        value_name = "NAME",
        env = "BERTH_ALLOWED_HOST_HEADERS",
        value_delimiter = ','
    )]
    pub allowed_host_headers: Vec<String>,

    /// A host https sources may come from (repeatable; replaces the default list)
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,

    /// Also admit local folders, file:// URLs and plain http:// URLs on any host, and
    /// internal addresses (loopback, private, link-local)
    #[arg(long)]
    pub allow_local_sources: bool,

    /// Connect to ADDR for every fetch from HOST (repeatable; as curl's `--resolve`,
    /// without the port)
    ///
    /// Archives, wheels and git over http(s) from HOST go to ADDR instead of where DNS
    /// points, and ADDR is trusted as given: an internal address (loopback, private,
    /// link-local), refused when DNS answers it, is used for a pinned name. A pin does not
    /// allow a host: name it with `--allow-host` unless it is a default one. Pin a name to
    /// several addresses by repeating it. uv's own queries to `--index-url` do not use pins.
    #[arg(
        long = "resolve",
        value_name = "HOST=ADDR",
        env = "BERTH_RESOLVE",
        value_delimiter = ','
    )]
    pub resolve: Vec<berth_server::HostPin>,

    /// Register a marketplace conversations may ask plugins of as `PLUGIN@NAME`
    /// (repeatable; `NAME=SOURCE`, or `NAME=SOURCE#REF` to pin a branch, tag or commit)
    ///
    /// SOURCE is `github:OWNER/REPO` or a git URL, which must pass the source policy, or
    /// a local folder of the operator's. Every source its catalog points to is checked
    /// when fetched, like a source a client sends; a catalog entry that is a local path is
    /// refused unless `--allow-local-sources` (the folders inside a registered local
    /// marketplace aside).
    #[arg(long = "marketplace", value_name = "NAME=SOURCE[#REF]")]
    pub marketplaces: Vec<String>,

    /// What may run: a `berth-policy.toml` (sources, hooks, MCP servers, executables,
    /// hidden Unicode, approvals). Every conversation's plugins pass it before their set is
    /// served; a start that does not is answered 403 `policy_denied` and stores nothing
    #[arg(long, value_name = "FILE", env = "BERTH_POLICY")]
    pub policy: Option<std::path::PathBuf>,

    /// The approvals the policy's `approve` rules and `[sources] signer_change` read
    /// (without `--policy`: the approvals of a change of signer, which the default rule asks
    /// for) [default: `plugins.approvals.toml` next to the policy file]
    #[arg(long, value_name = "FILE")]
    pub approvals: Option<std::path::PathBuf>,

    /// Under the policy's `tools = "pinned"`, fill `${VAR}` in remote MCP servers' headers
    /// from this server's environment when asking them again at a conversation's start
    /// (without it such a header is not sent, and a server that needs it is refused)
    #[arg(long, requires = "policy")]
    pub tools_env: bool,

    /// Never fetch: serve conversations from the store as it is
    #[arg(long)]
    pub offline: bool,

    /// Push every git or archive plugin a conversation uses to this binary cache
    /// (`file://`, `s3://`) before answering 201, so any server of the fleet substitutes it
    /// with the upstream gone; usually the first `--substituter`
    #[arg(long, value_name = "URL", env = "BERTH_PUSH_TO")]
    pub push_to: Option<String>,

    /// Reuse a branch or tag resolved by another start within this many seconds instead of
    /// asking upstream again (0, the default: resolve for every start). The lock always
    /// records the commit that was used
    ///
    /// A `plugins` request identical to one whose resolution began within the TTL takes
    /// the lock that one made, as if it had sent it as its `lockfile`.
    #[arg(long, value_name = "SECS", default_value_t = 0, env = "BERTH_REF_TTL")]
    pub ref_ttl: u64,

    /// After SIGTERM, answer new requests (and `/ready`) 503 with `Retry-After` for this
    /// many seconds before closing, so a load balancer moves traffic away; started
    /// requests always finish
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0,
        env = "BERTH_DRAIN_SECS"
    )]
    pub drain_secs: u64,

    /// Seconds a conversation's plugins may take to lock and fetch before 504
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub fetch_timeout: u64,

    /// The fleet's secret for its conversation records, read from FILE (at least 16
    /// bytes); `BERTH_RECORD_KEY` may hold the key itself instead
    ///
    /// Every server sharing a `--data-dir` gives the same key. Each conversation's
    /// `meta.json` then carries an HMAC of itself under it, which covers the digest of the
    /// conversation's lock, and a server refuses a record without a valid one: whoever can
    /// write the bucket but has not the key can delete conversations, not change them.
    #[arg(long, value_name = "FILE", env = "BERTH_RECORD_KEY_FILE")]
    pub record_key: Option<std::path::PathBuf>,

    /// Seconds a client may take to send a request's line and headers, from their first
    /// byte; past it the connection is closed
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = berth_server::DEFAULT_HEADER_TIMEOUT_SECS,
        env = "BERTH_HEADER_TIMEOUT"
    )]
    pub header_timeout: u64,

    /// Seconds a client may take to send a request's body, from its headers; past it the
    /// answer is 408 and the connection is closed
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = berth_server::DEFAULT_BODY_TIMEOUT_SECS,
        env = "BERTH_BODY_TIMEOUT"
    )]
    pub body_timeout: u64,

    /// Seconds a connection may wait for a request (after it opens, or after an answer)
    /// before it is closed; keep it longer than a load balancer's idle timeout
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = berth_server::DEFAULT_IDLE_TIMEOUT_SECS,
        env = "BERTH_IDLE_TIMEOUT"
    )]
    pub idle_timeout: u64,

    /// How many connections may be open at once; more wait until one closes (keep it
    /// below the process's open-file limit, `ulimit -n`)
    #[arg(
        long,
        value_name = "N",
        default_value_t = berth_server::DEFAULT_MAX_CONNECTIONS,
        env = "BERTH_MAX_CONNECTIONS"
    )]
    pub max_connections: usize,

    /// How many plugins one request fetches at once
    #[arg(short, long, value_name = "N", default_value_t = 8)]
    pub jobs: usize,

    /// Refuse plugin sets with more skills than this
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_skills: usize,

    /// The Python package index for conversations' `agent` packages (`${VAR}` is expanded
    /// from the server's environment)
    #[arg(
        long,
        value_name = "URL",
        env = "BERTH_INDEX_URL",
        default_value = berth_resolver::DEFAULT_INDEX_URL
    )]
    pub index_url: String,

    #[command(flatten)]
    pub caches: super::CacheArgs,
}
