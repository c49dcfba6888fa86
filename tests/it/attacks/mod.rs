//! The attacks of `shared/security/review-and-materialize-attacks.md` F1–F17 (issue #38),
//! each reproduced as a test: what berth reviews is a superset of what any harness it
//! supports would run, and what it cannot model counts as the capability. One module per
//! area: `review` (what runs and what an approval covers, F1–F6), `approvals` (the
//! approval rule as a property), `policy` (sources, hosts, `extends`, `diff --from`,
//! F7–F12) and `audit` (hidden characters and what the output shows, F13–F17).

mod approvals;
mod audit;
mod policy;
mod review;
