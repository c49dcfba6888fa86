//! The small readings every kind of entry shares: a JSON value as text or as canonical
//! JSON, an event's name in snake_case, and what cannot be modelled.

use berth_lockfile_schema::canonical_json;
use berth_lockfile_schema::governance::Capability;
use berth_lockfile_schema::harness_keys::Place;
use serde_json::{Map, Value};

use super::{Runs, Unmodeled};

pub(super) fn unmodeled(runs: &mut Runs, capability: Capability, source: &str, what: String) {
    runs.unmodeled.push(Unmodeled {
        capability,
        source: source.to_owned(),
        what,
    });
}

/// Each key of `object` the table of harness keys does not know at `place`, counted as
/// every capability: berth cannot tell what it grants.
pub(super) fn unknown_keys(
    runs: &mut Runs,
    place: Place,
    object: &Map<String, Value>,
    source: &str,
) {
    for key in place.unknown(object) {
        for capability in Capability::ALL {
            unmodeled(runs, capability, source, super::unknown_key(place, key));
        }
    }
}

/// `PreToolUse`, `preToolUse` or `pre_tool_use` as `pre_tool_use`.
pub(crate) fn snake_case(key: &str) -> String {
    let mut snake = String::with_capacity(key.len() + 4);
    let mut previous_lower = false;
    for c in key.chars() {
        if c.is_uppercase() && previous_lower {
            snake.push('_');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        snake.extend(c.to_lowercase());
    }
    snake
}

/// A JSON value as text: a string as it is, anything else as JSON.
pub(super) fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(super) fn raw(value: &Value) -> String {
    canonical_json(value).to_string()
}
