//! What the policy's `[sources]` refuses before anything is fetched.

use berth_lockfile_schema::governance::SourceDenied;

/// What a refused source belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeniedSource {
    /// A plugin's source (as the lock writes it), with the marketplace it is picked from
    /// (its name and source) when it is: a pattern may match either.
    Plugin {
        /// The plugin's source.
        source: String,
        /// The marketplace's name and source.
        marketplace: Option<(String, String)>,
    },
    /// A marketplace's own source: a deny pattern matches it, so no plugin could be picked
    /// from it.
    Marketplace {
        /// The marketplace's source.
        source: String,
    },
}

/// A source the policy's `[sources]` refuses, found before it was contacted: nothing was
/// fetched from it (the same rule every front end applies again to the lock it made).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct PolicyDenied {
    /// What was refused.
    pub what: DeniedSource,
    /// The rule and the policy file that refused it.
    pub rule: SourceDenied,
}

impl PolicyDenied {
    fn describe(&self) -> String {
        let SourceDenied {
            file,
            rule,
            reason,
            why,
        } = &self.rule;
        let why = why.as_ref().map(|w| format!(": {w}")).unwrap_or_default();
        let (whose, next) = match &self.what {
            DeniedSource::Plugin {
                source,
                marketplace,
            } => {
                let next = match (why.is_empty(), *reason) {
                    // What is wrong with the source says what to do.
                    (false, _) => String::new(),
                    (true, "denied by") => ": remove the plugin, or change the policy".to_owned(),
                    (true, _) => format!(
                        ": a pattern matches the plugin's source or its marketplace's source, never a marketplace's name: add one to `{file}` or remove the plugin"
                    ),
                };
                // A plain request's entry is labelled with its source: `SOURCE: denied
                // by …` reads once (`EntryError` drops the repeated source).
                let whose = match marketplace {
                    Some((name, market)) => format!(
                        "its source `{source}` (marketplace `{name}` at `{market}`) is "
                    ),
                    None => format!("`{source}`: "),
                };
                (whose, next)
            }
            DeniedSource::Marketplace { source } => (
                format!("its source `{source}` is "),
                ", and no plugin can be picked from it: remove the marketplace and its plugins, or change the policy".to_owned(),
            ),
        };
        format!(
            "{whose}{reason} the policy{why} [`{rule}` in `{file}`]; berth fetched nothing from it{next}"
        )
    }
}
