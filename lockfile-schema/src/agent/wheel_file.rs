//! A wheel's file name, checked once when it is read.

use std::path::Path;

/// A wheel's file name (`name-version(-build)?-python-abi-platform.whl`): one path
/// component, never empty, `.`/`..`, or holding a separator, so it can be joined to a folder
/// as it is. Checked when it is made; a value of this type is always valid.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct WheelFile(String);

impl WheelFile {
    /// `name` if it is a wheel file name: ends in `.whl`, has the five dash-separated parts
    /// of PEP 427 (six with a build tag), and no `/`, `\`, NUL or leading `.`.
    pub fn parse(name: &str) -> Option<Self> {
        let stem = name.strip_suffix(".whl")?;
        let parts = stem.split('-').count();
        let plain = !name.starts_with('.')
            && !name.contains(['/', '\\', '\0'])
            && stem.split('-').all(|p| !p.is_empty());
        (plain && (parts == 5 || parts == 6)).then(|| Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WheelFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::ops::Deref for WheelFile {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<Path> for WheelFile {
    fn as_ref(&self) -> &Path {
        Path::new(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wheel_file_names_parse() {
        for good in [
            "agent_helper-0.3.0-py3-none-any.whl",
            "numpy-2.1.0-1-cp312-cp312-manylinux_2_17_x86_64.whl",
        ] {
            assert_eq!(
                WheelFile::parse(good).map(|w| w.to_string()),
                Some(good.to_owned())
            );
        }
        for bad in [
            "",
            ".whl",
            "x.whl",
            "a-1-py3-none-any.tar.gz",
            "../a-1-py3-none-any.whl",
            "dir/a-1-py3-none-any.whl",
            "a\\b-1-py3-none-any.whl",
            "a--py3-none-any.whl",
            ".a-1-py3-none-any.whl",
        ] {
            assert_eq!(WheelFile::parse(bad), None, "{bad}");
        }
    }
}
