//! The plugin set's document as Python objects, equal to what `json.loads` makes of
//! `berth plugins show --json` (and in the same key order).
//!
//! Most of the document goes through its JSON value ([`PluginSet::to_json_value`]); its
//! hooks and MCP servers, which are most of a hook-heavy set, are made into Python objects
//! straight from the runtime's values, with the keys and the order that
//! `matchers_to_json` and `McpServer::to_json` write: no JSON value is built, copied and
//! dropped for them.

use std::collections::HashMap;

use berth_runtime::PluginSet;
use pyo3::types::{PyBool, PyDict, PyList, PyString};
use pyo3::types::{PyDictMethods, PyListMethods};
use pyo3::{Bound, IntoPyObject, PyAny, PyResult, Python};
use serde_json::{Map, Value};

/// `doc` (the set's JSON value without hooks and MCP servers) as Python objects, with the
/// hooks and MCP servers of `set` put in their places.
pub(crate) fn to_python<'py>(
    py: Python<'py>,
    doc: &Value,
    set: &PluginSet,
) -> PyResult<Bound<'py, PyAny>> {
    let mut converter = Converter {
        py,
        keys: HashMap::new(),
    };
    let converted = converter.convert(doc)?;
    if let Ok(dict) = converted.cast::<PyDict>() {
        // The keys are in the document already (empty): setting them keeps their place.
        dict.set_item(converter.key("mcp_servers"), converter.servers(set)?)?;
        dict.set_item(converter.key("hooks"), converter.hooks(set)?)?;
    }
    Ok(converted)
}

/// Converts a document, making each distinct object key (and each hook's `type`, each
/// server's `type`) once.
struct Converter<'py, 'v> {
    py: Python<'py>,
    keys: HashMap<&'v str, Bound<'py, PyString>>,
}

impl<'py, 'v> Converter<'py, 'v> {
    fn key(&mut self, key: &'v str) -> Bound<'py, PyString> {
        let py = self.py;
        self.keys
            .entry(key)
            .or_insert_with(|| PyString::new(py, key))
            .clone()
    }

    fn convert(&mut self, value: &'v Value) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match value {
            Value::Null => py.None().into_bound(py),
            Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => i.into_pyobject(py)?.into_any(),
                (None, Some(u)) => u.into_pyobject(py)?.into_any(),
                (None, None) => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
            },
            Value::String(s) => PyString::new(py, s).into_any(),
            Value::Array(items) => {
                let items = items
                    .iter()
                    .map(|item| self.convert(item))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)?.into_any()
            }
            Value::Object(map) => self.object(map)?.into_any(),
        })
    }

    fn object(&mut self, map: &'v Map<String, Value>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(self.py);
        for (key, item) in map {
            let item = self.convert(item)?;
            dict.set_item(self.key(key), item)?;
        }
        Ok(dict)
    }

    /// `hooks`: per event, its matchers, as `matchers_to_json` writes them (each with its
    /// plugin).
    fn hooks(&mut self, set: &'v PluginSet) -> PyResult<Bound<'py, PyDict>> {
        let py = self.py;
        let events = PyDict::new(py);
        for (event, matchers) in &set.hooks {
            let list = PyList::empty(py);
            for (matcher, plugin) in matchers {
                let hooks = PyList::empty(py);
                for h in &matcher.hooks {
                    let hook = PyDict::new(py);
                    hook.set_item(self.key("type"), self.key(&h.kind))?;
                    hook.set_item(self.key("command"), &h.command)?;
                    hook.set_item(self.key("timeout"), h.timeout)?;
                    hook.set_item(self.key("async"), h.is_async)?;
                    hook.set_item(self.key("name"), h.name.as_deref())?;
                    hook.set_item(self.key("prompt"), h.prompt.as_deref())?;
                    hook.set_item(self.key("system_prompt"), h.system_prompt.as_deref())?;
                    hook.set_item(self.key("tools"), PyList::new(py, &h.tools)?)?;
                    hook.set_item(self.key("max_iterations"), h.max_iterations)?;
                    hooks.append(hook)?;
                }
                let entry = PyDict::new(py);
                entry.set_item(self.key("matcher"), &matcher.matcher)?;
                entry.set_item(self.key("hooks"), hooks)?;
                entry.set_item(self.key("plugin"), plugin)?;
                list.append(entry)?;
            }
            events.set_item(self.key(event), list)?;
        }
        Ok(events)
    }

    /// `mcp_servers`: each server as `McpServer::to_json` writes it, then its plugin.
    fn servers(&mut self, set: &'v PluginSet) -> PyResult<Bound<'py, PyDict>> {
        let py = self.py;
        let servers = PyDict::new(py);
        for (name, s, plugin) in &set.mcp_servers {
            let server = PyDict::new(py);
            server.set_item(self.key("command"), s.command.as_deref())?;
            server.set_item(self.key("args"), PyList::new(py, &s.args)?)?;
            server.set_item(self.key("env"), self.object(&s.env)?)?;
            server.set_item(self.key("url"), s.url.as_deref())?;
            server.set_item(self.key("type"), self.key(&s.transport))?;
            server.set_item(self.key("cwd"), s.cwd.as_deref())?;
            server.set_item(self.key("headers"), self.object(&s.headers)?)?;
            server.set_item(self.key("description"), s.description.as_deref())?;
            server.set_item(self.key("icon"), s.icon.as_deref())?;
            server.set_item(self.key("timeout"), finite(s.timeout))?;
            server.set_item(self.key("sse_read_timeout"), finite(s.sse_read_timeout))?;
            server.set_item(self.key("keep_alive"), s.keep_alive)?;
            let auth = match &s.auth {
                Some(auth) => Some(self.object(auth)?),
                None => None,
            };
            server.set_item(self.key("auth"), auth)?;
            server.set_item(self.key("enabled"), s.enabled)?;
            server.set_item(self.key("literal"), s.literal)?;
            server.set_item(self.key("plugin"), plugin)?;
            servers.set_item(name, server)?;
        }
        Ok(servers)
    }
}

/// A number as JSON holds it: a value that is not finite is `null`.
fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}
