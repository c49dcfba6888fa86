//! Adding and removing `[[marketplace]]` declarations, as `berth marketplace add` and
//! `remove` do.

use toml_edit::{ArrayOfTables, Item, Table, Value, value};

use super::{EditError, parse, remove_table};
use crate::source::Source;

/// The manifest after [`remove_marketplace`], and the plugin requests that went with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketplaceRemoval {
    /// The new manifest text.
    pub text: String,
    /// The `source` of every `[[plugin]]` entry removed with it (`PLUGIN@MARKETPLACE`), in
    /// manifest order.
    pub plugins: Vec<String>,
}

/// Adds a `[[marketplace]]` declaration to the manifest `text` (empty: no manifest yet), at
/// the end of the file. Everything else in the text is kept as it was. `file` names the
/// manifest in errors.
pub fn add_marketplace(
    file: &str,
    text: &str,
    name: &str,
    source: &str,
    git_ref: Option<&str>,
    repo_path: Option<&str>,
) -> Result<String, EditError> {
    let mut doc = parse(file, text)?;
    let mut table = Table::new();
    table["name"] = value(name);
    table["source"] = value(source);
    if let Some(r) = git_ref {
        table["ref"] = value(r);
    }
    if let Some(p) = repo_path {
        table["repo_path"] = value(p);
    }
    let prefix = if doc.as_table().is_empty() { "" } else { "\n" };
    table.decor_mut().set_prefix(prefix);
    match doc.get_mut("marketplace") {
        None => {
            let mut array = ArrayOfTables::new();
            array.push(table);
            doc.insert("marketplace", Item::ArrayOfTables(array));
        }
        Some(Item::ArrayOfTables(array)) => array.push(table),
        Some(_) => {
            return Err(EditError::NotAList {
                file: file.to_owned(),
                key: "marketplace",
            });
        }
    }
    Ok(doc.to_string())
}

/// Removes the `[[marketplace]]` named `name` from the manifest `text`, and every
/// `[[plugin]]` entry that asks for one of its plugins (`PLUGIN@name`): such a request
/// cannot lock without its marketplace. A caller that wants to keep them refuses first.
/// Everything else in the text is kept as it was. `file` names the manifest in errors.
pub fn remove_marketplace(
    file: &str,
    text: &str,
    name: &str,
) -> Result<MarketplaceRemoval, EditError> {
    let mut doc = parse(file, text)?;
    let not_a_list = |key| EditError::NotAList {
        file: file.to_owned(),
        key,
    };
    let unknown = || EditError::UnknownMarketplace {
        file: file.to_owned(),
        name: name.to_owned(),
    };
    let named = |t: &dyn toml_edit::TableLike| t.get("name").and_then(Item::as_str) == Some(name);
    match doc.get_mut("marketplace") {
        Some(Item::ArrayOfTables(array)) => {
            let at = array.iter().position(|t| named(t)).ok_or_else(unknown)?;
            remove_table(&mut doc, "marketplace", at);
        }
        Some(Item::Value(Value::Array(array))) => {
            let at = array
                .iter()
                .position(|v| v.as_inline_table().is_some_and(|t| named(t)))
                .ok_or_else(unknown)?;
            array.remove(at);
        }
        None => return Err(unknown()),
        Some(_) => return Err(not_a_list("marketplace")),
    }
    let asks = |t: &dyn toml_edit::TableLike| {
        let source = t.get("source").and_then(Item::as_str)?;
        let parsed = Source::parse(source).ok()?;
        (parsed.marketplace() == Some(name)).then(|| source.to_owned())
    };
    let mut plugins = Vec::new();
    match doc.get_mut("plugin") {
        Some(Item::ArrayOfTables(array)) => {
            plugins = array.iter().filter_map(|t| asks(t)).collect();
            let doomed: Vec<usize> = (0..array.len())
                .filter(|&i| array.get(i).and_then(|t| asks(t)).is_some())
                .collect();
            for &i in doomed.iter().rev() {
                remove_table(&mut doc, "plugin", i);
            }
        }
        Some(Item::Value(Value::Array(array))) => {
            let of = |v: &Value| v.as_inline_table().and_then(|t| asks(t));
            plugins = array.iter().filter_map(of).collect();
            array.retain(|v| of(v).is_none());
        }
        None => {}
        Some(_) => return Err(not_a_list("plugin")),
    }
    // No empty `marketplace = []` left behind for a list that is gone.
    for key in ["marketplace", "plugin"] {
        if doc
            .get(key)
            .and_then(Item::as_array_of_tables)
            .is_some_and(ArrayOfTables::is_empty)
        {
            doc.remove(key);
        }
    }
    Ok(MarketplaceRemoval {
        text: doc.to_string(),
        plugins,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_manifest;

    const F: &str = "plugins.toml";

    const TEXT: &str = "# team plugins\n\n[[marketplace]]\nname = \"acme\"   # ours\nsource = \"github:acme/market\"\n\n[[marketplace]]\nname = \"other\"\nsource = \"./other\"\n\n[[plugin]]\n# rules first\nsource = \"./rules\"\n\n[[plugin]]\nsource = \"rel@acme\"\n\n[[plugin]]\nsource = \"x@other\"\n";

    #[test]
    fn remove_takes_the_declaration_and_its_requests_and_keeps_the_rest() {
        let removal = remove_marketplace(F, TEXT, "acme").expect("remove");
        assert_eq!(removal.plugins, ["rel@acme"]);
        assert_eq!(
            removal.text,
            "# team plugins\n\n[[marketplace]]\nname = \"other\"\nsource = \"./other\"\n\n[[plugin]]\n# rules first\nsource = \"./rules\"\n\n[[plugin]]\nsource = \"x@other\"\n"
        );
        let manifest = parse_manifest(F, &removal.text).expect("valid").manifest;
        assert_eq!(manifest.marketplaces.len(), 1);
        assert_eq!(manifest.plugins.len(), 2);
    }

    #[test]
    fn a_comment_right_above_a_removed_entry_goes_with_it_and_a_heading_stays() {
        let text = "# heading\n\n[[marketplace]]\nname = \"acme\"\nsource = \"./m\"\n\n# about rel\n[[plugin]]\nsource = \"rel@acme\"\n\n[[plugin]]\nsource = \"./b\"\n";
        let removal = remove_marketplace(F, text, "acme").expect("remove");
        assert_eq!(removal.text, "# heading\n\n[[plugin]]\nsource = \"./b\"\n");
    }

    #[test]
    fn remove_of_the_last_declaration_leaves_no_empty_key() {
        let text = "[[marketplace]]\nname = \"acme\"\nsource = \"./m\"\n";
        let removal = remove_marketplace(F, text, "acme").expect("remove");
        assert_eq!(removal.text, "");
        assert!(removal.plugins.is_empty());
    }

    #[test]
    fn remove_from_inline_arrays() {
        let text = "marketplace = [{ name = \"acme\", source = \"./m\" }]\nplugin = [{ source = \"a@acme\" }, { source = \"./b\" }]\n";
        let removal = remove_marketplace(F, text, "acme").expect("remove");
        assert_eq!(removal.plugins, ["a@acme"]);
        let manifest = parse_manifest(F, &removal.text).expect("valid").manifest;
        assert!(manifest.marketplaces.is_empty());
        assert_eq!(manifest.plugins.len(), 1);
    }

    #[test]
    fn remove_of_an_unknown_marketplace_changes_nothing() {
        assert_eq!(
            remove_marketplace(F, TEXT, "acm"),
            Err(EditError::UnknownMarketplace {
                file: F.into(),
                name: "acm".into()
            })
        );
        assert!(matches!(
            remove_marketplace(F, "marketplace = 3\n", "acme"),
            Err(EditError::NotAList { .. })
        ));
    }
}
