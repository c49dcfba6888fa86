//! What a git source asks a remote for ([`Want`]), the refs that may name it, and the
//! choice among the refs a remote has: the same for a remote's advertisement and for a
//! repository read in place.

use gix::ObjectId;
use gix::protocol::handshake::Ref;

use super::Remote;
use crate::context::Reporter;
use crate::error::ResolveError;

/// What to resolve on the remote.
#[derive(Debug, Clone)]
pub(crate) enum Want {
    /// The remote's default branch (its `HEAD`).
    DefaultBranch,
    /// A branch or tag name (a branch wins when both exist), or a full `refs/...` name.
    Named(String),
}

/// The refs that may name what `want` asks for, in the order they are tried.
pub(super) fn ref_names(want: &Want) -> Vec<String> {
    match want {
        Want::DefaultBranch => vec!["HEAD".to_owned()],
        Want::Named(name) if name.starts_with("refs/") => vec![name.clone()],
        Want::Named(name) => vec![format!("refs/heads/{name}"), format!("refs/tags/{name}")],
    }
}

/// The refs a remote advertised, each with the commit it leads to (`None` when unborn).
pub(super) fn advertised(map: &gix::remote::fetch::RefMap) -> Vec<(String, Option<ObjectId>)> {
    let mut found: Vec<(String, Option<ObjectId>)> = Vec::new();
    for mapping in &map.mappings {
        if let gix::remote::fetch::refmap::Source::Ref(r) = &mapping.remote {
            let (name, commit) = match r {
                Ref::Direct {
                    full_ref_name,
                    object,
                }
                | Ref::Peeled {
                    full_ref_name,
                    object,
                    ..
                }
                | Ref::Symbolic {
                    full_ref_name,
                    object,
                    ..
                } => (full_ref_name, Some(*object)),
                Ref::Unborn { full_ref_name, .. } => (full_ref_name, None),
            };
            found.push((name.to_string(), commit));
        }
    }
    found
}

/// The commit `want` names among the refs the remote has (`found`), and the ref that named
/// it.
pub(super) fn pick(
    found: &[(String, Option<ObjectId>)],
    want: &Want,
    remote: &Remote,
    reporter: &dyn Reporter,
) -> Result<(String, ObjectId), ResolveError> {
    let lookup = |name: &str| found.iter().find(|(n, _)| n == name).map(|(_, c)| *c);
    match want {
        Want::DefaultBranch => match lookup("HEAD") {
            Some(Some(commit)) => Ok(("HEAD".to_owned(), commit)),
            _ => Err(ResolveError::EmptyRepository {
                url: remote.url.shown.clone(),
            }),
        },
        Want::Named(name) => {
            let (branch_ref, tag_ref) = if name.starts_with("refs/") {
                (name.clone(), String::new())
            } else {
                (format!("refs/heads/{name}"), format!("refs/tags/{name}"))
            };
            let (branch, tag) = (lookup(&branch_ref), lookup(&tag_ref));
            if let (Some(Some(b)), Some(Some(t))) = (branch, tag)
                && b != t
            {
                reporter.warn(&format!(
                    "`{}` has both a branch and a tag named `{name}`; using the branch (write `refs/tags/{name}` to use the tag)",
                    remote.url.shown
                ));
            }
            match (branch.flatten(), tag.flatten()) {
                (Some(commit), _) => Ok((branch_ref, commit)),
                (None, Some(commit)) => Ok((tag_ref, commit)),
                (None, None) => Err(ResolveError::RefNotFound {
                    url: remote.url.shown.clone(),
                    git_ref: name.clone(),
                }),
            }
        }
    }
}
