//! The README and the book in `docs/` (issue #26) stay true: every `berth` command they
//! show still parses (each is run with `--help`, so a subcommand or flag that was renamed
//! or removed fails here), every relative link leads to a file and heading that exist, the
//! README stays short with its two set-up commands, and the README's five-minute tour runs
//! for real, hermetically: git repositories built at test time and a server on 127.0.0.1.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{GitRepo, ServeProcess, TestContext, apply_env, berth_bin, copy_tree, fixtures};
use serde_json::Value;

/// The root of the repository, where README.md and docs/ are.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository root")
}

/// README.md, then every page of the book, each with its path relative to the root (how
/// failures name it).
fn pages() -> Vec<(String, String)> {
    let root = repo_root();
    let mut names = vec!["README.md".to_owned()];
    let mut book: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .map(|entry| entry.expect("docs/ entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    book.sort();
    names.extend(book);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(root.join(&name)).expect("read a page");
            (name, text)
        })
        .collect()
}

/// A fenced code block: its info string (`sh`, `toml`, ...), the page line of its first
/// line of content, and its lines.
#[derive(Debug)]
pub(crate) struct Block {
    pub(crate) lang: String,
    pub(crate) first_line: usize,
    pub(crate) lines: Vec<String>,
}

/// The fenced code blocks of a Markdown text, in order.
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    lang: info.trim().to_owned(),
                    first_line: index + 2,
                    lines: Vec::new(),
                });
            }
            (Some(_), Some(_)) => found.push(open.take().expect("an open block")),
            (Some(block), None) => block.lines.push(line.to_owned()),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a code block is never closed");
    found
}

/// The languages whose blocks hold commands a reader types.
pub(crate) const SHELL: [&str; 4] = ["sh", "bash", "console", "shell"];

/// One word of a command line, or a shell operator between commands.
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Op(String),
}

/// Splits one command line as the shell does, as far as the pages need: quotes,
/// backslash escapes, `# comments`, and the operators `&&`, `||`, `|`, `;`, `&`, `<`, `>`.
fn tokenize(line: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    // A word may be empty but quoted (`''`), so whether one is open is kept apart.
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '#' if !in_word => break,
            ' ' | '\t' => {
                if in_word {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                    in_word = false;
                }
            }
            '&' | '|' | ';' | '<' | '>' => {
                if in_word {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                    in_word = false;
                }
                let mut op = c.to_string();
                if (c == '&' || c == '|' || c == '>') && chars.peek() == Some(&c) {
                    op.push(chars.next().expect("the doubled operator"));
                }
                tokens.push(Token::Op(op));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        tokens.push(Token::Word(word));
    }
    tokens
}

/// The `NAME=value` assignments a command line starts with.
type Env = Vec<(String, String)>;

/// A `berth` command found on a page: where, as written, and what to run.
#[derive(Debug)]
struct Found {
    line: usize,
    text: String,
    env: Env,
    args: Vec<String>,
}

/// The `berth` commands of a block: lines (joined over trailing backslashes) whose commands
/// start with `berth`, `$ berth` or `cargo run ... -p berth ... --`, after any `NAME=value`
/// assignments. Usage notation is read as the reader reads it: `[--json]` is the flag
/// `--json`, and `|` between brackets separates alternatives, not commands.
fn berth_commands(block: &Block) -> Vec<Found> {
    let mut found = Vec::new();
    let mut joined = String::new();
    let mut start = 0;
    for (offset, line) in block.lines.iter().enumerate() {
        if joined.is_empty() {
            start = block.first_line + offset;
        }
        if let Some(head) = line.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            continue;
        }
        joined.push_str(line);
        let text = std::mem::take(&mut joined);
        let trimmed = text.trim();
        let trimmed = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        for segment in segments(tokenize(trimmed)) {
            if let Some((env, args)) = berth_args(&segment) {
                found.push(Found {
                    line: start,
                    text: trimmed.to_owned(),
                    env,
                    args,
                });
            }
        }
    }
    found
}

/// The simple commands of a line's tokens: split at `&&`, `||`, `;`, `&` and pipes (the
/// command before a pipe is still a command), with redirections and their targets left out.
fn segments(tokens: Vec<Token>) -> Vec<Vec<String>> {
    let mut segments = vec![Vec::new()];
    let mut depth = 0usize;
    let mut tokens = tokens.into_iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word) => {
                depth += word.chars().take_while(|&c| c == '[').count();
                let closed = word.matches(']').count();
                let word: String = word.chars().filter(|&c| c != '[' && c != ']').collect();
                depth = depth.saturating_sub(closed);
                if !word.is_empty() {
                    segments.last_mut().expect("a segment").push(word);
                }
            }
            // `[--ref R | --version V]`: alternatives of one command.
            Token::Op(op) if op == "|" && depth > 0 => {}
            Token::Op(op) if op.starts_with('<') || op.starts_with('>') => {
                tokens.next();
            }
            Token::Op(_) => segments.push(Vec::new()),
        }
    }
    segments.retain(|segment| !segment.is_empty());
    segments
}

/// The environment and the arguments of `segment` when it runs berth.
fn berth_args(segment: &[String]) -> Option<(Env, Vec<String>)> {
    let mut env = Vec::new();
    let mut words = segment.iter();
    let program = loop {
        let word = words.next()?;
        match word.split_once('=') {
            Some((name, value))
                if !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_') =>
            {
                env.push((name.to_owned(), value.to_owned()));
            }
            _ => break word,
        }
    };
    let rest: Vec<String> = words.cloned().collect();
    let args = match program.as_str() {
        "berth" => rest,
        "cargo" => {
            let dashes = rest.iter().position(|w| w == "--")?;
            let (cargo, berth) = rest.split_at(dashes);
            let runs_berth = cargo.first().is_some_and(|w| w == "run")
                && cargo
                    .windows(2)
                    .any(|w| (w[0] == "-p" || w[0] == "--package") && w[1] == "berth");
            if !runs_berth {
                return None;
            }
            berth[1..].to_vec()
        }
        _ => return None,
    };
    Some((env, args))
}

/// `args` with `--help` where clap reads it: before a `--`, after which everything is the
/// command berth runs (`berth run -- CMD`), else at the end.
fn with_help(args: &[String]) -> Vec<String> {
    let mut args = args.to_vec();
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.insert(at, "--help".to_owned());
    args
}

#[test]
fn the_command_reader_reads_usage_notation_and_shell_as_the_pages_write_them() {
    let block = Block {
        lang: "sh".to_owned(),
        first_line: 10,
        lines: [
            "berth plugins add SOURCE [--ref R | --version V] [--force]",
            "berth agent exec [-- ARG]...      # run the agent (see agent-packages.md)",
            "BERTH_SUBSTITUTERS=\"s3://a/b https://c\" berth plugins sync",
            "berth serve --data-dir s3://fleet/conversations \\",
            "            --push-to s3://fleet/cache",
            "cd x && cargo run -q -p berth -- plugins sync && cargo run -p berth -- agent exec -- hi",
            "$ berth plugins show --json | jq . > set.json",
            "cargo test --workspace",
            "curl -s localhost:8000/health",
        ]
        .map(str::to_owned)
        .to_vec(),
    };
    let found = berth_commands(&block);
    let seen: Vec<(usize, Vec<String>, Vec<String>)> = found
        .iter()
        .map(|f| {
            (
                f.line,
                f.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                with_help(&f.args),
            )
        })
        .collect();
    let words = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        seen,
        vec![
            (
                10,
                vec![],
                words("plugins add SOURCE --ref R --version V --force --help")
            ),
            (11, vec![], words("agent exec --help -- ARG...")),
            (
                12,
                vec!["BERTH_SUBSTITUTERS=s3://a/b https://c".to_owned()],
                words("plugins sync --help")
            ),
            (
                13,
                vec![],
                words(
                    "serve --data-dir s3://fleet/conversations --push-to s3://fleet/cache --help"
                )
            ),
            (15, vec![], words("plugins sync --help")),
            (15, vec![], words("agent exec --help -- hi")),
            (16, vec![], words("plugins show --json --help")),
        ]
    );
}

/// The pages that show `berth` commands; each must yield some, so a reader that stopped
/// finding them (or a page that lost them) fails instead of passing with nothing checked.
const PAGES_WITH_COMMANDS: [&str; 7] = [
    "README.md",
    "docs/agent-packages.md",
    "docs/binary-caches.md",
    "docs/commands.md",
    "docs/lock-and-store.md",
    "docs/manifest.md",
    "docs/server.md",
];

#[test]
fn every_berth_command_in_the_readme_and_the_book_still_parses() {
    // A scratch home and working folder: `--help` writes nothing, but should a command
    // ever run instead, it runs here and not in the checkout or the caller's home.
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (page, text) in pages() {
        for block in blocks(&text)
            .iter()
            .filter(|b| SHELL.contains(&b.lang.as_str()))
        {
            for found in berth_commands(block) {
                let args = with_help(&found.args);
                let mut cmd = Command::new(berth_bin());
                apply_env(&mut cmd, scratch.path());
                let output = cmd
                    .current_dir(scratch.path())
                    .envs(found.env.iter().map(|(k, v)| (k, v)))
                    .env("BERTH_STORE", scratch.path().join("store"))
                    .args(&args)
                    .output()
                    .expect("run berth");
                assert!(
                    output.status.success(),
                    "{page}:{}: `{}` no longer parses: berth {args:?} exited with {}:\n{}",
                    found.line,
                    found.text,
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                );
                *counts.entry(page.clone()).or_default() += 1;
            }
        }
    }
    eprintln!("berth commands checked, by page: {counts:?}");
    for page in PAGES_WITH_COMMANDS {
        assert!(
            counts.get(page).is_some_and(|&n| n > 0),
            "no berth command found in {page} (checked: {counts:?})"
        );
    }
    assert!(
        counts.values().sum::<usize>() >= 40,
        "too few berth commands found: {counts:?}"
    );
}

/// The lines of the README section under `## TITLE`, up to the next `## ` heading.
fn readme_section(title: &str) -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let heading = format!("## {title}\n");
    let start = readme
        .find(&heading)
        .unwrap_or_else(|| panic!("README.md has no `## {title}` section"));
    let body = &readme[start + heading.len()..];
    body[..body.find("\n## ").unwrap_or(body.len())].to_owned()
}

#[test]
fn the_readme_is_short_and_has_exactly_the_two_set_up_commands() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 270, "README.md has {lines} lines; at most 270");
    let set_up = readme_section("Set up");
    let commands: Vec<String> = blocks(&set_up)
        .iter()
        .filter(|b| SHELL.contains(&b.lang.as_str()))
        .flat_map(|b| b.lines.iter())
        .filter(|l| !l.trim().is_empty())
        .map(|l| tokenize(l).into_iter().map(|t| format!("{t:?}")).collect())
        .collect();
    let expected: Vec<String> = [
        "cargo run -p berth -- plugins sync --manifest examples/team/plugins.toml",
        "cargo test --workspace",
    ]
    .iter()
    .map(|l| tokenize(l).into_iter().map(|t| format!("{t:?}")).collect())
    .collect();
    assert_eq!(commands, expected, "the set-up commands:\n{set_up}");
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation but `-` and `_`
/// dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings, with GitHub's `-1`, `-2` for repeated ones.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut fence = false;
    let mut anchors = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if fence || hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_default();
        anchors.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    anchors
}

/// The targets of a page's Markdown links (`[text](target)`), outside code blocks and
/// code spans (which may run over several lines).
fn link_targets(text: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence {
            prose.push_str(line);
        }
        prose.push('\n');
    }
    let mut plain = String::new();
    let mut code = false;
    for c in prose.chars() {
        if c == '`' {
            code = !code;
        } else if !code {
            plain.push(c);
        }
    }
    plain
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|target| target.trim().to_owned())
        .collect()
}

#[test]
fn every_relative_link_in_the_readme_and_the_book_leads_to_a_file_and_heading() {
    let root = repo_root();
    let mut checked = 0;
    for (page, text) in pages() {
        let folder = root
            .join(&page)
            .parent()
            .expect("a page's folder")
            .to_owned();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                root.join(&page)
            } else {
                folder.join(file)
            };
            assert!(
                path.exists(),
                "{page}: the link `{target}` leads to {}, which does not exist",
                path.display()
            );
            if !anchor.is_empty() {
                let linked = std::fs::read_to_string(&path).expect("read the linked page");
                assert!(
                    anchors(&linked).iter().any(|a| a == anchor),
                    "{page}: the link `{target}` names a heading {} does not have",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} relative links found");
}

/// The README's tour, as a reader follows it.
struct Tour {
    /// The manifest it writes (its first TOML block).
    manifest: String,
    /// The lock entry it shows (its second TOML block).
    lock: String,
    /// What it shows `berth plugins show` printing.
    shown: String,
    /// Its berth commands, in order.
    commands: Vec<Found>,
    /// The line it POSTs to the server with curl.
    curl: String,
    /// Its Python.
    python: String,
}

fn tour() -> Tour {
    let section = readme_section("A five-minute tour");
    let all = blocks(&section);
    let of = |lang: &str| -> Vec<String> {
        all.iter()
            .filter(|b| b.lang == lang)
            .map(|b| b.lines.join("\n"))
            .collect()
    };
    let toml = of("toml");
    assert_eq!(toml.len(), 2, "the tour shows a manifest and a lock entry");
    let text = of("text");
    let python = of("python");
    let commands: Vec<Found> = all
        .iter()
        .filter(|b| SHELL.contains(&b.lang.as_str()))
        .flat_map(berth_commands)
        .collect();
    let curl = all
        .iter()
        .filter(|b| SHELL.contains(&b.lang.as_str()))
        .flat_map(|b| b.lines.iter())
        .skip_while(|l| !l.starts_with("curl"))
        .take(2)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    Tour {
        manifest: toml[0].clone(),
        lock: toml[1].clone(),
        shown: text
            .first()
            .expect("the tour shows `show`'s output")
            .clone(),
        commands,
        curl,
        python: python.first().expect("the tour has Python").clone(),
    }
}

/// Fails unless every line of `expected` is in `actual`, whitespace aside; a line with `…`
/// (a path the reader's machine decides) must match up to it.
fn assert_shows(expected: &str, actual: &str, what: &str) {
    let squash = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let actual: Vec<String> = actual.lines().map(squash).collect();
    for line in expected.lines().map(squash).filter(|l| !l.is_empty()) {
        let head = line.split('…').next().unwrap_or_default().to_owned();
        assert!(
            actual.iter().any(|a| a.starts_with(&head)),
            "{what}: the README shows `{line}`, berth printed:\n{}",
            actual.join("\n")
        );
    }
}

/// `github:anthropics/claude-plugins-official` as a repository on this machine: a catalog
/// offering `code-review`, a plugin with one command, as the real one has.
fn official_marketplace(ctx: &TestContext) {
    let market = GitRepo::init(
        &ctx.upstream.join("anthropics/claude-plugins-official.git"),
        &ctx.home,
    );
    market.write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "claude-plugins-official", "plugins": [
            {"name": "code-review", "source": "./plugins/code-review",
             "description": "Automated code review for pull requests"}]}"#,
    );
    market.write(
        "plugins/code-review/.claude-plugin/plugin.json",
        r#"{"name": "code-review", "version": "1.0.0"}"#,
    );
    market.write(
        "plugins/code-review/commands/code-review.md",
        "---\ndescription: Code review a pull request\n---\nReview the pull request.\n",
    );
    market.commit("the official marketplace");
}

#[test]
fn the_readme_tour_runs_as_written() {
    let tour = tour();
    let ctx = TestContext::new();
    // The tour copies `fixtures/plugins/review` into `tour/` and works there; the test's
    // work folder is that `tour/`.
    copy_tree(&fixtures().join("plugins/review"), &ctx.work.join("review"));
    ctx.write_manifest(&format!("{}\n", tour.manifest));
    // The tour's marketplace step fetches from GitHub. TestContext points
    // `BERTH_GITHUB_URL` at its upstream folder, so the same `github:` source is served by
    // a repository built here and the commands run exactly as the README writes them.
    official_marketplace(&ctx);

    let data = ctx.root.join("data");
    let mut server = None;
    let mut shows = 0;
    let mut ran = Vec::new();
    for found in &tour.commands {
        let args: Vec<&str> = found.args.iter().map(String::as_str).collect();
        let line = format!("README.md:{}: `{}`", found.line, found.text);
        ran.push(args.join(" "));
        if args.first() == Some(&"serve") {
            // The tour's server listens on 127.0.0.1:8000 and keeps conversations in the
            // default data folder; here a free port and the test's own folder, so runs in
            // parallel and the caller's data stay apart.
            let mut cmd = ctx.berth();
            cmd.envs(found.env.iter().map(|(k, v)| (k, v)))
                .args(&args)
                .args(["--addr", "127.0.0.1:0", "--data-dir"])
                .arg(&data);
            server = Some(ServeProcess::start(cmd));
            continue;
        }
        let run = ctx.ok(&args);
        match args.as_slice() {
            ["plugins", "lock"] => assert_shows(&tour.lock, &ctx.lock_text(), &line),
            ["plugins", "show"] => {
                shows += 1;
                if shows == 1 {
                    assert_shows(&tour.shown, &run.stdout, &line);
                } else {
                    assert!(
                        run.stdout.contains("code-review:code-review"),
                        "{line}: the marketplace's plugin is in the set:\n{}",
                        run.stdout
                    );
                }
            }
            ["marketplace", "list", "official"] => assert!(
                run.stdout.contains("code-review@official"),
                "{line}: lists the marketplace's plugin:\n{}",
                run.stdout
            ),
            ["plugins", "outdated"] => assert!(
                run.stdout.contains("up to date"),
                "{line}: nothing moved since the lock:\n{}",
                run.stdout
            ),
            ["plugins", "add", "code-review@official"] => {
                let lock = ctx.lock_text();
                assert!(
                    lock.contains("requested = \"code-review@official\""),
                    "{line}: the lock pins the marketplace's plugin:\n{lock}"
                );
            }
            _ => {}
        }
    }
    for step in [
        "plugins lock",
        "plugins sync",
        "plugins show",
        "marketplace add official github:anthropics/claude-plugins-official",
        "plugins add code-review@official",
        "plugins outdated",
        "serve --allow-local-sources",
    ] {
        assert!(
            ran.iter().any(|r| r == step),
            "the tour runs `berth {step}` (it ran {ran:?})"
        );
    }

    // The tour's curl POSTs the copied plugin's absolute path (`$PWD/review` in `tour/`);
    // this is that request.
    let server = server.expect("the tour starts `berth serve`");
    assert!(
        tour.curl.contains("/api/conversations") && tour.curl.contains("$PWD/review"),
        "the tour's curl starts a conversation on ./review:\n{}",
        tour.curl
    );
    let review = ctx.work.join("review").display().to_string();
    let (status, body) = server.post(&serde_json::json!({"plugins": [{"source": review}]}));
    assert_eq!(status, 201, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("the answer is JSON");
    for key in ["id", "lockfile", "plugins", "plugin_set"] {
        assert!(answer.get(key).is_some(), "the answer has `{key}`: {body}");
    }
    let skills: Vec<&str> = answer["plugin_set"]["skills"]
        .as_array()
        .expect("the set's skills")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(skills, ["code-review", "review:check"], "{body}");

    python_step(&ctx, &tour, &server);
    server.stop();
}

/// The tour's Python, run on the module in `python/` with the binary under test (what
/// `PYTHONPATH=python` and `BERTH_BIN` do in a clone), against the tour's server.
fn python_step(ctx: &TestContext, tour: &Tour, server: &ServeProcess) {
    if Command::new("python3").arg("--version").output().is_err() {
        common::require_or_skip(
            "python3",
            "install python3 (3.10 or later) for the tour's Python step",
        );
        return;
    }
    assert!(
        tour.python.contains("http://127.0.0.1:8000"),
        "the tour's Python talks to the tour's server:\n{}",
        tour.python
    );
    let code = tour.python.replace("http://127.0.0.1:8000", &server.base);
    let mut cmd = Command::new("python3");
    apply_env(&mut cmd, &ctx.home);
    let output = cmd
        .current_dir(&ctx.work)
        .env("PYTHONPATH", repo_root().join("python"))
        .env("BERTH_BIN", berth_bin())
        .env("BERTH_STORE", &ctx.store)
        .args(["-c", &code])
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the tour's Python failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for plugin in ["review", "code-review"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{plugin} ")) && l.ends_with("synced")),
            "`plugins list` shows {plugin} locked and synced:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("['code-review', 'review:check']"),
        "the conversation's set has the plugin's skills:\n{stdout}"
    );
}
