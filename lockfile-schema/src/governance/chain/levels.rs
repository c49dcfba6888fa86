//! Which of a child's levels loosen what its parent sets: capabilities, `tools`, a change
//! of signer, signed approvals, registry signatures and hidden Unicode, each of which a child may only
//! tighten.

use super::super::file::{Capability, PolicyFile, UnicodeLevel};

/// What `file` sets looser than `earlier` of the levels (capabilities, `tools`, signed
/// approvals, registry signatures, hidden Unicode): what it says, and what the parent says.
pub(super) fn looser_levels(file: &PolicyFile, earlier: &PolicyFile) -> Option<(String, String)> {
    for capability in Capability::ALL {
        if let (Some(mine), Some(theirs)) = (
            file.capabilities.get(capability),
            earlier.capabilities.get(capability),
        ) && mine < theirs
        {
            let key = capability.as_str();
            return Some((
                format!("sets {key} = \"{}\"", mine.as_str()),
                format!("sets it to \"{}\"", theirs.as_str()),
            ));
        }
    }
    if let (Some(mine), Some(theirs)) = (file.capabilities.tools, earlier.capabilities.tools)
        && mine < theirs
    {
        return Some((
            format!("sets tools = \"{}\"", mine.as_str()),
            format!("sets it to \"{}\"", theirs.as_str()),
        ));
    }
    if let (Some(mine), Some(theirs)) = (file.sources.signer_change, earlier.sources.signer_change)
        && mine < theirs
    {
        return Some((
            format!("sets signer_change = \"{}\"", mine.as_str()),
            format!("sets it to \"{}\"", theirs.as_str()),
        ));
    }
    if file.require_signed_approvals == Some(false)
        && earlier.require_signed_approvals == Some(true)
    {
        return Some((
            "sets require_signed_approvals = false".to_owned(),
            "sets it to true".to_owned(),
        ));
    }
    if file.payloads.require_registry_signatures == Some(false)
        && earlier.payloads.require_registry_signatures == Some(true)
    {
        return Some((
            "sets require_registry_signatures = false".to_owned(),
            "sets it to true".to_owned(),
        ));
    }
    if file.capabilities.hidden_unicode == Some(UnicodeLevel::Warn)
        && earlier.capabilities.hidden_unicode == Some(UnicodeLevel::Deny)
    {
        return Some((
            "sets hidden_unicode = \"warn\"".to_owned(),
            "sets it to \"deny\"".to_owned(),
        ));
    }
    None
}
