//! `berth materialize TARGET DIR`: the locked set where a harness reads it.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use berth_harness::{Destination, Harness, Plan, TARGETS};
use berth_runtime::{BuildOptions, build_plugin_set};
use berth_store::FileLock;

use crate::args::MaterializeArgs;
use crate::context::{Context, Exit};

pub fn run(ctx: &Context, args: &MaterializeArgs) -> Result<()> {
    let harness = args.target.0;
    let repo = project_repo(harness, args)?;
    let managed = managed_file(harness, args)?;
    let dir = &target_dir(ctx, args)?;
    let _hold = ctx.hold_store()?;
    let lock = ctx.runtime_lock(args.frozen)?;
    let set = build_plugin_set(
        &ctx.store,
        &lock,
        &BuildOptions {
            max_skills: None,
            // The targets take manifests and command texts from what the set read.
            keep_models: true,
            ..BuildOptions::default()
        },
    )?;
    ctx.gate_runtime(&lock, &set)?;
    if args.check_tools {
        crate::tools::recheck(ctx, &lock, true)?;
    }
    if !args.check {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("could not create `{}`", dir.display()))?;
    }
    // Held from planning to the last write (or the check): another run on DIR would
    // sweep what this one writes, and plan from a half-written folder.
    let _dir_lock = hold(ctx, dir)?;
    let root = absolute(dir)?;
    // Each folder written, with its plan: the harness folder, and for `claude --project`
    // the repository's settings.
    let to = Destination {
        root: &root,
        project: repo.as_deref(),
        managed: managed.as_deref(),
    };
    let plans = berth_harness::materialize(harness, &set, to)?;
    for warning in plans.iter().flat_map(|(_, plan)| &plan.warnings) {
        ctx.printer.warn(warning);
    }
    if args.check {
        return check(ctx, args, dir, &root, &plans);
    }
    take_over(ctx, args, dir, &root, &plans)?;
    let mut total = berth_harness::Applied::default();
    for (dir, plan) in &plans {
        let applied = berth_harness::apply(dir, plan)
            .with_context(|| format!("could not write `{}`", dir.display()))?;
        total.written.extend(applied.written);
        total.unchanged += applied.unchanged;
        total.removed.extend(applied.removed);
    }
    let place = place(args, dir, managed.as_deref());
    ctx.printer.status(
        "Wrote",
        &format!(
            "{} for {} in {place} ({} written, {} unchanged, {} removed)",
            super::approve::count(plans.first().map_or(0, |(_, p)| p.plugins), "plugin"),
            harness.display_name(),
            total.written.len(),
            total.unchanged,
            total.removed.len()
        ),
    );
    // The process ends next: freeing the set (each plugin's model, file by file) and the
    // plans one allocation at a time took a tenth of a run that found nothing to write.
    std::mem::forget((set, plans));
    Ok(())
}

/// The exclusive lock on DIR itself (nothing is written into it): a second
/// `materialize` on the same folder, by any path and with any store, waits for this one,
/// saying so. `None` for `--check` of a folder that does not exist.
fn hold(ctx: &Context, dir: &Path) -> Result<Option<FileLock>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let lock = FileLock::acquire_folder(dir, || {
        ctx.printer.status(
            "Waiting",
            &format!(
                "for another `berth materialize` writing `{}`",
                dir.display()
            ),
        );
    })
    .with_context(|| format!("could not lock `{}`", dir.display()))?;
    Ok(Some(lock))
}

/// DIR; left out, the user's own folder of a harness that has one (claude: its config
/// folder), named and confirmed on a terminal, else only with `--yes` (or `--check`,
/// which writes nothing).
fn target_dir(ctx: &Context, args: &MaterializeArgs) -> Result<PathBuf> {
    use std::io::IsTerminal as _;
    if let Some(dir) = &args.dir {
        return Ok(dir.clone());
    }
    let harness = args.target.0;
    if harness.id() != "claude" {
        anyhow::bail!(
            "name the folder to write for {}: `berth materialize {} DIR` ({})",
            harness.display_name(),
            harness.id(),
            harness.folder()
        );
    }
    let default = match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => ctx
            .home_dir
            .as_ref()
            .map(|home| home.join(".claude"))
            .context("`HOME` is not set, so there is no default Claude Code folder; name one: `berth materialize claude DIR`")?,
    };
    if args.yes || args.check {
        return Ok(default);
    }
    let shown = default.display();
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        anyhow::bail!(
            "no folder given: for claude that is your Claude Code folder `{shown}`; pass `--yes` to write there, or name a folder (`berth materialize claude DIR`)"
        );
    }
    eprint!("Write the locked plugins into your Claude Code folder `{shown}`? [y/N] ");
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("could not read the answer")?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(default)
    } else {
        anyhow::bail!("not confirmed; nothing was written")
    }
}

/// The repository of `--project`, as Claude Code names a project (its real path); an
/// error for a target without a project form.
fn project_repo(harness: &dyn Harness, args: &MaterializeArgs) -> Result<Option<PathBuf>> {
    let Some(repo) = &args.project_repo else {
        return Ok(None);
    };
    if !harness.has_project_form() {
        let with: Vec<&dyn Harness> = TARGETS
            .iter()
            .copied()
            .filter(|t| t.has_project_form())
            .collect();
        let ids: Vec<&str> = with.iter().map(|t| t.id()).collect();
        let names: Vec<&str> = with.iter().map(|t| t.display_name()).collect();
        anyhow::bail!(
            "`--project` is for the {} target only ({}'s project settings); `{}` has no project form",
            ids.join(", "),
            names.join(", "),
            harness.id()
        );
    }
    let real = std::fs::canonicalize(repo).with_context(|| {
        format!(
            "the repository `{}` of `--project` is not a folder here",
            repo.display()
        )
    })?;
    Ok(Some(real))
}

/// The managed settings file of `--managed-settings`, absolute; an error for a target
/// without managed settings.
fn managed_file(harness: &dyn Harness, args: &MaterializeArgs) -> Result<Option<PathBuf>> {
    let Some(file) = &args.managed_settings else {
        return Ok(None);
    };
    let Some(form) = harness.managed_form() else {
        let ids: Vec<&str> = TARGETS
            .iter()
            .filter(|t| t.has_managed_form())
            .map(|t| t.id())
            .collect();
        let (last, rest) = ids.split_last().expect("a target writes managed settings");
        let ids = match rest {
            [] => format!("the {last} target"),
            _ => format!("the {} and {last} targets", rest.join(", ")),
        };
        anyhow::bail!(
            "`--managed-settings` is for {ids} only; `{}` has none berth writes (docs/harnesses.md says what each client has)",
            harness.id()
        );
    };
    if file.file_name().is_none() || file.as_os_str().to_string_lossy().ends_with('/') {
        anyhow::bail!(
            "`--managed-settings` takes a file (`{}` for {}), not the folder `{}`",
            form.example(),
            harness.display_name(),
            file.display()
        );
    }
    let file = absolute(file)?;
    if let Some(folder) = file.parent().filter(|_| !args.check) {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("could not create `{}`", folder.display()))?;
    }
    Ok(Some(file))
}

/// Where the set was written, for the status line: DIR, and the repository it is enabled
/// in and the managed settings enforcing it, when given.
fn place(args: &MaterializeArgs, dir: &Path, managed: Option<&Path>) -> String {
    let shown = dir.display();
    let mut place = match &args.project_repo {
        Some(repo) => format!("`{shown}`, enabled in `{}`", repo.display()),
        None => format!("`{shown}`"),
    };
    if let Some(file) = managed {
        place.push_str(&format!(", enforced by `{}`", file.display()));
    }
    place
}

/// What berth did not write where the plans write, in every folder before any is written:
/// an error naming each, or with `--force` each moved aside.
fn take_over(
    ctx: &Context,
    args: &MaterializeArgs,
    dir_given: &Path,
    root: &Path,
    plans: &[(PathBuf, Plan)],
) -> Result<()> {
    let mut found = Vec::new();
    for (dir, plan) in plans {
        let foreign = berth_harness::foreign(dir, plan)
            .with_context(|| format!("could not write `{}`", dir.display()))?;
        found.extend(foreign.into_iter().map(|f| (dir, f)));
    }
    if found.is_empty() {
        return Ok(());
    }
    // Paths in the harness folder are named relative to it, others in full.
    let shown = |dir: &Path, rel: &Path| {
        if dir == root {
            rel.display().to_string()
        } else {
            dir.join(rel).display().to_string()
        }
    };
    if !args.force {
        let list: Vec<String> = found
            .iter()
            .map(|(dir, f)| format!("  {}: {}", shown(dir, &f.path), f.what))
            .collect();
        anyhow::bail!(
            "`{}` holds what berth did not write where it would write for {}:\n{}\nberth leaves it alone and wrote nothing: move it away, or run again with `--force` to move each aside (to NAME.berth-backup-N)",
            dir_given.display(),
            args.target.0.display_name(),
            list.join("\n")
        );
    }
    let mut moved: Vec<PathBuf> = Vec::new();
    for (dir, f) in &found {
        // Inside a folder already moved aside (found sorted, a folder before what it holds).
        if moved.iter().any(|m| dir.join(&f.path).starts_with(m)) {
            continue;
        }
        moved.push(dir.join(&f.path));
        let aside = berth_harness::move_aside(dir, &f.path)
            .with_context(|| format!("could not move `{}` aside", dir.join(&f.path).display()))?;
        ctx.printer.warn(&format!(
            "moved `{}` ({}) aside to `{}`",
            shown(dir, &f.path),
            f.what,
            shown(dir, &aside)
        ));
    }
    Ok(())
}

/// `--check`: the drift of every planned folder, or exit 1 naming it.
fn check(
    ctx: &Context,
    args: &MaterializeArgs,
    dir_given: &Path,
    root: &Path,
    plans: &[(PathBuf, Plan)],
) -> Result<()> {
    let harness = args.target.0;
    let shown = dir_given.display();
    let mut drift = Vec::new();
    for (dir, plan) in plans {
        let found = berth_harness::check(dir, plan)
            .with_context(|| format!("could not read `{}`", dir.display()))?;
        // Paths in the harness folder are named relative to it, others in full.
        drift.extend(found.iter().map(|d| {
            if dir == root {
                d.to_string()
            } else {
                d.under(dir).to_string()
            }
        }));
    }
    if drift.is_empty() {
        ctx.printer.status(
            "Checked",
            &format!(
                "`{shown}` holds the locked set for {}",
                harness.display_name()
            ),
        );
        return Ok(());
    }
    let mut again = match &args.project_repo {
        Some(repo) => format!(" --project {}", repo.display()),
        None => String::new(),
    };
    if let Some(file) = &args.managed_settings {
        again.push_str(&format!(" --managed-settings {}", file.display()));
    }
    ctx.printer.error(&format!(
        "`{shown}` drifted from the locked set for {} ({} paths); run `berth materialize {} {shown}{again}` to restore it",
        harness.display_name(),
        drift.len(),
        harness.id()
    ));
    for d in &drift {
        ctx.printer.note(d);
    }
    Err(Exit(1).into())
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("`{}` has no absolute form", path.display()))
}
