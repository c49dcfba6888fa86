//! The layers of ARCHITECTURE.md, held by a test: the crates depend on each other only in
//! the direction the table below allows, no two modules of a crate use each other (at any
//! depth: the top-level modules of a crate, the children of a module folder), and no
//! source file grows past 500 lines of code before its tests.
//!
//! The module graph is read from the source text, the way `cargo modules dependencies
//! --acyclic` would draw it: an edge for every `use` and every `crate::`, `super::` or
//! `self::` path, a name the crate root re-exports counted at the module that defines it,
//! and a test module left out (tests may use anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which berth crates each crate may depend on: a crate only uses those below it.
const ALLOWED: &[(&str, &[&str])] = &[
    ("berth-lockfile-schema", &[]),
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
        ],
    ),
    (
        "berth-runtime",
        &["berth-lockfile-schema", "berth-store", "berth-uv"],
    ),
    (
        "berth-server",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-transport",
            "berth-resolver",
            "berth-runtime",
        ],
    ),
    // The Python extension reads a lock's plugin set: what the runtime reads, nothing
    // that fetches.
    (
        "berth-python",
        &["berth-lockfile-schema", "berth-store", "berth-runtime"],
    ),
    (
        "berth",
        &[
            "berth-lockfile-schema",
            "berth-store",
            "berth-transport",
            "berth-resolver",
            "berth-runtime",
            "berth-server",
        ],
    ),
];

/// The most lines of code a source file may have before its `#[cfg(test)] mod tests`.
const MAX_CODE_LINES: usize = 500;

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
fn no_source_file_has_more_than_500_lines_of_code() {
    let mut files = Vec::new();
    for member in members() {
        rust_files(&member.join("src"), &mut files);
    }
    assert!(files.len() > 100, "the sources were found: {}", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("read a source file");
            let code = code_lines(&text);
            (code > MAX_CODE_LINES).then(|| format!("{}: {code} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these along a seam (at most {MAX_CODE_LINES} lines before the tests):\n{}",
        long.join("\n")
    );
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
