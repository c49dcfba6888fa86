//! Following symlinks inside a tree (a git tree, or a folder unpacked from an archive) the
//! way the OpenHands SDK's `Path(repo_dir / repo_path).resolve()` follows them, but never
//! out of the tree: a `repo_path` may be, or pass through, a link to a folder of the same
//! repository. The same walk tells which links inside a plugin lead out of its folder (the
//! runtime skips those, and `lock` warns about them).

use std::collections::VecDeque;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Linux gives up after 40 links in one lookup (`MAXSYMLINKS`); so does berth.
const MAX_LINKS: usize = 40;

/// What a name in a folder of the tree is.
#[derive(Debug)]
pub enum Node<D> {
    Dir(D),
    File,
    /// A symlink and its target, as stored.
    Link(Vec<u8>),
    /// A git submodule (berth does not fetch them).
    Submodule,
    Missing,
}

/// A tree whose folders can be looked into one name at a time.
pub trait Tree {
    /// How the tree names a folder (a git tree id, a path).
    type Dir: Clone;
    /// Why looking into it failed (an I/O error, a missing git object).
    type Error;
    /// The tree's top folder.
    fn root(&self) -> Self::Dir;
    /// What `name` is in folder `dir`.
    fn child(&self, dir: &Self::Dir, name: &[u8]) -> Result<Node<Self::Dir>, Self::Error>;
}

/// A folder found by [`resolve_dir`].
#[derive(Debug)]
pub struct Found<D> {
    pub dir: D,
    /// Its path with every link resolved (`""`: the tree's top folder).
    pub real_path: String,
}

/// Why a path does not lead to a folder of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoFolder {
    /// Nothing is at `real` (the path with the links before it resolved).
    Missing {
        /// The path with the links before it resolved.
        real: String,
    },
    /// `real` is a file.
    File {
        /// The path with the links before it resolved.
        real: String,
    },
    /// `real` is a git submodule.
    Submodule {
        /// The path with the links before it resolved.
        real: String,
    },
    /// A link on the way is the trouble: it leads out, dangles, loops or ends at a file.
    Link {
        /// The link's own path in the tree (links before it resolved).
        link: String,
        /// Its target, as stored.
        target: String,
        /// What is wrong with it.
        why: LinkTrouble,
    },
}

/// What is wrong with a link that a `repo_path` goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTrouble {
    /// Its target leaves the tree.
    Leaves,
    /// Its target is an absolute path.
    Absolute,
    /// Its target does not exist.
    Dangling,
    /// Following it reaches `real`, a file, where a folder is needed.
    File {
        /// The path it leads to.
        real: String,
    },
    /// Following it reaches the git submodule `real`.
    Submodule {
        /// The path it leads to.
        real: String,
    },
    /// Following it comes back to itself.
    Loop,
}

impl NoFolder {
    /// Why `repo_path` is refused, as the end of a sentence that starts with "`repo_path`
    /// `PATH`"; `container` is "repository" or "archive". A link is always called a
    /// symlink, never a file.
    pub fn describe(&self, repo_path: &str, container: &str) -> String {
        let resolved = |real: &str| {
            if real == repo_path {
                String::new()
            } else {
                format!(" (following symlinks: `{real}`)")
            }
        };
        match self {
            Self::Missing { real } => format!("does not exist{}", resolved(real)),
            Self::File { real } => format!("is a file, not a folder{}", resolved(real)),
            Self::Submodule { real } => format!(
                "is a git submodule, which berth does not fetch{}",
                resolved(real)
            ),
            Self::Link { link, target, why } => {
                let why = match why {
                    LinkTrouble::Leaves => {
                        format!("which leaves the {container} (berth follows links only within it)")
                    }
                    LinkTrouble::Absolute => format!(
                        "an absolute path, which leaves the {container} (berth follows links only within it)"
                    ),
                    LinkTrouble::Dangling => "which does not exist".to_owned(),
                    LinkTrouble::File { real } => {
                        format!("which is not a folder: `{real}` is a file")
                    }
                    LinkTrouble::Submodule { real } => format!(
                        "which leads to the git submodule `{real}`, and berth does not fetch submodules"
                    ),
                    LinkTrouble::Loop => format!(
                        "which is part of a loop of symlinks (more than {MAX_LINKS} in one path)"
                    ),
                };
                format!("goes through `{link}`, a symlink to `{target}`, {why}")
            }
        }
    }
}

/// One name still to look up, and the link whose target it came from (`None`: from the
/// path as written).
type Pending = (Vec<u8>, Option<usize>);

fn parts(path: &[u8], from: Option<usize>) -> impl Iterator<Item = Pending> + '_ {
    path.split(|&b| b == b'/')
        .filter(|p| !p.is_empty() && *p != b".")
        .map(move |p| (p.to_vec(), from))
}

fn joined(stack: &[(Vec<u8>, impl Sized)], name: Option<&[u8]>) -> String {
    let mut names: Vec<&[u8]> = stack.iter().map(|(n, _)| n.as_slice()).collect();
    names.extend(name);
    String::from_utf8_lossy(&names.join(&b'/')).into_owned()
}

/// The folder `path` (relative to the tree's top, no `..`) leads to, following links as the
/// kernel does: a link's target is read from the link's own folder, links in the middle of
/// the path and chains of links are followed. A link that leaves the tree (or is absolute),
/// dangles, loops or ends at a file is refused, naming it.
pub fn resolve_dir<T: Tree>(
    tree: &T,
    path: &str,
) -> Result<Result<Found<T::Dir>, NoFolder>, T::Error> {
    let mut stack: Vec<(Vec<u8>, T::Dir)> = Vec::new();
    let mut pending: VecDeque<Pending> = parts(path.as_bytes(), None).collect();
    // Every link followed so far: its path and its target.
    let mut links: Vec<(String, String)> = Vec::new();
    let trouble = |links: &[(String, String)], from: usize, why: LinkTrouble| {
        let (link, target) = links[from].clone();
        NoFolder::Link { link, target, why }
    };
    while let Some((name, from)) = pending.pop_front() {
        if name == b".." {
            if stack.pop().is_none() {
                return Ok(Err(match from {
                    Some(from) => trouble(&links, from, LinkTrouble::Leaves),
                    None => NoFolder::Missing {
                        real: path.to_owned(),
                    },
                }));
            }
            continue;
        }
        let here = stack.last().map_or_else(|| tree.root(), |(_, d)| d.clone());
        let real = || joined(&stack, Some(&name));
        match tree.child(&here, &name)? {
            Node::Dir(dir) => stack.push((name, dir)),
            Node::Link(target) => {
                let link = real();
                links.push((link, String::from_utf8_lossy(&target).into_owned()));
                let this = links.len() - 1;
                if links.len() > MAX_LINKS {
                    return Ok(Err(trouble(&links, this, LinkTrouble::Loop)));
                }
                if target.starts_with(b"/") {
                    return Ok(Err(trouble(&links, this, LinkTrouble::Absolute)));
                }
                // The target replaces the link's name, read from the link's folder.
                for part in parts(&target, Some(this))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                {
                    pending.push_front(part);
                }
            }
            other => {
                let real = real();
                return Ok(Err(match (other, from) {
                    (Node::Missing, Some(from)) => trouble(&links, from, LinkTrouble::Dangling),
                    (Node::Missing, None) => NoFolder::Missing { real },
                    (Node::File, Some(from)) => trouble(&links, from, LinkTrouble::File { real }),
                    (Node::File, None) => NoFolder::File { real },
                    (Node::Submodule, Some(from)) => {
                        trouble(&links, from, LinkTrouble::Submodule { real })
                    }
                    (Node::Submodule, None) => NoFolder::Submodule { real },
                    (Node::Dir(_) | Node::Link(_), _) => unreachable!("handled above"),
                }));
            }
        }
    }
    Ok(Ok(Found {
        dir: stack.last().map_or_else(|| tree.root(), |(_, d)| d.clone()),
        real_path: joined(&stack, None),
    }))
}

/// Whether the symlink at `link` (a path in the tree) with `target` leads out of the tree,
/// as the runtime judges it: absolute targets leave; a relative one is read from the link's
/// folder, following the links it meets inside the tree; once it reaches something missing
/// (or a file) the rest is judged lexically. A loop leads nowhere, so not out.
pub fn link_leaves<T: Tree>(tree: &T, link: &str, target: &[u8]) -> Result<bool, T::Error> {
    if target.starts_with(b"/") {
        return Ok(true);
    }
    // `None` once the walk has left what exists: from there on it is lexical.
    let mut stack: Vec<(Vec<u8>, Option<T::Dir>)> = Vec::new();
    let folder = link.rsplit_once('/').map_or("", |(folder, _)| folder);
    let mut pending: VecDeque<Pending> = parts(folder.as_bytes(), None)
        .chain(parts(target, None))
        .collect();
    let mut hops = 0;
    while let Some((name, _)) = pending.pop_front() {
        if name == b".." {
            if stack.pop().is_none() {
                return Ok(true);
            }
            continue;
        }
        let here = match stack.last() {
            None => Some(tree.root()),
            Some((_, dir)) => dir.clone(),
        };
        let Some(here) = here else {
            stack.push((name, None));
            continue;
        };
        match tree.child(&here, &name)? {
            Node::Dir(dir) => stack.push((name, Some(dir))),
            Node::Link(next) => {
                hops += 1;
                if hops > MAX_LINKS {
                    return Ok(false);
                }
                if next.starts_with(b"/") {
                    return Ok(true);
                }
                for part in parts(&next, None).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(part);
                }
            }
            Node::File | Node::Submodule | Node::Missing => stack.push((name, None)),
        }
    }
    Ok(false)
}

/// A folder on disk as a [`Tree`] (an unpacked archive, a local plugin folder). Folders are
/// their paths; nothing is followed but by [`resolve_dir`] and [`link_leaves`].
#[derive(Debug)]
pub struct DiskTree {
    pub root: PathBuf,
}

impl Tree for DiskTree {
    type Dir = PathBuf;
    type Error = std::io::Error;

    fn root(&self) -> PathBuf {
        self.root.clone()
    }

    fn child(&self, dir: &PathBuf, name: &[u8]) -> Result<Node<PathBuf>, std::io::Error> {
        let path = dir.join(std::ffi::OsStr::from_bytes(name));
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => Ok(Node::Link(
                fs_err::read_link(&path)?.as_os_str().as_bytes().to_vec(),
            )),
            Ok(meta) if meta.is_dir() => Ok(Node::Dir(path)),
            Ok(_) => Ok(Node::File),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(Node::Missing)
            }
            // fs-err's error names the path.
            Err(e) => Err(fs_err::symlink_metadata(&path).map_or_else(|named| named, |_| e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A tree written as `path -> entry`: `"d"` a folder, `"f"` a file, `"l:TARGET"` a link.
    struct Fake(HashMap<String, String>);

    impl Fake {
        fn new(entries: &[(&str, &str)]) -> Self {
            Self(
                entries
                    .iter()
                    .map(|(p, k)| ((*p).to_owned(), (*k).to_owned()))
                    .collect(),
            )
        }
    }

    impl Tree for Fake {
        type Dir = String;
        type Error = std::convert::Infallible;

        fn root(&self) -> String {
            String::new()
        }

        fn child(
            &self,
            dir: &String,
            name: &[u8],
        ) -> Result<Node<String>, std::convert::Infallible> {
            let name = String::from_utf8_lossy(name);
            let path = if dir.is_empty() {
                name.into_owned()
            } else {
                format!("{dir}/{name}")
            };
            Ok(match self.0.get(&path).map(String::as_str) {
                Some("d") => Node::Dir(path),
                Some("f") => Node::File,
                Some("s") => Node::Submodule,
                Some(link) => Node::Link(link.trim_start_matches("l:").as_bytes().to_vec()),
                None => Node::Missing,
            })
        }
    }

    fn tree() -> Fake {
        Fake::new(&[
            ("plugins", "d"),
            ("plugins/v2", "d"),
            ("plugins/v2/x", "d"),
            ("plugins/v2/README.md", "f"),
            ("plugins/current", "l:v2"),
            ("plugins/chain", "l:current/x"),
            ("plugins/deep", "l:./v2/x/../x"),
            ("plugins/out", "l:../.."),
            ("plugins/abs", "l:/etc"),
            ("plugins/gone", "l:v3"),
            ("plugins/readme", "l:v2/README.md"),
            ("plugins/a", "l:b"),
            ("plugins/b", "l:a"),
            ("plugins/sub", "s"),
            ("plugins/tosub", "l:sub"),
            ("top", "l:."),
        ])
    }

    fn found(path: &str) -> String {
        match resolve_dir(&tree(), path).expect("no I/O error") {
            Ok(found) => found.real_path,
            Err(e) => panic!("{path}: {e:?}"),
        }
    }

    fn refused(path: &str) -> String {
        match resolve_dir(&tree(), path).expect("no I/O error") {
            Ok(found) => panic!("{path} resolved to {}", found.real_path),
            Err(e) => e.describe(path, "repository"),
        }
    }

    #[test]
    fn links_to_folders_are_followed_from_their_own_folder() {
        assert_eq!(found("plugins/v2/x"), "plugins/v2/x");
        assert_eq!(found("plugins/current"), "plugins/v2");
        assert_eq!(found("plugins/current/x"), "plugins/v2/x");
        assert_eq!(found("plugins/chain"), "plugins/v2/x");
        assert_eq!(found("plugins/deep"), "plugins/v2/x");
        assert_eq!(found("top/plugins/current/x"), "plugins/v2/x");
        assert_eq!(found("top"), "");
    }

    #[test]
    fn bad_links_are_named_and_never_called_files() {
        for (path, expected) in [
            (
                "plugins/out",
                "goes through `plugins/out`, a symlink to `../..`, which leaves the repository",
            ),
            (
                "plugins/abs/x",
                "goes through `plugins/abs`, a symlink to `/etc`, an absolute path, which leaves",
            ),
            (
                "plugins/gone",
                "goes through `plugins/gone`, a symlink to `v3`, which does not exist",
            ),
            (
                "plugins/readme",
                "goes through `plugins/readme`, a symlink to `v2/README.md`, which is not a folder: `plugins/v2/README.md` is a file",
            ),
            (
                "plugins/a",
                "goes through `plugins/a`, a symlink to `b`, which is part of a loop of symlinks",
            ),
            (
                "plugins/tosub",
                "which leads to the git submodule `plugins/sub`",
            ),
            ("plugins/nope", "does not exist"),
            (
                "plugins/current/nope",
                "does not exist (following symlinks: `plugins/v2/nope`)",
            ),
            ("plugins/v2/README.md", "is a file, not a folder"),
        ] {
            let message = refused(path);
            assert!(message.contains(expected), "{path}: {message}");
        }
    }

    #[test]
    fn links_leaving_a_plugin_are_judged_from_their_folder() {
        let plugin = Fake::new(&[
            ("skills", "d"),
            ("skills/x", "d"),
            ("skills/x/SKILL.md", "l:../../../outside.md"),
            ("skills/y", "l:x"),
            ("skills/z", "l:../docs/../skills/x"),
            ("skills/via", "l:up/../.."),
            ("skills/up", "l:.."),
            ("skills/dangling-out", "l:../../nowhere"),
            ("skills/dangling-in", "l:nowhere/../x"),
            ("skills/abs", "l:/etc/passwd"),
            ("skills/loop", "l:loop"),
        ]);
        let leaves = |link: &str| {
            let Node::Link(target) = plugin
                .child(
                    &link
                        .rsplit_once('/')
                        .map_or(String::new(), |(d, _)| d.to_owned()),
                    link.rsplit('/').next().expect("a name").as_bytes(),
                )
                .expect("no error")
            else {
                panic!("{link} is a link")
            };
            link_leaves(&plugin, link, &target).expect("no error")
        };
        assert!(leaves("skills/x/SKILL.md"));
        assert!(!leaves("skills/y"));
        assert!(!leaves("skills/z"));
        // `up` is the plugin's top folder, so `up/../..` is outside it.
        assert!(leaves("skills/via"));
        assert!(leaves("skills/dangling-out"));
        assert!(!leaves("skills/dangling-in"));
        assert!(leaves("skills/abs"));
        assert!(!leaves("skills/loop"));
    }
}
