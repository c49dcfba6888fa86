//! The approval rule as a property (issues #38 and #52): any change to a file that is not
//! prose, or to a part of prose that runs or grants (a shell line, granting front matter),
//! of an approved plugin invalidates its approval; a change to the rest of prose does too
//! in a plugin that runs code (a hook, an executable, a shell line), which may read it, and
//! does not in one that runs nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use berth_review::surface_of;
use proptest::prelude::*;

/// Files that are not prose: a hook's script and a manifest among them.
const CODE: [&str; 7] = [
    ".claude-plugin/plugin.json",
    "hooks/hooks.json",
    "scripts/run.sh",
    "lib/util.py",
    "skills/a/helper.py",
    "docs/guide.md",
    "bin/tool",
];

/// Prose files, each with front matter (but `README.md`).
const PROSE: [&str; 4] = [
    "skills/a/SKILL.md",
    "commands/c.md",
    "agents/g.md",
    "README.md",
];

/// One prose file: its granting front matter, its shell line and the rest of its text.
#[derive(Debug, Clone)]
struct Prose {
    tools: String,
    shell: Option<String>,
    body: String,
}

impl Prose {
    fn text(&self, rel: &str) -> String {
        let shell = self
            .shell
            .as_ref()
            .map(|s| format!("Context: !`{s}`\n"))
            .unwrap_or_default();
        if rel == "README.md" {
            return format!("# Plugin\n{shell}{}\n", self.body);
        }
        let name = rel
            .rsplit('/')
            .nth(if rel.ends_with("SKILL.md") { 1 } else { 0 });
        let name = name.unwrap_or("x").trim_end_matches(".md");
        format!(
            "---\nname: {name}\ndescription: {}\nallowed-tools: {}\n---\n{shell}{}\n",
            self.body.split_whitespace().next().unwrap_or("d"),
            self.tools,
            self.body
        )
    }
}

#[derive(Debug, Clone)]
enum Change {
    /// A file that is not prose gets new content.
    Code(usize, String),
    /// A file that is not prose gains or loses its exec bit.
    ExecBit(usize),
    /// A prose file's `allowed-tools`.
    Tools(usize, String),
    /// A prose file's shell line.
    Shell(usize, Option<String>),
    /// The rest of a prose file's text (its description's first word included).
    Body(usize, String),
}

fn words() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z]{1,8}", 1..6).prop_map(|w| w.join(" "))
}

fn prose() -> impl Strategy<Value = Prose> {
    (
        "[A-Z][a-z]{2,6}",
        prop::option::of("[a-z]{2,6} [a-z-]{1,6}"),
        words(),
    )
        .prop_map(|(tools, shell, body)| Prose { tools, shell, body })
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0..CODE.len(), "[a-z ]{1,20}").prop_map(|(i, t)| Change::Code(i, t)),
        (0..CODE.len()).prop_map(Change::ExecBit),
        (0..3usize, "[A-Z][a-z]{2,6}").prop_map(|(i, t)| Change::Tools(i, t)),
        (0..PROSE.len(), prop::option::of("[a-z]{2,6} [a-z]{1,6}"))
            .prop_map(|(i, s)| Change::Shell(i, s)),
        (0..PROSE.len(), words()).prop_map(|(i, b)| Change::Body(i, b)),
    ]
}

fn write(dir: &Path, rel: &str, text: &str, mode: u32) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The files that are not prose of a plugin that runs code, or of a quiet one (no
/// `bin/`, and a hooks file without hooks).
fn code(quiet: bool) -> &'static [&'static str] {
    if quiet {
        &CODE[..CODE.len() - 1]
    } else {
        &CODE
    }
}

fn code_text(rel: &str, seed: &str, quiet: bool) -> String {
    match rel {
        ".claude-plugin/plugin.json" => format!("{{\"name\": \"p\", \"description\": \"{seed}\"}}"),
        "hooks/hooks.json" if quiet => format!("{{\"description\": \"{seed}\"}}"),
        "hooks/hooks.json" => format!(
            "{{\"hooks\": {{\"PreToolUse\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"bash ${{CLAUDE_PLUGIN_ROOT}}/scripts/run.sh {seed}\"}}]}}]}}}}"
        ),
        _ => format!("{seed}\n"),
    }
}

fn digest(dir: &Path) -> String {
    surface_of("p", dir, None)
        .expect("surface")
        .approval_digest()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn an_approval_covers_what_runs_or_grants_and_nothing_else(
        seeds in prop::collection::vec("[a-z]{1,12}", CODE.len()),
        texts in prop::collection::vec(prose(), PROSE.len()),
        change in change(),
        quiet in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let code = code(quiet);
        let mut modes = vec![0o644; CODE.len()];
        for (i, rel) in code.iter().enumerate() {
            write(d, rel, &code_text(rel, &seeds[i], quiet), modes[i]);
        }
        let shell_before = texts.iter().any(|t| t.shell.is_some());
        let mut texts = texts;
        for (i, rel) in PROSE.iter().enumerate() {
            write(d, rel, &texts[i].text(rel), 0o644);
        }
        let approved = digest(d);
        let runs_or_grants = match change {
            Change::Code(i, text) => {
                prop_assume!(i < code.len());
                let new = code_text(code[i], &text, quiet);
                prop_assume!(new != code_text(code[i], &seeds[i], quiet));
                write(d, code[i], &new, modes[i]);
                true
            }
            Change::ExecBit(i) => {
                prop_assume!(i < code.len());
                modes[i] = 0o755;
                write(d, code[i], &code_text(code[i], &seeds[i], quiet), modes[i]);
                true
            }
            Change::Tools(i, tools) => {
                prop_assume!(tools != texts[i].tools);
                texts[i].tools = tools;
                true
            }
            Change::Shell(i, shell) => {
                prop_assume!(shell != texts[i].shell);
                texts[i].shell = shell;
                true
            }
            Change::Body(i, body) => {
                prop_assume!(body != texts[i].body);
                texts[i].body = body;
                false
            }
        };
        for (i, rel) in PROSE.iter().enumerate() {
            write(d, rel, &texts[i].text(rel), 0o644);
        }
        let now = digest(d);
        let runs_code = !quiet || shell_before;
        if runs_or_grants {
            prop_assert_ne!(now, approved, "an approval survived a change that runs or grants");
        } else if runs_code {
            prop_assert_ne!(now, approved, "an approval of a plugin that runs code survived a change to its prose");
        } else {
            prop_assert_eq!(now, approved, "a change to the prose of a plugin that runs nothing asked for approval again");
        }
    }
}
