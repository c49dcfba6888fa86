//! Editing `plugins.toml` in place, as `berth plugins add` and `remove` do: text in, text
//! out, through `toml_edit`, so the user's comments, order and layout survive. Reading and
//! writing the file is the caller's; validating the result is [`crate::parse_manifest`]'s.

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, Value, value};

use crate::lock::Lock;

mod marketplace;

pub use marketplace::{MarketplaceRemoval, add_marketplace, remove_marketplace};

/// A `[[plugin]]` entry to append: the request fields as the user gave them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NewPlugin<'a> {
    /// `source`.
    pub source: &'a str,
    /// `ref`.
    pub git_ref: Option<&'a str>,
    /// `version`.
    pub version: Option<&'a str>,
    /// `repo_path`.
    pub repo_path: Option<&'a str>,
}

/// The manifest after [`remove_plugin`], and how many entries went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// The new manifest text.
    pub text: String,
    /// How many `[[plugin]]` entries were removed (at least one).
    pub removed: usize,
}

/// Why a manifest could not be edited. `file` is the manifest's name in messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The text is not TOML.
    #[error("could not parse `{file}`")]
    Syntax {
        file: String,
        #[source]
        source: toml_edit::TomlError,
    },
    /// `plugin` (or `marketplace`) is something other than a list of tables.
    #[error("`{key}` in `{file}` is not a list of tables; fix it first")]
    NotAList { file: String, key: &'static str },
    /// The lock has entries the manifest lacks: it is not this manifest's current lock.
    #[error(
        "`{file}` has fewer `[[plugin]]` entries than its lock; run `berth plugins lock` first"
    )]
    LockMismatch { file: String },
    /// The plugin is in the lock only because others need it.
    #[error(
        "`{name}` is not in `{file}`: it is locked because {} {}; remove {} instead",
        list_names(.needed_by),
        if .needed_by.len() == 1 { "needs it" } else { "need it" },
        if .needed_by.len() == 1 { "that" } else { "those" }
    )]
    Dependency {
        file: String,
        name: String,
        needed_by: Vec<String>,
    },
    /// No locked plugin has that name. `names` are the locked plugins' names, in order.
    #[error("no plugin named `{name}` in `{file}`; the plugins are {}", list_names(.names))]
    UnknownPlugin {
        file: String,
        name: String,
        names: Vec<String>,
    },
    /// The manifest declares no marketplace of that name.
    #[error("`{file}` declares no marketplace `{name}`")]
    UnknownMarketplace { file: String, name: String },
}

/// `` `a`, `b` ``, or `none`.
fn list_names(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse(file: &str, text: &str) -> Result<DocumentMut, EditError> {
    text.parse().map_err(|source| EditError::Syntax {
        file: file.to_owned(),
        source,
    })
}

/// Removes the `index`th table of the array of tables `key`. The comments above it that a
/// blank line separates from it (a file's heading, a note on a section) stay, moved to the
/// table that follows it in the file (or the file's end); those right above its header go
/// with it.
fn remove_table(doc: &mut DocumentMut, key: &str, index: usize) {
    let Some(Item::ArrayOfTables(array)) = doc.get_mut(key) else {
        return;
    };
    let Some(table) = array.get(index) else {
        return;
    };
    let position = table.position();
    let carried = detached_comments(table.decor().prefix().and_then(|p| p.as_str()));
    array.remove(index);
    let (Some(position), Some(carried)) = (position, carried) else {
        return;
    };
    // The table that follows it in the file: the nearest position after its own.
    let mut next = None;
    visit_tables(doc.as_table_mut(), &mut |t| {
        if let Some(p) = t.position().filter(|p| *p > position) {
            next = Some(next.map_or(p, |n: isize| n.min(p)));
        }
    });
    let mut placed = false;
    visit_tables(doc.as_table_mut(), &mut |t| {
        if !placed && next.is_some() && t.position() == next {
            let own = t.decor().prefix().and_then(|p| p.as_str()).unwrap_or("");
            let gap = if own.starts_with(['\n', '\r']) {
                ""
            } else {
                "\n"
            };
            let prefix = format!("{carried}{gap}{own}");
            t.decor_mut().set_prefix(prefix);
            placed = true;
        }
    });
    if !placed {
        let trailing = doc.trailing().as_str().unwrap_or("").to_owned();
        doc.set_trailing(format!("{trailing}{carried}"));
    }
}

/// The lines of a table's `prefix` up to its last blank line, when they hold a comment
/// (without the blank lines they end with).
fn detached_comments(prefix: Option<&str>) -> Option<String> {
    let lines: Vec<&str> = prefix?.split_inclusive('\n').collect();
    let last_blank = lines.iter().rposition(|l| l.trim().is_empty())?;
    let detached = lines[..=last_blank].concat();
    detached
        .contains('#')
        .then(|| format!("{}\n", detached.trim_end()))
}

/// Calls `f` on every table under `table` (arrays of tables included), depth first.
fn visit_tables(table: &mut Table, f: &mut dyn FnMut(&mut Table)) {
    for (_, item) in table.iter_mut() {
        match item {
            Item::Table(t) => {
                f(t);
                visit_tables(t, f);
            }
            Item::ArrayOfTables(array) => {
                for t in array.iter_mut() {
                    f(t);
                    visit_tables(t, f);
                }
            }
            _ => {}
        }
    }
}

/// Appends `entry` to the manifest `text` (empty: no manifest yet): a `[[plugin]]` table
/// after the last one, or an inline table when the manifest writes its plugins as
/// `plugin = [{...}]`. Everything else in the text is kept as it was. `file` names the
/// manifest in errors.
pub fn add_plugin(file: &str, text: &str, entry: &NewPlugin<'_>) -> Result<String, EditError> {
    let mut doc = parse(file, text)?;
    let mut table = Table::new();
    table["source"] = value(entry.source);
    if let Some(r) = entry.git_ref {
        table["ref"] = value(r);
    }
    if let Some(v) = entry.version {
        table["version"] = value(v);
    }
    if let Some(p) = entry.repo_path {
        table["repo_path"] = value(p);
    }
    match doc.get_mut("plugin") {
        None => {
            let mut array = ArrayOfTables::new();
            table
                .decor_mut()
                .set_prefix(if doc.as_table().is_empty() { "" } else { "\n" });
            array.push(table);
            doc.insert("plugin", Item::ArrayOfTables(array));
        }
        Some(Item::ArrayOfTables(array)) => {
            table.decor_mut().set_prefix("\n");
            array.push(table);
        }
        Some(Item::Value(Value::Array(array))) => {
            array.push(table.into_inline_table());
        }
        Some(_) => {
            return Err(EditError::NotAList {
                file: file.to_owned(),
                key: "plugin",
            });
        }
    }
    Ok(doc.to_string())
}

/// Removes every `[[plugin]]` entry whose locked name is `name`. `lock` must be the
/// manifest's current lock (up to date, so its entries match the manifest's one to one, in
/// order): names come from the lock, since a plugin's name is only known once fetched.
/// `file` names the manifest in errors.
pub fn remove_plugin(
    file: &str,
    text: &str,
    lock: &Lock,
    name: &str,
) -> Result<Removal, EditError> {
    // Manifest entries answer to the lock's requested entries, in order.
    let requested: Vec<&crate::LockedPlugin> =
        lock.plugins.iter().filter(|p| p.is_requested()).collect();
    let doomed: Vec<usize> = requested
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name == name)
        .map(|(i, _)| i)
        .collect();
    if doomed.is_empty()
        && let Some(dependency) = lock.plugins.iter().find(|p| p.name == name)
    {
        return Err(EditError::Dependency {
            file: file.to_owned(),
            name: name.to_owned(),
            needed_by: dependency.needed_by.clone(),
        });
    }
    if doomed.is_empty() {
        return Err(EditError::UnknownPlugin {
            file: file.to_owned(),
            name: name.to_owned(),
            names: lock.plugins.iter().map(|p| p.name.clone()).collect(),
        });
    }
    let mut doc = parse(file, text)?;
    if let Some(Item::ArrayOfTables(array)) = doc.get("plugin")
        && doomed.iter().all(|&i| i < array.len())
    {
        for &i in doomed.iter().rev() {
            remove_table(&mut doc, "plugin", i);
        }
        return Ok(Removal {
            text: doc.to_string(),
            removed: doomed.len(),
        });
    }
    match doc.get_mut("plugin") {
        Some(Item::Value(Value::Array(array))) if doomed.iter().all(|&i| i < array.len()) => {
            for &i in doomed.iter().rev() {
                array.remove(i);
            }
        }
        Some(Item::ArrayOfTables(_) | Item::Value(Value::Array(_))) => {
            return Err(EditError::LockMismatch {
                file: file.to_owned(),
            });
        }
        _ => {
            return Err(EditError::NotAList {
                file: file.to_owned(),
                key: "plugin",
            });
        }
    }
    Ok(Removal {
        text: doc.to_string(),
        removed: doomed.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Sha256Hash, parse_manifest};

    const F: &str = "plugins.toml";

    const COMMENTED: &str = "# Plugins for the bot.\n\n[[plugin]]\n# house rules first\nsource = \"./rules\"   # local\n\n[[plugin]]\nsource = \"github:acme/tools\"\nref = \"v1.2.0\"\n\n# The end.\n";

    fn entry(source: &str) -> NewPlugin<'_> {
        NewPlugin {
            source,
            ..NewPlugin::default()
        }
    }

    /// A lock of plugins with these names (local pins; only the names matter here).
    fn lock_named(names: &[&str]) -> Lock {
        let text: String = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                format!(
                    "[[plugin]]\nname = \"{name}\"\nsource = \"./p{i}\"\npath = \"./p{i}\"\nhash = \"{}\"\n\n",
                    Sha256Hash::from_bytes([i as u8; 32]).to_sri()
                )
            })
            .collect();
        crate::parse_lock("test.lock", &format!("version = 1\n\n{text}")).expect("a valid lock")
    }

    #[test]
    fn add_to_no_manifest_writes_one_table() {
        let text = add_plugin(F, "", &entry("github:acme/solo")).expect("add");
        assert_eq!(text, "[[plugin]]\nsource = \"github:acme/solo\"\n");
    }

    #[test]
    fn add_keeps_comments_and_appends_after_the_last_entry() {
        let text = add_plugin(
            F,
            COMMENTED,
            &NewPlugin {
                source: "github:acme/review",
                git_ref: Some("main"),
                version: None,
                repo_path: Some("plugins/review"),
            },
        )
        .expect("add");
        assert!(
            text.starts_with(COMMENTED.trim_end_matches("\n# The end.\n")),
            "{text}"
        );
        for kept in ["# Plugins for the bot.", "# house rules first", "# local"] {
            assert!(text.contains(kept), "`{kept}` lost:\n{text}");
        }
        assert!(
            text.contains(
                "\n\n[[plugin]]\nsource = \"github:acme/review\"\nref = \"main\"\nrepo_path = \"plugins/review\"\n"
            ),
            "{text}"
        );
        let manifest = parse_manifest("plugins.toml", &text)
            .expect("valid")
            .manifest;
        assert_eq!(manifest.plugins.len(), 3);
        assert_eq!(manifest.plugins[2].git_ref.as_deref(), Some("main"));
    }

    #[test]
    fn add_to_an_inline_array_stays_inline() {
        let text = add_plugin(
            F,
            "plugin = [{ source = \"./a\" }]\n",
            &NewPlugin {
                version: Some("^1"),
                ..entry("github:acme/b")
            },
        )
        .expect("add");
        assert!(!text.contains("[[plugin]]"), "{text}");
        let manifest = parse_manifest("plugins.toml", &text)
            .expect("valid")
            .manifest;
        assert_eq!(manifest.plugins.len(), 2);
        assert_eq!(manifest.plugins[1].version.as_deref(), Some("^1"));
    }

    #[test]
    fn add_after_other_tables_separates_with_a_blank_line() {
        let text = add_plugin(F, "[agent]\nsource = \"pkg\"\n", &entry("./a")).expect("add");
        assert_eq!(
            text,
            "[agent]\nsource = \"pkg\"\n\n[[plugin]]\nsource = \"./a\"\n"
        );
    }

    #[test]
    fn add_refuses_a_plugin_key_that_is_not_a_list() {
        assert_eq!(
            add_plugin(F, "plugin = 3\n", &entry("./a")),
            Err(EditError::NotAList {
                file: F.into(),
                key: "plugin"
            })
        );
        assert!(matches!(
            add_plugin(F, "[[plugin]\n", &entry("./a")),
            Err(EditError::Syntax { .. })
        ));
    }

    #[test]
    fn remove_takes_every_entry_of_that_name_and_keeps_the_rest() {
        let text = format!("{COMMENTED}\n[[plugin]]\nsource = \"github:acme/tools2\"\n");
        let lock = lock_named(&["rules", "tools", "tools"]);
        let removal = remove_plugin(F, &text, &lock, "tools").expect("remove");
        assert_eq!(removal.removed, 2);
        assert!(!removal.text.contains("acme/tools"), "{}", removal.text);
        for kept in ["# Plugins for the bot.", "# house rules first", "./rules"] {
            assert!(removal.text.contains(kept), "{}", removal.text);
        }
        let manifest = parse_manifest("plugins.toml", &removal.text)
            .expect("valid")
            .manifest;
        assert_eq!(manifest.plugins.len(), 1);
    }

    #[test]
    fn remove_from_an_inline_array() {
        let text = "plugin = [{ source = \"./a\" }, { source = \"./b\" }]\n";
        let removal = remove_plugin(F, text, &lock_named(&["a", "b"]), "a").expect("remove");
        assert_eq!(removal.removed, 1);
        let manifest = parse_manifest("plugins.toml", &removal.text)
            .expect("valid")
            .manifest;
        assert_eq!(manifest.plugins.len(), 1);
        assert_eq!(manifest.plugins[0].source, "./b");
    }

    #[test]
    fn remove_of_an_unknown_name_lists_the_plugins() {
        let error = remove_plugin(F, COMMENTED, &lock_named(&["rules", "tools"]), "nope")
            .expect_err("no such plugin");
        assert_eq!(
            error.to_string(),
            "no plugin named `nope` in `plugins.toml`; the plugins are `rules`, `tools`"
        );
        let error = remove_plugin(F, "", &lock_named(&[]), "nope").expect_err("empty");
        assert_eq!(
            error.to_string(),
            "no plugin named `nope` in `plugins.toml`; the plugins are none"
        );
    }

    #[test]
    fn remove_with_a_lock_that_does_not_match_changes_nothing() {
        // Three locked entries against a manifest of two: the lock is not this manifest's.
        let error =
            remove_plugin(F, COMMENTED, &lock_named(&["a", "b", "c"]), "c").expect_err("mismatch");
        assert_eq!(error, EditError::LockMismatch { file: F.into() });
    }
}
