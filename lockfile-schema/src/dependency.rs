//! Plugin dependencies as Claude Code declares them: a plugin's `plugin.json` (or its
//! catalog entry) lists `dependencies`, each a name (`"audit-logger"`), a name in another
//! marketplace (`"audit-logger@other"`), or an object `{"name", "version", "marketplace"}`
//! whose `version` is a semver range.

use serde_json::Value;

use crate::source::is_marketplace_name;

/// One declared dependency.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DependencySpec {
    /// The plugin's name in its marketplace.
    pub name: String,
    /// The marketplace, when given (else the declaring plugin's).
    pub marketplace: Option<String>,
    /// A semver range (`^2.0`, `~2.1.0`, `>=1.4`), when given.
    pub range: Option<String>,
}

impl DependencySpec {
    /// Reads one entry of a `dependencies` array.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let (text, range, marketplace) = match value {
            Value::String(text) => (text.clone(), None, None),
            Value::Object(map) => {
                let field = |key: &str| -> Result<Option<String>, String> {
                    match map.get(key) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::String(s)) if !s.trim().is_empty() => {
                            Ok(Some(s.trim().to_owned()))
                        }
                        Some(other) => {
                            Err(format!("`{key}` must be a non-empty string, not `{other}`"))
                        }
                    }
                };
                let name = field("name")?.ok_or("a dependency object needs a `name`")?;
                (name, field("version")?, field("marketplace")?)
            }
            other => {
                return Err(format!(
                    "a dependency is a name or an object, not `{other}`"
                ));
            }
        };
        let (name, from_text) = match text.split_once('@') {
            Some((name, market)) => (name.to_owned(), Some(market.to_owned())),
            None => (text.clone(), None),
        };
        let marketplace = marketplace.or(from_text);
        if !is_marketplace_name(&name)
            || marketplace
                .as_deref()
                .is_some_and(|m| !is_marketplace_name(m))
        {
            return Err(format!(
                "`{text}` is not a plugin name (`NAME` or `NAME@MARKETPLACE`)"
            ));
        }
        if let Some(r) = &range {
            semver::VersionReq::parse(&cargo_range(r)).map_err(|e| {
                format!("dependency `{name}`: `version = \"{r}\"` is not a semver range ({e})")
            })?;
        }
        Ok(Self {
            name,
            marketplace,
            range,
        })
    }

    /// The range as the `semver` crate reads it (npm's space-separated comparators become
    /// comma-separated), or `None` without one.
    pub fn version_req(&self) -> Option<semver::VersionReq> {
        self.range
            .as_deref()
            .and_then(|r| semver::VersionReq::parse(&cargo_range(r)).ok())
    }

    /// This dependency with its marketplace filled in from the declaring plugin's.
    #[must_use]
    pub fn in_marketplace(&self, declaring: Option<&str>) -> Self {
        Self {
            marketplace: self.marketplace.clone().or(declaring.map(str::to_owned)),
            ..self.clone()
        }
    }

    /// `NAME@MARKETPLACE` (or `NAME` without one).
    pub fn key(&self) -> String {
        match &self.marketplace {
            Some(m) => format!("{}@{m}", self.name),
            None => self.name.clone(),
        }
    }

    /// How the lock writes it: `NAME@MARKETPLACE`, then ` RANGE` when there is one.
    pub fn to_lock_string(&self) -> String {
        match &self.range {
            Some(r) => format!("{} {r}", self.key()),
            None => self.key(),
        }
    }

    /// Reads [`DependencySpec::to_lock_string`]'s form back.
    pub fn from_lock_string(text: &str) -> Result<Self, String> {
        let (key, range) = match text.split_once(' ') {
            Some((key, range)) => (key, Some(range.trim().to_owned())),
            None => (text, None),
        };
        let mut value = serde_json::Map::new();
        value.insert("name".into(), Value::String(key.to_owned()));
        if let Some(r) = range {
            value.insert("version".into(), Value::String(r));
        }
        Self::from_json(&Value::Object(value))
    }
}

/// npm writes `>=1.2 <2`; the `semver` crate reads `>=1.2, <2`.
fn cargo_range(range: &str) -> String {
    if range.contains(',') {
        return range.to_owned();
    }
    range.split_whitespace().collect::<Vec<_>>().join(", ")
}

/// Reads a `dependencies` value: the entries that parse, and a message for each that
/// does not (the plugin still loads, as in Claude Code).
pub fn parse_dependencies(value: Option<&Value>) -> (Vec<DependencySpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                match DependencySpec::from_json(item) {
                    Ok(spec) => {
                        if !specs.contains(&spec) {
                            specs.push(spec);
                        }
                    }
                    Err(why) => problems.push(why),
                }
            }
        }
        Some(other) => problems.push(format!("`dependencies` must be a list, not `{other}`")),
    }
    (specs, problems)
}

/// A plugin's own `version` and `dependencies`, from its Claude Code manifest
/// (`.plugin/plugin.json`, else `.claude-plugin/plugin.json`) through `read`. A manifest
/// that is not JSON declares nothing here (naming the plugin reports it).
pub fn declared_in_manifest(
    read: impl Fn(&str) -> Option<Vec<u8>>,
) -> (Option<String>, Vec<DependencySpec>, Vec<String>) {
    for file in [".plugin/plugin.json", ".claude-plugin/plugin.json"] {
        if let Some(bytes) = read(file) {
            let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&bytes) else {
                return (None, Vec::new(), Vec::new());
            };
            let version = map
                .get("version")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let (specs, problems) = parse_dependencies(map.get("dependencies"));
            let problems = problems
                .into_iter()
                .map(|p| format!("`{file}`: {p}"))
                .collect();
            return (version, specs, problems);
        }
    }
    (None, Vec::new(), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_names_in_other_marketplaces_and_objects() {
        let (specs, problems) = parse_dependencies(Some(&json!([
            "audit-logger",
            "vault@platform",
            {"name": "kit", "version": "~2.1.0"},
            {"name": "x", "version": ">=1.2 <2", "marketplace": "other"},
            42,
            {"version": "^1"},
            {"name": "y", "version": "not a range"}
        ])));
        assert_eq!(
            specs
                .iter()
                .map(DependencySpec::to_lock_string)
                .collect::<Vec<_>>(),
            [
                "audit-logger",
                "vault@platform",
                "kit ~2.1.0",
                "x@other >=1.2 <2"
            ]
        );
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            specs[3]
                .version_req()
                .expect("range")
                .matches(&semver::Version::new(1, 5, 0))
        );
        for spec in &specs {
            let back =
                DependencySpec::from_lock_string(&spec.to_lock_string()).expect("round trip");
            assert_eq!(&back, spec);
        }
        assert_eq!(
            specs[0].in_marketplace(Some("acme")).key(),
            "audit-logger@acme"
        );
        assert_eq!(
            specs[1].in_marketplace(Some("acme")).key(),
            "vault@platform"
        );
    }
}
