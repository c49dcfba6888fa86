//! The layers of ARCHITECTURE.md, held by a test: the crates depend on each other only in
//! the direction the table below allows, no two modules of a crate use each other (at any
//! depth: the top-level modules of a crate, the children of a module folder), no source
//! file grows past 500 lines (its unit tests included) and no function past 80, and the
//! claims ARCHITECTURE.md makes about where things are (one section per crate, the paths
//! it names, where a source kind, a harness target and a policy capability are named) and
//! the resolver's layer order in its `lib.rs` hold of the code; `scripts/house.py` keeps
//! each crate under a fifth of the house.
//!
//! The module graph is read from the source text, the way `cargo modules dependencies
//! --acyclic` would draw it: an edge for every `use` and every `crate::`, `super::` or
//! `self::` path, a name the crate root re-exports counted at the module that defines it,
//! and a test module left out (tests may use anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which berth crates each crate may depend on: a crate only uses those below it.
const ALLOWED: &[(&str, &[&str])] = &[
    // No code: the features the tests' build turns on (tests/it/one_build.rs).
    ("berth-workspace-hack", &[]),
    // No berth code: a Sigstore made at test time, a dev-dependency only.
    ("berth-sigstore-testkit", &[]),
    ("berth-lockfile-schema", &[]),
    // No berth code: Sigstore bundles verified offline.
    ("berth-provenance", &[]),
    ("berth-store", &["berth-lockfile-schema"]),
    ("berth-uv", &[]),
    ("berth-transport", &["berth-lockfile-schema", "berth-store"]),
    (
        "berth-resolver",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-uv",
            "berth-transport",
            "berth-provenance",
        ],
    ),
    // The plugin reader: a store entry read once, every harness's reading of it.
    ("berth-plugin", &["berth-lockfile-schema", "berth-store"]),
    (
        "berth-runtime",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-uv",
            "berth-plugin",
        ],
    ),
    // The review and the harness targets: siblings over the set, neither using the other.
    (
        "berth-review",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-plugin",
            "berth-runtime",
        ],
    ),
    (
        "berth-harness",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-plugin",
            "berth-runtime",
        ],
    ),
    (
        "berth-server",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-transport",
            "berth-resolver",
            "berth-plugin",
            "berth-runtime",
            "berth-review",
        ],
    ),
    // The Python extension reads a lock's plugin set: what the runtime reads, nothing
    // that fetches.
    (
        "berth-python",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-runtime",
            "berth-review",
            "berth-workspace-hack",
        ],
    ),
    (
        "berth",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-transport",
            "berth-resolver",
            "berth-plugin",
            "berth-runtime",
            "berth-review",
            "berth-harness",
            "berth-server",
            "berth-workspace-hack",
        ],
    ),
];

/// The most lines a source file may have, its unit tests' module included (tests that do
/// not fit go to a sibling `tests.rs`).
const MAX_FILE_LINES: usize = 500;

/// The most lines a function of a crate's `src/` may span, signature to closing brace.
const MAX_FUNCTION_LINES: usize = 80;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the CLI crate is in the workspace")
        .to_owned()
}

/// The workspace's member folders, from its `Cargo.toml`.
fn members() -> Vec<PathBuf> {
    let root = workspace();
    let text = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let manifest: toml::Table = text.parse().expect("Cargo.toml parses");
    manifest["workspace"]["members"]
        .as_array()
        .expect("members is a list")
        .iter()
        .map(|m| root.join(m.as_str().expect("a member is a path")))
        .collect()
}

#[test]
fn crates_depend_only_on_the_crates_below_them() {
    let mut seen = Vec::new();
    for member in members() {
        let text = std::fs::read_to_string(member.join("Cargo.toml")).expect("read Cargo.toml");
        let manifest: toml::Table = text.parse().expect("a member's Cargo.toml parses");
        let name = manifest["package"]["name"].as_str().expect("a name");
        let allowed = ALLOWED
            .iter()
            .find(|(crate_name, _)| *crate_name == name)
            .unwrap_or_else(|| {
                panic!("`{name}` is not in this test's table of layers: add it where it belongs")
            })
            .1;
        let deps = manifest
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|d| d.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        for dep in deps.iter().filter(|d| d.starts_with("berth")) {
            assert!(
                allowed.contains(&dep.as_str()),
                "`{name}` depends on `{dep}`, which is not below it (allowed: {allowed:?})"
            );
        }
        seen.push(name.to_owned());
    }
    assert_eq!(
        seen.len(),
        ALLOWED.len(),
        "every crate was checked: {seen:?}"
    );
}

#[test]
fn no_two_modules_of_a_crate_use_each_other() {
    let mut problems = Vec::new();
    let mut modules_seen = 0;
    for member in members() {
        let graph = ModuleGraph::read(&member.join("src"));
        modules_seen += graph.files.len();
        for (parent, cycle, why) in graph.cycles() {
            problems.push(format!(
                "{}: under `{parent}`, these modules use each other: {}\n{}",
                member.display(),
                cycle.join(" -> "),
                why.join("\n")
            ));
        }
    }
    assert!(
        modules_seen > 100,
        "the sources were read: {modules_seen} modules"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_check_finds_a_cycle_where_there_is_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("b")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use b::Thing;\n").expect("write");
    std::fs::write(src.join("a.rs"), "use crate::Thing;\npub struct Other;\n").expect("write");
    std::fs::write(
        src.join("b/mod.rs"),
        "mod inner;\npub use inner::Thing;\nfn f() -> crate::a::Other { todo!() }\n",
    )
    .expect("write");
    std::fs::write(src.join("b/inner.rs"), "pub struct Thing;\n").expect("write");
    let cycles = ModuleGraph::read(src).cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].0, "crate");
    assert_eq!(cycles[0].1, ["a", "b", "a"]);
    // Without the edge back, no cycle.
    std::fs::write(src.join("a.rs"), "pub struct Other;\n").expect("write");
    assert!(ModuleGraph::read(src).cycles().is_empty());
}

#[test]
fn no_source_file_has_more_than_500_lines() {
    let files = source_files();
    assert!(files.len() > 100, "the sources were found: {}", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("read a source file");
            let lines = text.lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these along a seam, or move their unit tests to a sibling `tests.rs` (at most {MAX_FILE_LINES} lines):\n{}",
        long.join("\n")
    );
}

#[test]
fn no_function_has_more_than_80_lines() {
    let mut long = Vec::new();
    let mut functions = 0;
    for file in source_files() {
        let text = std::fs::read_to_string(&file).expect("read a source file");
        functions += text.matches("fn ").count();
        for (name, line, lines) in long_functions(&text) {
            long.push(format!(
                "{}:{line}: `{name}` has {lines} lines",
                file.display()
            ));
        }
    }
    assert!(functions > 1000, "the functions were read: {functions}");
    assert!(
        long.is_empty(),
        "split these into named steps (at most {MAX_FUNCTION_LINES} lines each):\n{}",
        long.join("\n")
    );
}

/// The functions of `text` before its test module that span more than
/// [`MAX_FUNCTION_LINES`]: name, first line (from 1), lines. A function starts at a line
/// whose code begins with `fn` (after `pub`, `pub(…)`, `const`, `async`, `unsafe`) and
/// ends at the first later line that is its indentation and `}`, as rustfmt lays it out.
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = code_lines(text);
    let mut out = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let mut rest = code;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(signature) = rest.strip_prefix("fn ") else {
            continue;
        };
        if code.ends_with('}') || code.ends_with(';') {
            continue;
        }
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let closing = format!("{indent}}}");
        if let Some(last) = (i + 1..end).find(|j| lines[*j] == closing) {
            let span = last - i + 1;
            if span > MAX_FUNCTION_LINES {
                out.push((name, i + 1, span));
            }
        }
    }
    out
}

#[test]
fn long_functions_are_found_by_their_closing_brace() {
    let body = "    x();\n".repeat(MAX_FUNCTION_LINES);
    let text = format!(
        "pub(crate) fn short() {{}}\nfn long(\n    a: u8,\n) {{\n{body}}}\nimpl A {{\n    pub fn fits() {{\n        y();\n    }}\n}}\n#[cfg(test)]\nmod tests {{\n    fn test_long() {{\n{body}    }}\n}}\n"
    );
    assert_eq!(
        long_functions(&text),
        [("long".to_owned(), 2, MAX_FUNCTION_LINES + 4)]
    );
}

/// Every `.rs` file under a workspace member's `src/`.
fn source_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for member in members() {
        rust_files(&member.join("src"), &mut files);
    }
    files
}

/// The lines of `text` before its test module.
fn code_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].starts_with("mod tests"))
        .unwrap_or(lines.len())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A module: its path below the crate root (empty: the root).
type Module = Vec<String>;

struct ModuleGraph {
    /// Every module of the crate and the code of its file (test modules left out).
    files: BTreeMap<Module, (PathBuf, String)>,
    /// Names the crate root re-exports, and the path each stands for.
    root_exports: BTreeMap<String, Vec<String>>,
}

impl ModuleGraph {
    fn read(src: &Path) -> Self {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        let mut files = BTreeMap::new();
        for path in paths {
            let rel = path.strip_prefix(src).expect("under src");
            let mut module: Module = rel
                .with_extension("")
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("lib" | "main" | "mod")
            ) {
                module.pop();
            }
            // A file of tests (`#[cfg(test)] mod tests;`) may use anything.
            if module.last().is_some_and(|m| m == "tests") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read a source file");
            files.insert(module, (path, code_of(&text)));
        }
        let mut graph = Self {
            files,
            root_exports: BTreeMap::new(),
        };
        let root_code = graph
            .files
            .get(&Vec::new())
            .map(|(_, code)| code.clone())
            .unwrap_or_default();
        for (_, path, alias) in use_paths(&root_code) {
            let path = match path.first().map(String::as_str) {
                Some("crate" | "self") => path[1..].to_vec(),
                _ => path,
            };
            if path
                .first()
                .is_some_and(|first| graph.files.contains_key(&vec![first.clone()]))
            {
                graph.root_exports.insert(alias, path);
            }
        }
        graph
    }

    /// The longest module prefix of `path` (following the root's re-exports).
    fn module_of(&self, path: &[String]) -> Module {
        let mut path = path.to_vec();
        if let Some(first) = path.first()
            && !self.files.contains_key(&vec![first.clone()])
            && let Some(target) = self.root_exports.get(first)
        {
            path = [target.clone(), path[1..].to_vec()].concat();
        }
        let mut module = Vec::new();
        for segment in path {
            module.push(segment);
            if !self.files.contains_key(&module) {
                module.pop();
                break;
            }
        }
        module
    }

    /// For every module folder (the crate root included): the edges between its children,
    /// each with the line that makes it.
    fn edges(&self) -> BTreeMap<Module, BTreeMap<(String, String), String>> {
        let mut levels: BTreeMap<Module, BTreeMap<(String, String), String>> = BTreeMap::new();
        for (module, (file, code)) in &self.files {
            let mut refs: Vec<Vec<String>> = use_paths(code)
                .into_iter()
                // The root's own `pub use`s are its public face, not a dependency.
                .filter(|(public, _, _)| !(module.is_empty() && *public))
                .map(|(_, path, _)| path)
                .collect();
            refs.extend(qualified_paths(code));
            for path in refs.into_iter().filter(|p| !p.is_empty()) {
                let target: Vec<String> = match path[0].as_str() {
                    "crate" => path[1..].to_vec(),
                    "super" => {
                        let ups = path.iter().take_while(|s| *s == "super").count();
                        let base = &module[..module.len().saturating_sub(ups)];
                        [base, &path[ups..]].concat()
                    }
                    "self" => [module.as_slice(), &path[1..]].concat(),
                    _ => {
                        let child = [module.clone(), vec![path[0].clone()]].concat();
                        if !self.files.contains_key(&child) {
                            continue;
                        }
                        [module.as_slice(), &path[..]].concat()
                    }
                };
                let target = self.module_of(&target);
                let common = module
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                if common < module.len() && common < target.len() {
                    levels
                        .entry(module[..common].to_vec())
                        .or_default()
                        .entry((module[common].clone(), target[common].clone()))
                        .or_insert_with(|| format!("  {}: {}", file.display(), path.join("::")));
                }
            }
        }
        levels
    }

    /// Each cycle: the folder it is under, the modules in order (the first repeated last),
    /// and the lines that make its edges.
    fn cycles(&self) -> Vec<(String, Vec<String>, Vec<String>)> {
        let mut found = Vec::new();
        for (parent, edges) in self.edges() {
            let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            for (from, to) in edges.keys() {
                next.entry(from).or_default().insert(to);
            }
            let mut reported: BTreeSet<BTreeSet<&str>> = BTreeSet::new();
            for start in next.keys() {
                if let Some(cycle) = path_back(&next, start) {
                    let members: BTreeSet<&str> = cycle.iter().copied().collect();
                    if reported.insert(members) {
                        let why = cycle
                            .windows(2)
                            .map(|w| edges[&(w[0].to_owned(), w[1].to_owned())].clone())
                            .collect();
                        let name = if parent.is_empty() {
                            "crate".to_owned()
                        } else {
                            parent.join("::")
                        };
                        found.push((name, cycle.iter().map(|s| s.to_string()).collect(), why));
                    }
                }
            }
        }
        found
    }
}

/// A shortest path from `start` back to itself, if there is one.
fn path_back<'a>(
    next: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    start: &'a str,
) -> Option<Vec<&'a str>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for &to in next.get(at).into_iter().flatten() {
            if to == start {
                let mut path = vec![start];
                let mut back = at;
                while back != start {
                    path.push(back);
                    back = came_from[back];
                }
                path.push(start);
                let last = path.len() - 1;
                path[1..last].reverse();
                return Some(path);
            }
            if !came_from.contains_key(to) {
                came_from.insert(to, at);
                queue.push_back(to);
            }
        }
    }
    None
}

/// A file's code: its test module and its comments left out.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].starts_with("mod tests"))
        .unwrap_or(lines.len());
    let code = lines[..end]
        .iter()
        .filter(|l| !l.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    without_strings(&code)
}

/// `code` with the text of its string literals removed (a message may say "use https;").
fn without_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(['"', '\'']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("'\"'") {
            rest = after;
            continue;
        }
        if let Some(after) = tail.strip_prefix('\'') {
            out.push('\'');
            rest = after;
            continue;
        }
        // A raw string `r#"…"#` ends at its own closing quote and hashes.
        let hashes = out.len() - out.trim_end_matches('#').len();
        let raw = out[..out.len() - hashes].ends_with('r');
        let body = &tail[1..];
        let end = if raw {
            let close = format!("\"{}", "#".repeat(hashes));
            body.find(&close).map(|e| e + close.len())
        } else {
            let mut escaped = false;
            body.char_indices()
                .find(|&(_, c)| {
                    let done = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    done
                })
                .map(|(e, _)| e + 1)
        };
        out.push_str("\"\"");
        rest = end.map_or("", |e| &body[e..]);
    }
    out.push_str(rest);
    out
}

/// Every path a `use` item names: whether the `use` is `pub`, the path, and the name it
/// brings in.
fn use_paths(code: &str) -> Vec<(bool, Vec<String>, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        let tree: String = after[..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for (path, alias) in expand(&tree) {
            out.push((public, path, alias));
        }
        rest = &after[end + 1..];
    }
    out
}

/// The paths of a use tree such as `crate::a::{b, c::{D, E as F}}`, each with the name it
/// brings in.
fn expand(tree: &str) -> Vec<(Vec<String>, String)> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let (path, alias) = match tree.split_once(" as ") {
            Some((path, alias)) => (path.trim(), alias.trim().to_owned()),
            None => (tree, tree.rsplit("::").next().unwrap_or(tree).to_owned()),
        };
        let segments = path
            .split("::")
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        return vec![(segments, alias)];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|(path, alias)| {
            let path = if path == ["self"] {
                prefix.clone()
            } else {
                [prefix.clone(), path].concat()
            };
            (path, alias)
        })
        .collect()
}

/// Every `crate::…`, `super::…` and `self::…` path in code.
fn qualified_paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| at + e);
            let path: Vec<String> = code[at..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            if path.len() > 1 {
                out.push(path);
            }
        }
    }
    out
}

/// Where `word` starts in `text` as a whole word, if it does.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let before_ok =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let after = at + word.len();
        let after_ok = bytes.get(after).is_some_and(|b| b.is_ascii_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = after;
    }
    None
}

// ARCHITECTURE.md's claims, read against the code.

/// ARCHITECTURE.md's text.
fn architecture() -> String {
    std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md")
}

/// A member's package name.
fn package_name(member: &Path) -> String {
    let text = std::fs::read_to_string(member.join("Cargo.toml")).expect("read Cargo.toml");
    let manifest: toml::Table = text.parse().expect("a member's Cargo.toml parses");
    manifest["package"]["name"]
        .as_str()
        .expect("a name")
        .to_owned()
}

#[test]
fn the_crate_table_of_architecture_md_is_the_workspace() {
    // One section per crate, headed "### `NAME` (`FOLDER/`)".
    let table: BTreeSet<(String, String)> = architecture()
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("### `")?;
            let (name, rest) = rest.split_once("` (`")?;
            let path = rest.strip_suffix("/`)")?;
            name.starts_with("berth")
                .then(|| (name.to_owned(), path.to_owned()))
        })
        .collect();
    let workspace: BTreeSet<(String, String)> = members()
        .iter()
        .map(|member| {
            let folder = member.file_name().expect("a folder").to_string_lossy();
            (package_name(member), folder.into_owned())
        })
        .collect();
    assert_eq!(
        table, workspace,
        "ARCHITECTURE.md's crate sections and the workspace differ"
    );
}

#[test]
fn each_module_of_the_resolver_uses_only_those_its_layers_list_before_it() {
    let lib = std::fs::read_to_string(workspace().join("resolver/src/lib.rs"))
        .expect("read resolver/src/lib.rs");
    let text: String = lib
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    let section = text
        .split("\n# Layers\n")
        .nth(1)
        .and_then(|rest| rest.split("\n# ").next())
        .expect("resolver/src/lib.rs's docs have the resolver's layers");
    let graph = ModuleGraph::read(&workspace().join("resolver/src"));
    let top: BTreeSet<&str> = graph
        .files
        .keys()
        .filter(|m| m.len() == 1)
        .map(|m| m[0].as_str())
        .collect();
    // Each top-level module's layer: the numbered item that first names its file or
    // folder (`error/`, `meta.rs`).
    let mut layer: BTreeMap<&str, usize> = BTreeMap::new();
    let mut item = 0;
    for line in section.lines() {
        if line
            .split_once(". ")
            .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        {
            item += 1;
        }
        for (i, quoted) in line.split('`').enumerate() {
            let name = quoted
                .strip_suffix('/')
                .or_else(|| quoted.strip_suffix(".rs"))
                .unwrap_or("");
            if i % 2 == 1 && item > 0 && top.contains(name) {
                layer
                    .entry(*top.get(name).expect("a module"))
                    .or_insert(item);
            }
        }
    }
    let unlisted: Vec<&&str> = top.iter().filter(|m| !layer.contains_key(*m)).collect();
    assert!(
        unlisted.is_empty(),
        "not in the resolver's layers: {unlisted:?}"
    );
    let edges = graph.edges();
    let root = edges
        .get(&Vec::new())
        .expect("the resolver's modules use each other");
    let upward: Vec<String> = root
        .iter()
        .filter(|((from, to), _)| layer[to.as_str()] > layer[from.as_str()])
        .map(|((from, to), why)| format!("`{from}` uses `{to}`, listed after it:\n{why}"))
        .collect();
    assert!(upward.is_empty(), "{}", upward.join("\n"));
    assert!(root.len() > 10, "the edges were read: {}", root.len());
}

/// The variants of `pub enum NAME` in `file`, as rustfmt lays it out.
fn variants(file: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(workspace().join(file)).expect("read a source file");
    let body = text
        .split(&format!("pub enum {name} {{\n"))
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .unwrap_or_else(|| panic!("`{file}` defines `{name}`"));
    body.lines()
        .filter_map(|line| line.strip_prefix("    "))
        .filter(|line| line.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|line| {
            line.chars()
                .take_while(|c| c.is_alphanumeric())
                .collect::<String>()
        })
        .collect()
}

/// The files (below the workspace, test modules and files left out) whose code names
/// every variant of `enum_name`, as `enum_name::Variant`.
fn files_naming_every(enum_name: &str, variants: &[String]) -> BTreeSet<String> {
    let root = workspace();
    source_files()
        .into_iter()
        .filter(|file| !file.ends_with("tests.rs"))
        .filter(|file| {
            let code = code_of(&std::fs::read_to_string(file).expect("read a source file"));
            variants.iter().all(|v| {
                let path = format!("{enum_name}::{v}");
                code.match_indices(&path).any(|(at, _)| {
                    !code[at + path.len()..].starts_with(|c: char| c.is_alphanumeric())
                })
            })
        })
        .map(|file| {
            let rel = file.strip_prefix(&root).expect("under the workspace");
            rel.to_string_lossy().into_owned()
        })
        .collect()
}

#[test]
fn a_source_kind_is_listed_only_in_the_three_files_architecture_md_names() {
    // A file listing every kind (an exhaustive match) would have to change with a new one.
    let allowed = [
        "lockfile-schema/src/source.rs",
        "resolver/src/sources/mod.rs",
    ];
    for enum_name in ["Source", "Pin"] {
        let kinds = variants("lockfile-schema/src/source.rs", enum_name);
        assert!(kinds.len() >= 3, "`{enum_name}` was read: {kinds:?}");
        let listing = files_naming_every(enum_name, &kinds);
        let elsewhere: Vec<&String> = listing
            .iter()
            .filter(|f| !allowed.contains(&f.as_str()))
            .collect();
        assert!(
            elsewhere.is_empty(),
            "these list every `{enum_name}` kind, so a new kind would touch them: {elsewhere:?}"
        );
        assert!(
            listing.contains("lockfile-schema/src/source.rs"),
            "the check finds a listing where there is one: {listing:?}"
        );
    }
    // The operations reach a kind only through the sources' traits.
    let mut ops = Vec::new();
    rust_files(&workspace().join("resolver/src/ops"), &mut ops);
    for file in ops.iter().filter(|f| !f.ends_with("tests.rs")) {
        let code = code_of(&std::fs::read_to_string(file).expect("read a source file"));
        for enum_name in ["Source", "Pin", "SourceKind"] {
            for kind in variants("lockfile-schema/src/source.rs", enum_name) {
                let path = format!("{enum_name}::{kind}");
                assert!(
                    !code.match_indices(&path).any(|(at, _)| {
                        !code[at + path.len()..].starts_with(|c: char| c.is_alphanumeric())
                    }),
                    "{} names `{path}`: an operation never matches a source kind",
                    file.display()
                );
            }
        }
    }
    assert!(ops.len() > 5, "the operations were read: {ops:?}");
}

#[test]
fn a_policy_capability_is_listed_only_where_architecture_md_says() {
    let capabilities = variants("lockfile-schema/src/governance/file.rs", "Capability");
    assert!(capabilities.len() >= 4, "read: {capabilities:?}");
    let listing = files_naming_every("Capability", &capabilities);
    // Its variant and key, its question on the surface, and what makes a surface hold it
    // (something a harness runs, or a file).
    let elsewhere: Vec<&String> = listing
        .iter()
        .filter(|f| {
            !matches!(
                f.as_str(),
                "lockfile-schema/src/governance/file.rs" | "review/src/shape.rs"
            ) && !f.starts_with("plugin/src/runs/")
                && !f.starts_with("review/src/surface/")
        })
        .collect();
    assert!(
        elsewhere.is_empty(),
        "these list every capability, so a new one would touch them; loop over \
         `Capability::ALL` instead: {elsewhere:?}"
    );
    assert!(
        listing.contains("review/src/shape.rs"),
        "the check finds a listing where there is one: {listing:?}"
    );
}

#[test]
fn a_harness_target_is_one_module_and_one_row_of_targets() {
    let folder = workspace().join("harness/src");
    let table = std::fs::read_to_string(folder.join("lib.rs")).expect("read harness/src/lib.rs");
    // The table, from its first line to its end (rustfmt may break it across lines).
    let row = table
        .split("\npub static TARGETS")
        .nth(1)
        .and_then(|rest| rest.split("];").next())
        .expect("harness/src/lib.rs has TARGETS");
    let mut targets = Vec::new();
    for entry in std::fs::read_dir(&folder).expect("read the harness folder") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("read a harness file");
        for implementation in text.split("impl Harness for ").skip(1) {
            let name: String = implementation
                .chars()
                .take_while(|c| c.is_alphanumeric())
                .collect();
            let module = path.file_stem().expect("a name").to_string_lossy();
            assert!(
                table.contains(&format!("\nmod {module};")),
                "`{module}` is a module of harness/"
            );
            assert!(
                row.contains(&format!("&{name}")),
                "`{name}` is a row of TARGETS"
            );
            targets.push((name, text.clone()));
        }
    }
    assert_eq!(
        targets.len(),
        row.matches('&').count() - 1,
        "every row of TARGETS is one `impl Harness`: {row}"
    );
    // Nothing outside the folder names a target: the CLI's names come from the table.
    for file in source_files()
        .iter()
        .filter(|f| !f.starts_with(&folder) && !f.ends_with("tests.rs"))
    {
        let code = without_strings(&code_of(
            &std::fs::read_to_string(file).expect("read a source file"),
        ));
        for (name, _) in &targets {
            assert!(
                find_word(&code, name).is_none(),
                "{} names the target `{name}`; reach it through `harness::TARGETS`",
                file.display()
            );
        }
    }
    for (name, text) in &targets {
        let id = text
            .split("fn id(&self) -> &'static str {")
            .nth(1)
            .and_then(|rest| rest.split('"').nth(1))
            .unwrap_or_else(|| panic!("`{name}` has an id"));
        for file in source_files()
            .iter()
            .filter(|f| f.starts_with(workspace().join("cli/src")))
        {
            let code = code_of(&std::fs::read_to_string(file).expect("read a source file"));
            assert!(
                !code.contains(&format!("\"{id}\"")),
                "{} names the target `{id}` as a string; take it from `harness::TARGETS`",
                file.display()
            );
        }
    }
}

#[test]
fn no_crate_holds_more_than_a_fifth_of_the_house_and_few_arrows_run_back_up() {
    // scripts/house.py counts; it exits 1 when a crate passes either limit.
    let out = std::process::Command::new("python3")
        .arg(workspace().join("scripts/house.py"))
        .arg(workspace())
        .output()
        .expect("run python3 scripts/house.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for member in members() {
        let name = package_name(&member);
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(&name)),
            "house.py measured `{name}`: {text}"
        );
    }
}

#[test]
fn every_path_architecture_md_names_exists() {
    let text = architecture();
    let mut named = 0;
    for (i, quoted) in text.split('`').enumerate() {
        let looks_like_path = quoted.trim_end_matches('/').contains('/')
            && !quoted.contains(' ')
            && !quoted.contains('<')
            && !quoted.contains(|c: char| c.is_ascii_uppercase())
            && (quoted.ends_with(".rs") || quoted.ends_with(".toml") || quoted.ends_with('/'));
        if i % 2 == 1 && looks_like_path {
            named += 1;
            assert!(
                workspace().join(quoted).exists(),
                "ARCHITECTURE.md names `{quoted}`, which is not in the repository"
            );
        }
    }
    assert!(named > 20, "the paths were read: {named}");
}
