//! The marketplaces of a lock run: each declared `[[marketplace]]` read now or kept from
//! the previous lock, and what `lock` does with each `PLUGIN@MARKETPLACE` request.

use berth_lockfile_schema::marketplace::{LockedMarketplace, MarketplaceRequest};
use berth_lockfile_schema::{Lock, LockedPlugin, Manifest, PluginRequest};

use super::{LockOptions, Upgrade};
use crate::context::Env;
use crate::error::{EntryError, ResolveError};
use crate::sources::kind_of;
use crate::sources::marketplace::{Derived, ReadMarketplace, derive, read_marketplace_at};

/// A declared marketplace for this lock: read now, or kept from the previous lock unread.
pub(super) struct MarketState<'a> {
    pub(super) declared: &'a MarketplaceRequest,
    /// The previous lock's pin to a commit, when the declaration is unchanged.
    previous: Option<&'a LockedMarketplace>,
    /// The catalog, when this run read it.
    pub(super) read: Option<ReadMarketplace>,
    /// What the new lock records.
    pub(super) locked: LockedMarketplace,
    /// Whether what its `auto_load` brings is the previous lock's, kept unread (its pin
    /// and `auto_load` unchanged, not upgraded).
    pub(super) auto_kept: bool,
}

/// What `lock` does with one `PLUGIN@MARKETPLACE` request.
pub(super) enum PickAction<'a> {
    /// Keep the previous pin.
    Keep(&'a LockedPlugin),
    /// The entry still names this pin, whose content can change in place (a local
    /// folder): hash it again.
    Rehash(Derived, &'a LockedPlugin),
    /// Resolve the entry's request; keep the previous pin if the content is the same.
    Resolve(Derived, Option<&'a LockedPlugin>),
}

impl<'a> MarketState<'a> {
    pub(super) fn pick_action(
        &self,
        env: &Env<'_>,
        request: &PluginRequest,
        before: Option<&'a LockedPlugin>,
        upgrade: &Upgrade,
    ) -> Result<PickAction<'a>, ResolveError> {
        let upgrading =
            upgrade.covers(&self.declared.name) || before.is_some_and(|l| upgrade.covers(&l.name));
        if let Some(locked) = before
            && !upgrading
            && self.previous.is_some()
        {
            // The marketplace is pinned to the same commit, so its entry is the same.
            return Ok(PickAction::Keep(locked));
        }
        let read = self
            .read
            .as_ref()
            .expect("a marketplace with picks to resolve is read");
        let derived = derive(env, read, self.declared, request)?;
        let plain = &derived.request;
        match before {
            Some(locked)
                if !upgrading
                    && locked.source == plain.display_source()
                    && locked.git_ref == plain.git_ref
                    && locked.repo_path == plain.repo_path =>
            {
                if kind_of(&locked.pin).changes_in_place() {
                    Ok(PickAction::Rehash(derived, locked))
                } else {
                    Ok(PickAction::Keep(locked))
                }
            }
            _ => Ok(PickAction::Resolve(derived, before)),
        }
    }
}

/// Pins the manifest's marketplaces: a marketplace pinned to a commit whose declaration is
/// unchanged keeps it (read there only when a new plugin is asked of it); one that is new,
/// changed or upgraded is read at its `ref` now; a local one (pinned to no commit) is read
/// every time, as local plugins are hashed again.
pub(super) fn lock_marketplaces<'a>(
    env: &Env<'_>,
    manifest: &'a Manifest,
    previous: Option<&'a Lock>,
    options: &LockOptions,
    matched: &[Option<&LockedPlugin>],
) -> Result<Vec<MarketState<'a>>, Vec<EntryError>> {
    let upgrade = &options.upgrade;
    let mut states = Vec::new();
    let mut errors = Vec::new();
    for declared in &manifest.marketplaces {
        let picks: Vec<usize> = manifest
            .plugins
            .iter()
            .enumerate()
            .filter(|(_, r)| r.parsed_source().marketplace() == Some(declared.name.as_str()))
            .map(|(i, _)| i)
            .collect();
        // A changed `auto_load` keeps the pin: the catalog is read again at it.
        let unchanged = previous
            .and_then(|l| l.marketplaces.iter().find(|m| m.name == declared.name))
            .filter(|m| m.place_differences(declared).is_empty());
        let pinned = unchanged.filter(|m| m.git.is_some());
        let fresh = pinned.is_none()
            || upgrade.covers(&declared.name)
            || picks
                .iter()
                .any(|&i| matched[i].is_some_and(|l| upgrade.covers(&l.name)));
        let auto_kept = declared.auto_load.is_on()
            && !fresh
            && unchanged.is_some_and(|m| m.auto_load == declared.auto_load);
        let needed = fresh
            || picks.iter().any(|&i| matched[i].is_none())
            || (declared.auto_load.is_on() && !auto_kept);
        let read = if needed {
            match read_now(env, declared, if fresh { None } else { pinned }) {
                Ok(read) => Some(read),
                Err(error) => {
                    errors.push(EntryError {
                        label: format!(
                            "{}:{}: marketplace `{}`",
                            options.manifest_label, declared.line, declared.name
                        ),
                        error: Box::new(error),
                    });
                    continue;
                }
            }
        } else {
            None
        };
        let mut locked = match (&read, unchanged) {
            (Some(read), _) => read.locked.clone(),
            (None, Some(unchanged)) => unchanged.clone(),
            (None, None) => unreachable!("a marketplace without a previous pin is read"),
        };
        locked.auto_load = declared.auto_load.clone();
        states.push(MarketState {
            declared,
            previous: pinned,
            read,
            locked,
            auto_kept,
        });
    }
    if errors.is_empty() {
        Ok(states)
    } else {
        Err(errors)
    }
}

/// Reads `declared` now, at the commit `pinned` pins when given.
fn read_now(
    env: &Env<'_>,
    declared: &MarketplaceRequest,
    pinned: Option<&LockedMarketplace>,
) -> Result<ReadMarketplace, ResolveError> {
    env.reporter.status(
        "Reading",
        &format!(
            "marketplace `{}` ({})",
            declared.name,
            declared.display_source()
        ),
    );
    read_marketplace_at(env, declared, pinned)
}
