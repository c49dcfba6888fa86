//! What a sandboxed program sees of the host's files, all read-only: the system's runtime
//! folders, the program (found on the `PATH` it is given) with the installation it comes
//! from, the interpreters its `#!` line names (two levels), and the store entries its
//! command line names. Never the whole store, another plugin's entry, or a home folder.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use berth_store::{ENTRIES_DIR, ENVS_DIR, VIEWS_DIR};

use super::SandboxError;

/// The system's runtime folders, shown where they exist (a link, as `/bin -> usr/bin` on a
/// merged `/usr`, is made again inside as a link).
pub(super) const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// The files of `/etc` a program's runtime reads: the dynamic loader's cache and
/// configuration, Debian's alternatives (`/usr/bin/awk` leads there), the public CA
/// certificates and OpenSSL's configuration, and how names are looked up. Not the account
/// database (berth writes a two-line one), not `/etc/ssl/private`, not the time zone
/// (servers get UTC), not the host's name or resolver.
pub(super) const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/nsswitch.conf",
];

/// What the sandbox shows of the host beyond the system folders.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct View {
    /// Host paths shown read-only at the same place.
    pub read_only: Vec<PathBuf>,
    /// Links made inside: `(target, link)`.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// The program to execute, as found on `PATH` (or as given).
    pub program: PathBuf,
}

/// The places a program must not see all of: a home folder, the store, its own scratch.
#[derive(Debug, Clone, Copy)]
pub(super) struct Guard<'a> {
    pub home: Option<&'a Path>,
    /// The store's root as command lines name it...
    pub store_root: &'a Path,
    /// ...and with its links resolved, as a program's real path has it.
    pub store_canonical: &'a Path,
    pub scratch: &'a Path,
}

/// The view for `program` with `args`, found on `path` (a `PATH` value).
pub(super) fn plan(
    program: &str,
    args: &[String],
    path: &str,
    guard: Guard<'_>,
) -> Result<View, SandboxError> {
    let found = find_program(program, path).ok_or_else(|| SandboxError::Start {
        program: program.to_owned(),
        error: "not found on its `PATH`".to_owned(),
    })?;
    let mut view = View {
        program: found.clone(),
        ..View::default()
    };
    reveal(&mut view, &found, path, guard, 2);
    for word in std::iter::once(program).chain(args.iter().map(String::as_str)) {
        for candidate in path_words(word) {
            if candidate.starts_with(guard.store_root) {
                store_entry(&mut view, candidate, path, guard);
            }
        }
    }
    view.read_only.sort();
    view.read_only.dedup();
    view.links.sort();
    view.links.dedup();
    Ok(view)
}

/// The absolute paths a word holds: itself, or what follows its first `=` (`--x=/p`).
fn path_words(word: &str) -> impl Iterator<Item = &Path> {
    let after = word.split_once('=').map(|(_, v)| v);
    std::iter::once(word)
        .chain(after)
        .filter(|w| w.starts_with('/'))
        .map(Path::new)
}

/// `word` as `execvp` finds it: a word with a `/` as it is, else the first executable
/// file of that name in a folder of `path`.
pub(super) fn find_program(word: &str, path: &str) -> Option<PathBuf> {
    if word.contains('/') {
        let p = PathBuf::from(word);
        return is_executable(&p).then_some(p);
    }
    if word.is_empty() {
        return None;
    }
    path.split(':')
        .filter(|dir| dir.starts_with('/'))
        .map(|dir| Path::new(dir).join(word))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `path` is under a system folder, which the sandbox shows whole.
pub(super) fn in_system(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// Makes `found` (a program) visible inside, with its installation, and follows its `#!`
/// line `depth` more levels.
fn reveal(view: &mut View, found: &Path, path: &str, guard: Guard<'_>, depth: usize) {
    let Ok(canonical) = found.canonicalize() else {
        return;
    };
    if canonical.starts_with(guard.store_canonical) {
        store_entry(view, &canonical, path, guard);
    } else if !in_system(&canonical) {
        view.read_only.push(installation(&canonical, guard));
    }
    let shown = |p: &Path| in_system(p) || view.read_only.iter().any(|r| p.starts_with(r));
    if !shown(found) && found.is_absolute() {
        view.links.push((canonical.clone(), found.to_owned()));
    }
    if depth == 0 {
        return;
    }
    if let Some(interpreter) = interpreter(&canonical, path) {
        reveal(view, &interpreter, path, guard, depth - 1);
    }
}

/// The interpreter a script's `#!` line names: the path it gives, or for `env` (with or
/// without `-S`) the program it names, found on `path`.
pub(super) fn interpreter(script: &Path, path: &str) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if Path::new(first).file_name() != Some(OsStr::new("env")) {
        return Some(PathBuf::from(first));
    }
    let program = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    find_program(program, path)
}

/// The installation a program outside the system folders comes from, shown whole: the
/// folder above its `bin` (pyenv's `versions/3.11.7`, nvm's `versions/node/v20`, a
/// pyenv shim's root), or its own folder. Where that would be a home folder (one holding
/// `.ssh`, `.gnupg`, `.config` or `.aws`, or an ancestor of `HOME`), a `.local`, a folder with
/// the store or the scratch in it, or a top-level folder, only the program file is shown.
pub(super) fn installation(canonical: &Path, guard: Guard<'_>) -> PathBuf {
    let Some(dir) = canonical.parent() else {
        return canonical.to_owned();
    };
    let binary_dir = matches!(
        dir.file_name().and_then(OsStr::to_str),
        Some("bin" | "sbin" | "shims" | "libexec")
    );
    let prefix = match dir.parent() {
        Some(parent) if binary_dir => parent,
        _ => dir,
    };
    if too_wide(prefix, guard) {
        canonical.to_owned()
    } else {
        prefix.to_owned()
    }
}

fn too_wide(prefix: &Path, guard: Guard<'_>) -> bool {
    let depth = prefix
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    let holds = |inner: &Path| inner.starts_with(prefix);
    let home_like = [".ssh", ".gnupg", ".config", ".aws"]
        .iter()
        .any(|d| prefix.join(d).exists());
    let dot_local = prefix.file_name() == Some(OsStr::new(".local"));
    depth < 2
        || home_like
        || dot_local
        || guard.home.is_some_and(holds)
        || holds(guard.store_root)
        || holds(guard.store_canonical)
        || holds(guard.scratch)
}

/// Shows the store entry `path` (under the store root) is in: `store-v1/<entry>` or
/// `envs-v1/<environment>` (with the interpreter its `bin/python` leads to), or for a view
/// (`views-v1/<digest>/<name>`, a link) the entry it leads to, with the link made again.
fn store_entry(view: &mut View, path: &Path, search: &str, guard: Guard<'_>) {
    let (root, rel) = match path.strip_prefix(guard.store_root) {
        Ok(rel) => (guard.store_root, rel),
        Err(_) => match path.strip_prefix(guard.store_canonical) {
            Ok(rel) => (guard.store_canonical, rel),
            Err(_) => return,
        },
    };
    let parts: Vec<&OsStr> = rel
        .components()
        .map_while(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    match parts.as_slice() {
        [dir, entry, ..] if *dir == ENTRIES_DIR => {
            view.read_only.push(root.join(dir).join(entry));
        }
        [dir, env, ..] if *dir == ENVS_DIR => {
            let env = root.join(dir).join(env);
            let python = env.join("bin/python");
            view.read_only.push(env);
            if python.exists() {
                reveal(view, &python, search, guard, 0);
            }
        }
        [dir, digest, name, ..] if *dir == VIEWS_DIR => {
            let link = root.join(dir).join(digest).join(name);
            let Ok(target) = link.canonicalize() else {
                return;
            };
            let entries = guard.store_canonical.join(ENTRIES_DIR);
            if target.parent() == Some(entries.as_path()) {
                view.read_only.push(target.clone());
                view.links.push((target, link));
            }
        }
        _ => {}
    }
}
