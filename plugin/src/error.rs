//! What can go wrong while building a plugin set or running hooks.

/// Why the runtime could not build the plugin set or run a hook.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The caller gave up ([`berth_runtime::BuildOptions::cancel`]) before the set was built.
    #[error(
        "building the plugin set was stopped before it finished (a deadline passed, or the server is shutting down)"
    )]
    Cancelled,
    /// A locked plugin is not in the store.
    #[error("plugin `{plugin}` is not in the store (expected `{}`); run `berth plugins sync`", path.display())]
    NotSynced {
        /// The plugin.
        plugin: String,
        /// Where its entry would be.
        path: std::path::PathBuf,
    },
    /// A locked plugin's store entry was changed after it was added
    /// ([`berth_store::StoreError::Tampered`], whose message names the entry and says to
    /// run `berth plugins sync`).
    #[error(transparent)]
    Store(#[from] berth_store::StoreError),
    /// A text file that is not UTF-8.
    #[error("plugin `{plugin}`: `{file}` is not UTF-8 text")]
    NotUtf8 {
        /// The plugin.
        plugin: String,
        /// The file.
        file: String,
    },
    /// A file whose content is invalid in a way that makes the whole plugin unusable.
    #[error("plugin `{plugin}`: `{file}`: {message}")]
    Invalid {
        /// The plugin.
        plugin: String,
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// More skills than the configured limit.
    #[error("{message}")]
    TooManySkills {
        /// The message, naming the limit and how to raise it.
        message: String,
    },
    /// Reading the store failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
