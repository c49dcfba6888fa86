//! `berth init` (a manifest that explains itself) and `berth completions SHELL`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::args::InitArgs;
use crate::context::{Failure, write_atomically};
use crate::printer::Printer;

/// The manifest `init` writes: no plugin yet, each kind of entry shown in comments.
pub const TEMPLATE: &str = r#"# The plugins this project's agents run with. `berth plugins add SOURCE` adds one and
# locks it into plugins.lock, pinned to an exact commit and content hash; commit both
# files. `berth plugins sync` then fills the store, and `berth run`, `berth materialize`
# and the OpenHands SDK read the set from the lock and the store alone.
#
# A plugin in a git repository, at a tag or branch (`ref`), or the newest tag a
# semver range allows (`version`); `repo_path` when it is a folder of the repository:
#
# [[plugin]]
# source = "github:OWNER/REPO"
# ref = "v1.2.0"
# repo_path = "plugins/review"
#
# An archive, or a folder of this repository:
#
# [[plugin]]
# source = "https://example.com/lint-1.0.tar.gz"
#
# [[plugin]]
# source = "./plugins/house-rules"
#
# A marketplace, whose plugins are then asked for by name (`source = "PLUGIN@NAME"`,
# or `berth plugins add PLUGIN@NAME`); `berth marketplace search WORD` looks through it:
#
# [[marketplace]]
# name = "official"
# source = "github:anthropics/claude-plugins-official"
"#;

pub fn run(args: &InitArgs, printer: &Printer) -> Result<()> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let manifest = dir.join("plugins.toml");
    let shown = shown(&manifest);
    if manifest.exists() {
        return Err(Failure {
            message: format!(
                "`{shown}` already exists; add plugins to it with `berth plugins add SOURCE`"
            ),
            notes: Vec::new(),
        }
        .into());
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("could not create `{}`", dir.display()))?;
    write_atomically(&manifest, TEMPLATE.as_bytes())
        .with_context(|| format!("could not write `{shown}`"))?;
    printer.status("Created", &format!("`{shown}`"));
    let next = if args.dir.is_some() {
        format!("cd {} && berth plugins add SOURCE", dir.display())
    } else {
        "berth plugins add SOURCE".to_owned()
    };
    printer.status(
        "Next",
        &format!("`{next}` (SOURCE: `github:OWNER/REPO`, a URL, `./path`)"),
    );
    Ok(())
}

/// `plugins.toml` as the user named its folder (`./` left out).
fn shown(path: &Path) -> String {
    path.strip_prefix(".").unwrap_or(path).display().to_string()
}

/// Prints `shell`'s completion script for the whole command line on stdout.
pub fn completions(shell: clap_complete::Shell) {
    use clap::CommandFactory as _;
    use std::io::Write as _;
    let mut command = crate::args::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "berth", &mut script);
    // A closed pipe (`berth completions bash | head`) ends quietly.
    let _ = std::io::stdout().lock().write_all(&script);
}
