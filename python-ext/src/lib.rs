//! `berth._native`: the plugin set of a lock, built inside the Python process that asks for
//! it. `berth.openhands` calls [`plugin_set`] instead of running `berth plugins show --json`
//! and parsing its output: the same runtime code reads the same lock and store, and the
//! document is handed over as Python objects (no process, no JSON text).
//!
//! It reads; it never fetches, writes a lock or runs anything. A lock governed by a policy
//! file is left to the binary (see [`plugin_set`]).
//!
//! # Where things are
//!
//! The extension `berth._native` (PyO3, the stable ABI of CPython 3.10): a lock's plugin
//! set built in the calling Python process and handed over as Python objects, for
//! `berth.openhands`.
//!
//! It uses schema, store, runtime; it must not fetch, write, run anything, or enforce a
//! policy (a lock with a policy file beside it is left to the binary).

mod document;

use std::path::{Path, PathBuf};

use berth_lockfile_schema::governance::POLICY_FILE;
use berth_runtime::{BuildOptions, PluginSet, build_plugin_set};
use berth_store::Store;
use pyo3::exceptions::PyRuntimeError;
use pyo3::types::{PyModule, PyModuleMethods};
use pyo3::{Bound, PyAny, PyResult, Python, pyfunction, pymodule, wrap_pyfunction};
use serde_json::Value;

/// `berth plugins --lockfile LOCKFILE show --json` with no skill limit, as Python objects
/// (dicts, lists, strings, numbers, `None`), equal to what `json.loads` makes of the
/// binary's output. `store` is the store folder (default: `BERTH_STORE`, else
/// `$XDG_CACHE_HOME/berth`, else `~/.cache/berth`, as the binary picks it).
///
/// Returns `None` when a policy file (`berth-policy.toml`) sits next to the lock: the
/// binary enforces it (its `extends` may name URLs, which only the resolver fetches), so
/// the caller runs the binary instead; and when a plugin's store entry was never scanned
/// clean, which the binary scans (and refuses, or remembers) under berth's defaults. Raises `PluginError` with the binary's message for
/// a missing or invalid lock and for a plugin missing from the store or changed in it.
#[pyfunction]
#[pyo3(signature = (lockfile, store=None))]
fn plugin_set<'py>(
    py: Python<'py>,
    lockfile: PathBuf,
    store: Option<PathBuf>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let built = py.detach(|| build(&lockfile, store));
    match built {
        Ok(Some((doc, set))) => Ok(Some(document::to_python(py, &doc, &set)?)),
        Ok(None) => Ok(None),
        Err(message) => Err(PyRuntimeError::new_err(message)),
    }
}

/// The set's document without its hooks and MCP servers, and the set they are made from
/// (see [`document`]); or `None` when the binary must decide (a policy file, or an entry
/// never scanned clean).
fn build(lockfile: &Path, store: Option<PathBuf>) -> Result<Option<(Value, PluginSet)>, String> {
    let dir = lockfile.parent().unwrap_or(Path::new("."));
    if dir.join(POLICY_FILE).exists() {
        return Ok(None);
    }
    let label = lockfile.display().to_string();
    let text = match std::fs::read_to_string(lockfile) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "there is no lockfile at `{label}`; run `berth plugins lock` to create it"
            ));
        }
        Err(e) => return Err(format!("could not read `{label}`: {e}")),
    };
    let lock = berth_lockfile_schema::parse_lock(&label, &text).map_err(|e| e.to_string())?;
    let root = match store {
        Some(root) => root,
        None => berth_store::default_root(std::env::var_os("HOME").map(PathBuf::from).as_deref())
            .ok_or("cannot find a store folder: set `BERTH_STORE` or pass `store=`")?,
    };
    let options = BuildOptions {
        max_skills: None,
        ..BuildOptions::default()
    };
    let store = Store::new(root);
    let mut set = build_plugin_set(&store, &lock, &options).map_err(|e| e.to_string())?;
    // berth's defaults refuse hidden characters: a plugin never scanned clean (one a
    // `sync` refused, or from an older berth) is left to the binary, which scans it.
    if set
        .plugins
        .iter()
        .any(|p| !berth_review::scanned_clean(&store, &p.locked))
    {
        return Ok(None);
    }
    // Hooks and MCP servers become Python objects straight from the set (`document`).
    let hooks = std::mem::take(&mut set.hooks);
    let servers = std::mem::take(&mut set.mcp_servers);
    let doc = set.to_json_value();
    set.hooks = hooks;
    set.mcp_servers = servers;
    Ok(Some((doc, set)))
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(plugin_set, module)?)?;
    module.add("POLICY_FILE", POLICY_FILE)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
