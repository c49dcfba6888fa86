//! Why the custom agent package could not be resolved, built or read.

use berth_lockfile_schema::AGENT_ENTRY_POINT_GROUP;

/// Why the custom agent package could not be resolved, built or read.
#[derive(Debug, thiserror::Error)]
pub enum AgentLockError {
    /// A package of the closure has no wheel for this Python and platform.
    #[error(
        "`{package}` {version} has no wheel for Python {python} on this platform; berth installs wheels only"
    )]
    NoWheel {
        /// The package.
        package: String,
        /// Its version.
        version: String,
        /// `3.12`, say.
        python: String,
    },
    /// uv names a wheel whose file name is not one.
    #[error("uv gave `{file}` as a wheel's file name, which is not a wheel file name")]
    WheelName {
        /// What uv gave.
        file: String,
    },
    /// uv's lock names a wheel without a URL.
    #[error("uv gave no URL for a wheel of `{package}`")]
    NoWheelUrl {
        /// The package.
        package: String,
    },
    /// The index gave no sha256 for a wheel.
    #[error("the index gave no sha256 for `{url}`; berth locks wheels by their hash")]
    NoWheelHash {
        /// The wheel's URL, credentials removed.
        url: String,
    },
    /// The resolution does not hold the agent package itself.
    #[error("uv's resolution of `{source_shown}` does not hold `{package}` itself")]
    NotInResolution {
        /// The agent source, credentials removed.
        source_shown: String,
        /// The package.
        package: String,
    },
    /// `uv build --wheel` made no wheel or several.
    #[error("`uv build --wheel` made {count} wheels, expected one")]
    BuildCount {
        /// How many it made.
        count: usize,
    },
    /// uv failed (resolving or building); its output, credentials removed.
    #[error("{0}")]
    Uv(#[source] berth_transport::http::Upstream),
    /// uv wrote a `pylock.toml` berth cannot read.
    #[error("uv wrote a pylock.toml berth cannot read: {0}")]
    Pylock(#[source] toml::de::Error),
    /// The package declares no agent entry point.
    #[error(
        "package `{package}` has no `{AGENT_ENTRY_POINT_GROUP}` entry point, so it is not an agent package; it must declare one (`[project.entry-points.\"{AGENT_ENTRY_POINT_GROUP}\"]` in its pyproject.toml)"
    )]
    NoEntryPoint {
        /// The package.
        package: String,
    },
    /// `entry_point` names none of the package's entry points.
    #[error(
        "package `{package}` has no `{AGENT_ENTRY_POINT_GROUP}` entry point named `{wanted}`; it offers {}",
        quoted(offered)
    )]
    NoSuchEntryPoint {
        /// The package.
        package: String,
        /// `entry_point` in `[agent]`.
        wanted: String,
        /// What it offers.
        offered: Vec<String>,
    },
    /// Several entry points and no `entry_point` to choose.
    #[error(
        "package `{package}` offers several `{AGENT_ENTRY_POINT_GROUP}` entry points ({}); choose one with `entry_point` in `[agent]`",
        quoted(offered)
    )]
    SeveralEntryPoints {
        /// The package.
        package: String,
        /// What it offers.
        offered: Vec<String>,
    },
    /// A wheel that cannot be read.
    #[error("wheel `{file}`: {problem}")]
    Wheel {
        /// The wheel's file name.
        file: String,
        /// What is wrong.
        #[source]
        problem: WheelProblem,
    },
}

/// What is wrong with a wheel berth reads.
#[derive(Debug, thiserror::Error)]
pub enum WheelProblem {
    /// Not a zip file.
    #[error("not a zip file ({0})")]
    NotZip(#[source] zip::result::ZipError),
    /// A zip entry cannot be read.
    #[error("{0}")]
    Zip(#[source] zip::result::ZipError),
    /// A metadata file over 4 MiB.
    #[error("`{0}` is too large")]
    TooLarge(String),
    /// A metadata file that is not UTF-8 or cannot be read.
    #[error("`{entry}`: {source}")]
    Read {
        /// The entry.
        entry: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// No `*.dist-info/METADATA`.
    #[error("no `*.dist-info/METADATA`")]
    NoMetadata,
    /// METADATA lacks a header.
    #[error("METADATA has no `{0}`")]
    NoHeader(&'static str),
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
