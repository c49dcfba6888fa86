//! The sandbox's second layer: Landlock, applied by berth to itself inside bubblewrap just
//! before it executes the program. It holds even if a mount of the first layer were
//! undone: read and execute only what bubblewrap shows read-only, read and write (never
//! execute) only the scratch and `/tmp`, a few devices, and no TCP `bind` or `connect` at
//! all; signals and abstract Unix sockets stay inside (ABI 6). On an older kernel, what it
//! has is applied (best effort); on one without Landlock, nothing, and `-v` says so.

use std::path::PathBuf;

use ::landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, Scope, path_beneath_rules,
};

/// The newest ABI whose rights berth asks for (tested on a kernel of ABI 7).
const ABI_ASKED: ABI = ABI::V6;

/// Confines this process and those it starts.
pub(super) fn restrict(
    read: &[PathBuf],
    write: &[PathBuf],
    devices: &[PathBuf],
) -> Result<(), RulesetError> {
    let all = AccessFs::from_all(ABI_ASKED);
    let read_execute = AccessFs::from_read(ABI_ASKED);
    let read_write = all & !AccessFs::Execute;
    let device = AccessFs::from_file(ABI_ASKED) & !AccessFs::Execute;
    Ruleset::default()
        .handle_access(all)?
        .handle_access(AccessNet::from_all(ABI_ASKED))?
        .scope(Scope::from_all(ABI_ASKED))?
        .create()?
        .add_rules(path_beneath_rules(read, read_execute))?
        .add_rules(path_beneath_rules(write, read_write))?
        .add_rules(path_beneath_rules(devices, device))?
        .restrict_self()?;
    Ok(())
}

/// The newest ABI up to [`ABI_ASKED`] the kernel has, if it has Landlock: each is tried
/// by making (not applying) a ruleset that requires it.
pub(super) fn abi() -> Option<i32> {
    let required = |abi: ABI| {
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi));
        let ruleset = match abi {
            ABI::V6 => ruleset.and_then(|r| r.scope(Scope::from_all(abi))),
            _ => ruleset,
        };
        ruleset.and_then(Ruleset::create).is_ok()
    };
    [ABI::V6, ABI::V5, ABI::V4, ABI::V3, ABI::V2, ABI::V1]
        .into_iter()
        .find(|abi| required(*abi))
        .map(|abi| abi as i32)
}
