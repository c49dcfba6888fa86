//! The attacks of `shared/security/review-and-materialize-attacks.md`, each reproduced as a
//! test. F1–F17 (issue #38): what berth reviews is a superset of what any harness it
//! supports would run, and what it cannot model counts as the capability; F18–F23 (issue
//! #40): `materialize` touches nothing of the user's. One module per area: `review` (what
//! runs and what an approval covers, F1–F6), `approvals` (the approval rule as a
//! property), `policy` (sources, hosts, `extends`, `diff --from`, F7–F12), `audit` (hidden
//! characters and what the output shows, F13–F17) and `materialize` (F18–F23). Issue #52's
//! round (`shared/security/review-and-observe-attacks.md`): `fail_closed` (P4-1, P4-2,
//! P4-3, P4-11 and unknown keys), `unknown_keys` (the key table as a property),
//! `claude_runs` (the same forms against the real Claude Code 2.1.332 and 2.1.328),
//! `provenance` (who approved and when a release was made: signed approvals bound to the
//! key, P4-4, and git dates under `exclude-newer`, P4-5) and `boundaries` (P4-10, P4-12,
//! P4-14 and P4-15: a denied source never contacted, no folder but a plugin and no
//! private file in the store, `plugins import` reading only regular files, and
//! `materialize` runs into one folder taking turns). `copilot_files`: the files only
//! GitHub Copilot CLI reads, reviewed, and loaded by the real client.

mod approvals;
mod audit;
mod boundaries;
mod claude_runs;
mod copilot_files;
mod fail_closed;
mod materialize;
mod policy;
mod provenance;
mod review;
mod unknown_keys;
