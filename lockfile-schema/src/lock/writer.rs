//! The canonical writer: fixed key order, manifest order, `\n`, one trailing newline.

use std::fmt::Write as _;

use super::{LOCK_HEADER, LOCK_VERSION, Lock, LockedPluginWire};

impl Lock {
    /// The canonical text of docs/spec.md section 2: fixed key order, manifest order, `\n` line ends,
    /// one trailing newline. Equal locks give equal bytes.
    pub fn to_toml(&self) -> String {
        let mut out = String::with_capacity(256 + self.plugins.len() * 320);
        out.push_str(LOCK_HEADER);
        let _ = writeln!(out, "version = {LOCK_VERSION}");
        if let Some(cutoff) = &self.exclude_newer {
            write_fields(
                &mut out,
                &[
                    ("exclude-newer", Some(&cutoff.to_rfc3339())),
                    ("exclude-newer-span", cutoff.span.as_ref()),
                ],
            );
        }
        for marketplace in &self.marketplaces {
            write_marketplace(&mut out, marketplace);
        }
        for plugin in &self.plugins {
            write_plugin(&mut out, plugin);
        }
        if let Some(agent) = &self.agent {
            agent.write_toml(&mut out);
        }
        for payload in &self.payloads {
            payload.write_toml(&mut out);
        }
        for key in &self.registry_keys {
            key.write_toml(&mut out);
        }
        for tools in &self.tools {
            tools.write_toml(&mut out);
        }
        out
    }
}

/// One `[[plugin]]` table, its keys in the fixed order.
fn write_plugin(out: &mut String, plugin: &super::LockedPlugin) {
    let w = LockedPluginWire::from(plugin);
    out.push_str("\n[[plugin]]\n");
    let fields: [(&str, Option<&String>); 12] = [
        ("name", Some(&w.name)),
        ("requested", w.requested.as_ref()),
        ("source", Some(&w.source)),
        ("ref", w.git_ref.as_ref()),
        ("version", w.version.as_ref()),
        ("resolved_ref", w.resolved_ref.as_ref()),
        ("repo_path", w.repo_path.as_ref()),
        ("url", w.url.as_ref()),
        ("rev", w.rev.as_ref()),
        ("archive_hash", w.archive_hash.as_ref()),
        ("path", w.path.as_ref()),
        ("hash", Some(&w.hash)),
    ];
    write_fields(out, &fields);
    write_fields(out, &[("plugin_version", w.plugin_version.as_ref())]);
    write_list(out, "dependencies", &w.dependencies);
    write_list(out, "needed_by", &w.needed_by);
    write_fields(out, &[("auto_load", w.auto_load.as_ref())]);
    if w.standalone_skill {
        out.push_str("standalone_skill = true\n");
    }
    write_fields(out, &[("definition", w.definition.as_ref())]);
    if let Some(signature) = &plugin.signature {
        signature.write_toml(out);
    }
    if let Some(npm) = &plugin.npm {
        npm.write_toml(out);
    }
}

/// One `[[marketplace]]` table.
fn write_marketplace(out: &mut String, marketplace: &super::LockedMarketplace) {
    let w = super::LockedMarketplaceWire::from(marketplace);
    out.push_str("\n[[marketplace]]\n");
    write_fields(
        out,
        &[
            ("name", Some(&w.name)),
            ("source", Some(&w.source)),
            ("ref", w.git_ref.as_ref()),
            ("repo_path", w.repo_path.as_ref()),
            ("url", w.url.as_ref()),
            ("rev", w.rev.as_ref()),
            ("catalog", Some(&w.catalog)),
            ("catalog_hash", Some(&w.catalog_hash)),
        ],
    );
    match &w.auto_load {
        None => {}
        Some(super::AutoLoadWire::Flag(on)) => {
            let _ = writeln!(out, "auto_load = {on}");
        }
        Some(super::AutoLoadWire::Names(names)) => write_list(out, "auto_load", names),
    }
}

/// Writes `key = ["a", "b"]`, or nothing for an empty list.
pub(crate) fn write_list(out: &mut String, key: &str, values: &[String]) {
    if values.is_empty() {
        return;
    }
    let items: Vec<String> = values.iter().map(|v| toml_string(v)).collect();
    let _ = writeln!(out, "{key} = [{}]", items.join(", "));
}

/// Writes `key = "value"` lines in the given order, leaving out absent values.
pub(crate) fn write_fields(out: &mut String, fields: &[(&str, Option<&String>)]) {
    for (key, value) in fields {
        if let Some(value) = value {
            let _ = writeln!(out, "{key} = {}", toml_string(value));
        }
    }
}

/// A TOML basic string with every character that needs it escaped.
pub fn toml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    // Runs of characters that need no escape are copied whole.
    let mut run = 0;
    for (at, c) in value.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\t' => "\\t",
            '\r' => "\\r",
            c if c.is_control() => "",
            _ => continue,
        };
        out.push_str(&value[run..at]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04X}", u32::from(c));
        } else {
            out.push_str(escape);
        }
        run = at + c.len_utf8();
    }
    out.push_str(&value[run..]);
    out.push('"');
    out
}
