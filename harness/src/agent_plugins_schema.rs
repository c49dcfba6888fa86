//! The Agent Plugins 1.0 JSON schemas, vendored from the openhands-sdk 1.58.2 wheel
//! (`openhands/sdk/plugin/format/schemas/`, in `harness/schemas/agent-plugins/`), and a
//! validator for the part of JSON Schema 2020-12 they use: every `plugin.json` and
//! `mcp.json` the `agent-plugins` target writes is checked before it is written, as the
//! SDK checks them when it loads the folder (`Draft202012Validator`).
//!
//! A keyword the validator does not know is an error, so a newer schema using one fails
//! the tests rather than passing unchecked. `pattern` uses the `regex` crate, which has no
//! lookaround: a pattern that opens with a negative lookahead (`^(?!X)REST`) is checked as
//! "does not start with X, and matches `^REST`".

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use berth_store::unpoisoned;
use regex::Regex;
use serde_json::Value;

/// `plugin-1.0.0.schema.json`.
pub(super) const PLUGIN: &str = include_str!("../schemas/agent-plugins/plugin-1.0.0.schema.json");
/// `mcp-1.0.0.schema.json`.
pub(super) const MCP: &str = include_str!("../schemas/agent-plugins/mcp-1.0.0.schema.json");

/// Keywords that only annotate.
const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "$defs", "title", "description"];

/// Why `value` is not valid against `schema` (one line each, naming the place), or nothing.
pub(super) fn violations(schema: &str, value: &Value) -> Vec<String> {
    // Each schema is parsed once per process (a plugin folder is checked twice).
    static PARSED: LazyLock<Mutex<HashMap<String, Arc<Value>>>> = LazyLock::new(Mutex::default);
    let root = unpoisoned(PARSED.lock())
        .entry(schema.to_owned())
        .or_insert_with(|| {
            Arc::new(serde_json::from_str(schema).expect("a vendored schema is JSON"))
        })
        .clone();
    let mut out = Vec::new();
    check(&root, &root, value, "", &mut out);
    out
}

/// What `at` is called in a message.
fn place(at: &str) -> String {
    if at.is_empty() {
        "the document".to_owned()
    } else {
        format!("`{at}`")
    }
}

fn check(root: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let Some(keywords) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            out.push(format!("{} is not allowed", place(at)));
        }
        return;
    };
    for (key, rule) in keywords {
        if ANNOTATIONS.contains(&key.as_str()) {
            continue;
        }
        match key.as_str() {
            "$ref" => match resolve(root, rule) {
                Some(target) => check(root, target, value, at, out),
                None => out.push(format!(
                    "the schema's `$ref` {rule} is not one of its `$defs`"
                )),
            },
            "type" if !of_type(rule, value) => {
                out.push(format!("{} is not of type {rule}", place(at)));
            }
            "type" => {}
            "const" if value != rule => out.push(format!("{} must be {rule}", place(at))),
            "enum" if !rule.as_array().is_some_and(|v| v.contains(value)) => {
                out.push(format!("{} must be one of {rule}", place(at)));
            }
            "const" | "enum" => {}
            "required" => {
                for name in rule
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if value.as_object().is_some_and(|m| !m.contains_key(name)) {
                        out.push(format!("{} has no `{name}`", place(at)));
                    }
                }
            }
            "properties" | "additionalProperties" | "propertyNames" => {
                object_keyword(root, keywords, key, value, at, out);
            }
            "items" => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    check(root, rule, item, &format!("{at}[{i}]"), out);
                }
            }
            "not" => {
                let mut inner = Vec::new();
                check(root, rule, value, at, &mut inner);
                if inner.is_empty() {
                    out.push(format!("{} must not match {rule}", place(at)));
                }
            }
            "oneOf" => one_of(root, rule, value, at, out),
            "minLength" | "maxLength" => length(key, rule, value, at, out),
            "pattern" => {
                if let (Some(text), Some(pattern)) = (value.as_str(), rule.as_str()) {
                    match matches(pattern, text) {
                        Some(true) => {}
                        Some(false) => out.push(format!(
                            "{} ({text:?}) does not match `{pattern}`",
                            place(at)
                        )),
                        None => {
                            out.push(format!("the schema's pattern `{pattern}` is not supported"))
                        }
                    }
                }
            }
            other => out.push(format!("the schema's keyword `{other}` is not supported")),
        }
    }
}

/// Whether `value` is of JSON type `rule`.
fn of_type(rule: &Value, value: &Value) -> bool {
    match rule.as_str() {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("number") => value.is_number(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("null") => value.is_null(),
        _ => false,
    }
}

/// `oneOf`: exactly one of the forms in `rule` takes `value`.
fn one_of(root: &Value, rule: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let options = rule.as_array().map_or(&[][..], Vec::as_slice);
    let valid = options
        .iter()
        .filter(|option| {
            let mut inner = Vec::new();
            check(root, option, value, at, &mut inner);
            inner.is_empty()
        })
        .count();
    if valid != 1 {
        out.push(format!(
            "{} matches {valid} of the {} forms it may take, not one",
            place(at),
            options.len()
        ));
    }
}

/// `minLength` and `maxLength` of a string `value`, in characters.
fn length(key: &str, rule: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    if let (Some(text), Some(limit)) = (value.as_str(), rule.as_u64()) {
        let length = text.chars().count() as u64;
        let bad = if key == "minLength" {
            length < limit
        } else {
            length > limit
        };
        if bad {
            out.push(format!(
                "{} is {length} characters long ({key} {limit})",
                place(at)
            ));
        }
    }
}

/// `properties`, `additionalProperties` and `propertyNames` of an object `value`.
fn object_keyword(
    root: &Value,
    keywords: &serde_json::Map<String, Value>,
    key: &str,
    value: &Value,
    at: &str,
    out: &mut Vec<String>,
) {
    let Some(object) = value.as_object() else {
        return;
    };
    let declared = keywords.get("properties").and_then(Value::as_object);
    for (name, field) in object {
        let here = if at.is_empty() {
            name.clone()
        } else {
            format!("{at}.{name}")
        };
        match key {
            "properties" => {
                if let Some(rule) = declared.and_then(|d| d.get(name)) {
                    check(root, rule, field, &here, out);
                }
            }
            "additionalProperties" if !declared.is_some_and(|d| d.contains_key(name)) => {
                check(root, &keywords[key], field, &here, out);
            }
            "propertyNames" => {
                check(
                    root,
                    &keywords[key],
                    &Value::String(name.clone()),
                    &here,
                    out,
                );
            }
            _ => {}
        }
    }
}

/// The schema `#/$defs/NAME` names.
fn resolve<'a>(root: &'a Value, reference: &Value) -> Option<&'a Value> {
    let name = reference.as_str()?.strip_prefix("#/$defs/")?;
    root.get("$defs")?.get(name)
}

/// Whether `text` matches `pattern` (searched, as JSON Schema's `pattern` is), or `None`
/// for a pattern the `regex` crate cannot express.
fn matches(pattern: &str, text: &str) -> Option<bool> {
    if let Some(rest) = pattern.strip_prefix("^(?!") {
        let end = closing(rest)?;
        let (ahead, after) = (&rest[..end], &rest[end + 1..]);
        let not = compiled(&format!("^(?:{ahead})"))?;
        let then = compiled(&format!("^{after}"))?;
        return Some(!not.is_match(text) && then.is_match(text));
    }
    compiled(pattern).map(|re| re.is_match(text))
}

/// `pattern` compiled, once per process (compiling is what checking a name costs), or
/// `None` when the `regex` crate cannot express it.
fn compiled(pattern: &str) -> Option<Regex> {
    static COMPILED: LazyLock<Mutex<HashMap<String, Option<Regex>>>> =
        LazyLock::new(Mutex::default);
    unpoisoned(COMPILED.lock())
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).ok())
        .clone()
}

/// The index in `text` of the `)` closing a group opened just before it.
fn closing(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{MCP, PLUGIN, violations};
    use serde_json::json;

    #[test]
    fn the_vendored_schemas_use_only_what_the_validator_knows() {
        // Validating each schema's own examples walks every keyword of the branches they
        // reach; a full walk of both schemas follows.
        fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
            if let Some(map) = value.as_object() {
                for (key, rule) in map {
                    let known = [
                        "$schema",
                        "$id",
                        "$defs",
                        "title",
                        "description",
                        "$ref",
                        "type",
                        "const",
                        "enum",
                        "required",
                        "properties",
                        "additionalProperties",
                        "propertyNames",
                        "items",
                        "not",
                        "oneOf",
                        "minLength",
                        "maxLength",
                        "pattern",
                    ];
                    if !known.contains(&key.as_str()) {
                        out.push(key.clone());
                    }
                    match key.as_str() {
                        "properties" | "$defs" => {
                            for v in rule.as_object().into_iter().flat_map(|m| m.values()) {
                                walk(v, out);
                            }
                        }
                        "const" | "enum" | "description" | "title" => {}
                        _ => walk(rule, out),
                    }
                }
            } else if let Some(items) = value.as_array() {
                items.iter().for_each(|v| walk(v, out));
            }
        }
        for schema in [PLUGIN, MCP] {
            let mut unknown = Vec::new();
            walk(&serde_json::from_str(schema).expect("JSON"), &mut unknown);
            assert_eq!(unknown, Vec::<String>::new());
        }
    }

    #[test]
    fn checks_plugin_manifests_as_the_sdk_does() {
        let schema = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
        assert_eq!(
            violations(
                PLUGIN,
                &json!({"$schema": schema, "name": "review", "version": "1.0.0"})
            ),
            Vec::<String>::new()
        );
        for (bad, why) in [
            (
                json!({"$schema": schema, "name": "Review"}),
                "does not match",
            ),
            (json!({"$schema": schema, "name": "a--b"}), "does not match"),
            (json!({"$schema": schema, "name": "a..b"}), "does not match"),
            (
                json!({"$schema": schema, "name": "ok", "version": null}),
                "not of type",
            ),
            (
                json!({"$schema": schema, "name": "ok", "extra": 1}),
                "is not allowed",
            ),
            (json!({"name": "ok"}), "has no `$schema`"),
            (
                json!({"$schema": schema, "name": "x".repeat(65)}),
                "65 characters",
            ),
        ] {
            let found = violations(PLUGIN, &bad);
            assert!(found.iter().any(|v| v.contains(why)), "{bad}: {found:?}");
        }
    }

    #[test]
    fn checks_mcp_files_as_the_sdk_does() {
        let schema = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";
        let good = json!({"$schema": schema, "mcpServers": {
            "a": {"type": "stdio", "command": "./bin/a", "args": ["--x"], "env": {"K": "v"}, "cwd": "${PLUGIN_ROOT}/x"},
            "b": {"type": "streamable-http", "url": "https://x.invalid/mcp", "headers": {"H": "v"}},
            "c": {"type": "sse", "url": "https://x.invalid/sse"}
        }});
        assert_eq!(violations(MCP, &good), Vec::<String>::new());
        for bad in [
            json!({"$schema": schema, "mcpServers": {"a": {"type": "http", "url": "https://x.invalid"}}}),
            json!({"$schema": schema, "mcpServers": {"a": {"type": "stdio", "command": "x", "env": {"PLUGIN_ROOT": "/"}}}}),
            json!({"$schema": schema, "mcpServers": {"a": {"type": "stdio", "command": "x", "cwd": "/tmp"}}}),
            json!({"$schema": schema, "mcpServers": {"a": {"type": "stdio", "command": ""}}}),
            json!({"$schema": schema, "mcpServers": {"a": {"type": "stdio", "command": "x", "env": {"K": 1}}}}),
        ] {
            assert!(!violations(MCP, &bad).is_empty(), "{bad}");
        }
    }
}
