//! The project's policy and approvals, and the gate that `lock`, `sync`, `show`, `run`,
//! `hooks run`, `materialize` and `audit` pass a lock through before they write, show or
//! run anything.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use berth_lockfile_schema::Lock;
use berth_lockfile_schema::governance::{Approvals, Canon, Policy, parse_approvals};
use berth_review::{Checked, UnderReview, Violation, check_plugins, remember_clean, scanned_clean};
use berth_runtime::PluginSet;

use berth_resolver::{Network, Settings};

use crate::context::{Context, Failure};

/// A project's policy (berth's defaults when it has no policy file) and its approvals.
pub struct Governance {
    pub policy: Policy,
    pub approvals: Approvals,
    /// The policy file, when there is one.
    pub policy_path: Option<PathBuf>,
}

/// Which locked plugins have their files scanned for hidden Unicode. Whatever is scanned
/// and found without a critical character is remembered in the store as scanned clean
/// (`review::remember_clean`).
#[derive(Clone, Copy)]
pub enum Scan<'a> {
    /// None: their content is what was scanned when it was locked or synced.
    Nothing,
    /// Every one (`berth audit`).
    All,
    /// Those whose content is not in this earlier lock (what `lock` and `sync` add), and
    /// that were never scanned clean.
    AddedSince(Option<&'a Lock>),
    /// Those never scanned clean by this berth's scanner (what `show`, `run`, `hooks run`
    /// and `materialize` use: an entry a `sync` refused, or one from an older berth).
    Unverified,
}

impl Context {
    /// Resolver settings for commands that lock: [`Context::settings`] with the policy's
    /// `exclude-newer`, `[sources]` and whether it requires signed sources (the policy and
    /// what it extends are read for it).
    pub fn lock_settings(&self, network: Network) -> Result<Settings> {
        self.under_policy(self.settings(network))
    }

    /// `settings` with the policy's `exclude-newer`, whether it requires signed sources and
    /// registry signatures, and its `[sources]`, when there is a policy.
    pub fn under_policy(&self, mut settings: Settings) -> Result<Settings> {
        if let Some(path) = &self.policy_path {
            let canon = berth_lockfile_schema::governance::Canon::new(&self.github_url);
            let policy = berth_resolver::load_policy(path, canon)?;
            settings.release_age.policy = policy.release_age();
            settings.release_age.signed_sources = policy.require_signed_sources().is_some();
            settings.require_registry_signatures =
                policy.require_registry_signatures().map(str::to_owned);
            // Every source is matched before it is contacted; a lock of this project
            // credits its picks' marketplaces, as the review does.
            // A lock's pins count for those rules only once this store saw them give
            // their content (a lock made elsewhere is its writer's word).
            if policy.decides_by_source() {
                settings.pins = berth_resolver::LockedPins::Recorded;
            }
            settings.sources = berth_resolver::SourceRules::new(
                std::sync::Arc::new(policy),
                berth_resolver::LockedPicks::Credited,
            );
        }
        Ok(settings)
    }

    /// Reads the policy (and everything it extends) and the approvals file.
    pub fn governance(&self) -> Result<Governance> {
        let policy = match &self.policy_path {
            // Sources are matched in canonical form, where a URL under `$BERTH_GITHUB_URL`
            // is the `github:` source it stands for.
            Some(path) => berth_resolver::load_policy(path, Canon::new(&self.github_url))?,
            None => Policy::default(),
        };
        Ok(Governance {
            policy,
            approvals: self.read_approvals()?,
            policy_path: self.policy_path.clone(),
        })
    }

    /// The approvals file, empty when there is none.
    pub fn read_approvals(&self) -> Result<Approvals> {
        let label = self.approvals_path.display().to_string();
        match std::fs::read_to_string(&self.approvals_path) {
            Ok(text) => Ok(parse_approvals(&text, &label)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Approvals::default()),
            Err(e) => Err(e).with_context(|| format!("could not read `{label}`")),
        }
    }

    /// Checks `lock` (every entry already in the store) against the project's policy:
    /// sources, capabilities and approvals for every plugin, hidden Unicode for those
    /// `scan` names. Warnings are printed; a violation fails naming plugin, capability and
    /// policy file.
    pub fn gate(&self, governance: &Governance, lock: &Lock, scan: Scan<'_>) -> Result<Checked> {
        self.check_release_age(governance, lock)?;
        let checked = self.review(governance, lock, scan)?;
        for finding in checked.warnings() {
            self.printer.warn(&finding);
        }
        refuse(&checked.violations)?;
        Ok(checked)
    }

    /// [`Context::gate`] without printing or failing: what `berth audit` reports.
    pub fn review(&self, governance: &Governance, lock: &Lock, scan: Scan<'_>) -> Result<Checked> {
        let entries = self.entries(lock)?;
        let scans = self.scans(lock, scan);
        self.check_entries(governance, lock, &entries, &scans, None)
    }

    /// The checked store entry of every plugin of `lock`, in its order.
    fn entries(&self, lock: &Lock) -> Result<Vec<PathBuf>> {
        let wanted: Vec<_> = lock
            .plugins
            .iter()
            .map(|p| (&p.hash, p.name.as_str()))
            .collect();
        let mut entries = Vec::with_capacity(lock.plugins.len());
        for (locked, found) in lock
            .plugins
            .iter()
            .zip(self.store.checked_lookup_all(&wanted))
        {
            match found? {
                Some(entry) => entries.push(entry.path),
                None => anyhow::bail!(
                    "plugin `{}` is not in the store; run `berth plugins sync` first",
                    locked.name
                ),
            }
        }
        Ok(entries)
    }

    /// Whether each plugin of `lock` is scanned under `scan`.
    fn scans(&self, lock: &Lock, scan: Scan<'_>) -> Vec<bool> {
        let clean = |locked| scanned_clean(&self.store, locked);
        lock.plugins
            .iter()
            .map(|locked| match scan {
                Scan::Nothing => false,
                Scan::All => true,
                Scan::AddedSince(before) => {
                    !before.is_some_and(|b| {
                        b.plugins
                            .iter()
                            .any(|p| p.hash == locked.hash && p.name == locked.name)
                    }) && !clean(locked)
                }
                Scan::Unverified => !clean(locked),
            })
            .collect()
    }

    /// Checks the plugins of `lock` at `entries` (their store entries, in order), scanning
    /// those `scans` says, and remembers which scanned clean.
    fn check_entries(
        &self,
        governance: &Governance,
        lock: &Lock,
        entries: &[PathBuf],
        scans: &[bool],
        set: Option<&PluginSet>,
    ) -> Result<Checked> {
        let tools = berth_review::load_manifests(&self.store, &lock.tools);
        let plugins: Vec<UnderReview<'_>> = lock
            .plugins
            .iter()
            .zip(entries)
            .zip(scans)
            .enumerate()
            .map(|(i, ((locked, entry), scan))| UnderReview {
                locked,
                entry,
                payloads: &lock.payloads,
                tools: &tools,
                // What the set read of each plugin is not read again.
                read: set.and_then(|set| set.plugins[i].model.as_deref()),
                marketplaces: &lock.marketplaces,
                scan: *scan,
            })
            .collect();
        let mut checked = check_plugins(&governance.policy, &governance.approvals, &plugins)?;
        remember_clean(&self.store, &plugins, &checked);
        checked.violations.extend(berth_review::signer_violations(
            &governance.policy,
            &governance.approvals,
            lock,
        ));
        Ok(checked)
    }

    /// The gate of the commands that use a synced lock's set (`show`, `run`, `hooks run`,
    /// `materialize`), before anything is shown, written or run: berth's defaults or the
    /// policy file, as `lock` and `sync` apply them. Plugins never scanned clean are
    /// scanned (an entry a `sync` refused stays in the store, inert, and is refused here
    /// too); with no policy file and every plugin scanned clean there is nothing to check,
    /// and the cost is one small read per plugin.
    pub fn gate_runtime(&self, lock: &Lock, set: &PluginSet) -> Result<()> {
        let scans = self.scans(lock, Scan::Unverified);
        if self.policy_path.is_none() && !scans.contains(&true) && !lock.changes_signer() {
            return Ok(());
        }
        let governance = self.governance()?;
        self.check_release_age(&governance, lock)?;
        self.check_pins_seen(&governance, lock)?;
        self.check_registry_signatures(&governance, lock)?;
        // The set's entries were checked when it was built, in lock order.
        let entries: Vec<PathBuf> = set.plugins.iter().map(|p| p.path.clone()).collect();
        debug_assert_eq!(entries.len(), lock.plugins.len());
        let checked = self.check_entries(&governance, lock, &entries, &scans, Some(set))?;
        for finding in checked.warnings() {
            self.printer.warn(&finding);
        }
        refuse(&checked.violations)
    }
}

impl Context {
    /// Says, under `[sources] signer_change = "warn"`, which plugins changed hands.
    fn warn_signer_changes(&self, governance: &Governance, lock: &Lock) {
        let changes = berth_review::signer_changes(&governance.policy, &governance.approvals, lock);
        for change in changes
            .iter()
            .filter(|c| c.rule == berth_lockfile_schema::governance::SignerChange::Warn)
        {
            self.printer.warn(&format!(
                "plugin `{}`: {} [`{}` in `{}`]",
                change.plugin.name,
                change.describe(),
                change.rule_text(),
                change.file
            ));
        }
    }

    /// Under a policy that decides by where plugins come from, fails unless this store saw
    /// each plugin's pin give its entry (as `lock`, `sync` and `verify` record): a lock
    /// taken as it is (made elsewhere) may name an entry under a source it did not come
    /// from.
    fn check_pins_seen(&self, governance: &Governance, lock: &Lock) -> Result<()> {
        if !governance.policy.decides_by_source() {
            return Ok(());
        }
        let unseen: Vec<String> = lock
            .plugins
            .iter()
            .filter(|p| !self.store.has_pin(&p.hash, &p.name, &p.provenance()))
            .map(|p| format!("plugin `{}` ({} at {})", p.name, p.source, p.pin_label()))
            .collect();
        match unseen.as_slice() {
            [] => Ok(()),
            [one] => Err(Failure {
                message: format!(
                    "{one}: this store never saw its pin give its content, and the policy decides by sources; run `berth plugins sync` to check it"
                ),
                notes: Vec::new(),
            }
            .into()),
            many => Err(Failure {
                message: format!(
                    "this store never saw the pins of {} plugins give their content, and the policy decides by sources; run `berth plugins sync` to check them",
                    many.len()
                ),
                notes: unseen,
            }
            .into()),
        }
    }

    /// Under `[payloads] require_registry_signatures`, fails unless every npm package of
    /// `lock`'s payloads, and every plugin taken from an npm package, carries a registry
    /// signature that verifies with the lock's keys
    /// (offline; what `sync` checked is remembered in the store, so this is one `readlink`
    /// per payload then).
    fn check_registry_signatures(&self, governance: &Governance, lock: &Lock) -> Result<()> {
        let Some(file) = governance.policy.require_registry_signatures() else {
            return Ok(());
        };
        let mut settings = self.settings(berth_resolver::Network::Offline);
        settings.require_registry_signatures = Some(file.to_owned());
        berth_resolver::check_registry_signatures(&self.store, &settings, &self.printer, lock)
            .map_err(|errors| Failure::from_entries("the policy refuses", errors).into())
    }

    /// Under a policy's `exclude-newer`, fails unless `lock` was made under a cutoff at or
    /// before the one the policy asks now: a lock made without it, or under a later one,
    /// may pin what the policy holds back (`sync --frozen`, `show`, `run`, `hooks run` and
    /// `materialize` read the lock as it is; `lock` and `sync` lock under the cutoff).
    fn check_release_age(&self, governance: &Governance, lock: &Lock) -> Result<()> {
        use berth_lockfile_schema::release_age::made_too_late;
        let asks = governance.policy.release_age();
        match made_too_late(&asks, lock.exclude_newer.as_ref(), self.now) {
            None => Ok(()),
            Some(why) => Err(Failure {
                message: format!(
                    "`{}` {why}; run `berth plugins lock` to lock under it",
                    self.lock_label()
                ),
                notes: Vec::new(),
            }
            .into()),
        }
    }
}

/// Fails with every one of `violations`, if there are any: one line for the violations
/// of one plugin that say the same under several rules of one file (what counts as every
/// capability), naming every rule.
pub fn refuse(violations: &[Violation]) -> Result<()> {
    if violations.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<(&Violation, Vec<&str>)> = Vec::new();
    for v in violations {
        match lines.iter_mut().find(|(first, _)| {
            first.plugin == v.plugin && first.detail == v.detail && first.file == v.file
        }) {
            Some((_, rules)) => rules.push(&v.rule),
            None => lines.push((v, vec![&v.rule])),
        }
    }
    let line = |(v, rules): &(&Violation, Vec<&str>)| {
        let rules: Vec<String> = rules.iter().map(|r| format!("`{r}`")).collect();
        format!(
            "plugin `{}`: {} [{} in `{}`]",
            v.plugin,
            v.detail,
            rules.join(", "),
            v.file
        )
    };
    let message = if lines.len() == 1 {
        line(&lines[0])
    } else {
        format!(
            "the policy refuses {} things in the locked plugins",
            lines.len()
        )
    };
    let notes = if lines.len() == 1 {
        Vec::new()
    } else {
        lines.iter().map(line).collect()
    };
    Err(Failure { message, notes }.into())
}

impl Context {
    /// Admits a new lock before it is written (`lock`, `add`, `remove`, `update`, `sync`):
    /// its entries are fetched into the store as `sync` would (store entries are inert and
    /// content-addressed), the plugins it adds are scanned, and with a policy file every
    /// plugin is checked. Fails, writing nothing, on a violation; with `pending_ok` (the
    /// commands that only write the lock) a plugin that waits for an approval is a
    /// warning, since approving needs the lock. Returns how many plugins it added to the
    /// store: `sync` counts them; the store lines themselves are `-v` detail, since the
    /// lock's own lines (`Adding review v1.2.0`) are what a reader of `lock` wants.
    pub fn admit(
        &self,
        previous: Option<&Lock>,
        lock: &Lock,
        manifest: Option<&berth_lockfile_schema::Manifest>,
        network: berth_resolver::Network,
        pending_ok: bool,
    ) -> Result<usize> {
        let adds = lock.plugins.iter().any(|p| {
            !previous.is_some_and(|b| {
                b.plugins
                    .iter()
                    .any(|q| q.hash == p.hash && q.name == p.name)
            })
        });
        if !adds && self.policy_path.is_none() && !lock.changes_signer() {
            return Ok(0);
        }
        let governance = self.governance()?;
        self.warn_signer_changes(&governance, lock);
        self.check_signed_sources(&governance.policy, lock, manifest, network)?;
        // The sync checks every npm registry signature, and what the policy asks of them.
        let mut settings = self.settings(network);
        settings.require_registry_signatures = governance
            .policy
            .require_registry_signatures()
            .map(str::to_owned);
        let synced = berth_resolver::sync_plugins(
            &self.store,
            &settings,
            &berth_resolver::StoredQuietly(&self.printer),
            lock,
            manifest,
            berth_resolver::LocalCheck::TrustStore,
        )
        .map_err(|errors| Failure::from_entries("could not fetch", errors))?;
        let mut checked = self.review(&governance, lock, Scan::AddedSince(previous))?;
        for finding in checked.warnings() {
            self.printer.warn(&finding);
        }
        if !pending_ok {
            return refuse(&checked.violations).map(|()| synced.added);
        }
        // A lock may name what is not approved yet: approving needs the lock. What runs
        // it (`sync`, `show`, `run`, `hooks run`, the server) refuses until it is.
        let (pending, refused): (Vec<_>, Vec<_>) = std::mem::take(&mut checked.violations)
            .into_iter()
            .partition(|v| v.needs_approval);
        refuse(&refused)?;
        for violation in pending {
            self.printer.warn(&format!(
                "{violation} (the lock is written; nothing runs it until then)"
            ));
        }
        Ok(synced.added)
    }
}
