//! Package runners: an MCP server's command line that fetches its code from a registry at
//! every start (`npx -y pkg@latest`, `uvx mcp-server-fetch`), read into what it asks for,
//! so the lock can pin it.
//!
//! Only forms whose meaning is certain are read: a flag the parser does not know, a
//! package that is not a registry name (a git URL, a path, an alias) or a shell in the
//! way makes the line unlockable, with the reason, and it is left as it was.

/// The registry a runner fetches from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ecosystem {
    /// The npm registry (`npx`, `npm exec`, `bunx`, `pnpm dlx`).
    Npm,
    /// A Python package index (`uvx`, `uv tool run`, `pipx run`).
    Python,
}

impl Ecosystem {
    /// `npm` or `python`, as the lock writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Ecosystem::Npm => "npm",
            Ecosystem::Python => "python",
        }
    }

    /// The ecosystem written as [`Ecosystem::as_str`] gives it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "npm" => Some(Ecosystem::Npm),
            "python" => Some(Ecosystem::Python),
            _ => None,
        }
    }
}

/// What a runner's command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerCall {
    /// The runner as written: `npx`, `npm exec`, `bunx`, `pnpm dlx`, `uvx`, `uv tool run`,
    /// `pipx run`.
    pub runner: String,
    /// Where the package comes from.
    pub ecosystem: Ecosystem,
    /// The package spec as written (`fake-mcp@^1`, `mcp-server-fetch`,
    /// `mcp-server-git==0.6.2`): what the lock keeps to know the line still asks for it.
    pub spec: String,
    /// The package's name (npm: with its scope; Python: normalised).
    pub package: String,
    /// The version requirement (npm: a range, a tag or a version, `latest` when none;
    /// Python: a PEP 440 specifier such as `==1.0`, empty when none).
    pub requirement: String,
    /// The program to run when the line names one other than the package's own
    /// (`npx -p PKG CMD`, `uvx --from SPEC CMD`).
    pub program: Option<String>,
    /// The arguments after the package, passed to the program.
    pub args: Vec<String>,
}

/// What starts a payload: an MCP server, a hook command or an LSP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum PayloadUse {
    /// A stdio MCP server (its name is the payload's `server`).
    #[default]
    McpServer,
    /// A `command` hook (the payload's `server` is its event).
    Hook,
    /// An LSP server (its name is the payload's `server`).
    LspServer,
}

impl PayloadUse {
    /// `mcp_server`, `hook` or `lsp_server`, as the lock writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadUse::McpServer => "mcp_server",
            PayloadUse::Hook => "hook",
            PayloadUse::LspServer => "lsp_server",
        }
    }

    /// The use written as [`PayloadUse::as_str`] gives it.
    pub fn parse(text: &str) -> Option<Self> {
        [
            PayloadUse::McpServer,
            PayloadUse::Hook,
            PayloadUse::LspServer,
        ]
        .into_iter()
        .find(|u| u.as_str() == text)
    }

    /// `MCP server `NAME``, `` `pre_tool_use` hook`` or `LSP server `NAME``, for messages.
    pub fn describe(self, server: &str) -> String {
        match self {
            PayloadUse::McpServer => format!("MCP server `{server}`"),
            PayloadUse::Hook => format!("`{server}` hook"),
            PayloadUse::LspServer => format!("LSP server `{server}`"),
        }
    }
}

/// One MCP server, hook or LSP server of a locked plugin that starts through a runner:
/// what the lock must pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadWant {
    /// The plugin.
    pub plugin: String,
    /// The server's name, or the hook's event.
    pub server: String,
    /// What starts it.
    pub used_by: PayloadUse,
    /// Its command line, read.
    pub call: RunnerCall,
}

impl RunnerCall {
    /// Whether the requirement floats (a tag, a range, nothing): `lock --upgrade` moves it.
    pub fn floats(&self) -> bool {
        match self.ecosystem {
            Ecosystem::Npm => !is_exact_npm_version(&self.requirement),
            Ecosystem::Python => {
                !self.requirement.starts_with("==") || self.requirement.contains('*')
            }
        }
    }
}

fn is_exact_npm_version(text: &str) -> bool {
    let core = text.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The words of a hook's shell command when it is a plain list of words (no quoting,
/// variables, redirections, pipes or globs a shell would act on); `None` otherwise, so
/// only a line whose meaning is certain is rewritten.
pub fn plain_words(command: &str) -> Option<Vec<String>> {
    let special = |c: char| "|&;<>()$`\\\"'*?[]{}~!#\n".contains(c);
    if command.chars().any(special) {
        return None;
    }
    let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    // `NAME=value cmd` sets a variable for the command.
    (!words.is_empty() && !words[0].contains('=')).then_some(words)
}

/// Reads `command args` as a package runner's line. `Ok(None)`: not a runner (a plain
/// program); `Err(why)`: a runner line berth cannot pin, and why.
pub fn parse_runner(command: &str, args: &[String]) -> Result<Option<RunnerCall>, String> {
    let program = command.rsplit('/').next().unwrap_or(command);
    let (runner, rest, ecosystem) = match (program, args.first().map(String::as_str)) {
        ("npx", _) => ("npx", args, Ecosystem::Npm),
        ("bunx", _) => ("bunx", args, Ecosystem::Npm),
        ("npm", Some("exec" | "x")) => ("npm exec", &args[1..], Ecosystem::Npm),
        ("pnpm", Some("dlx")) => ("pnpm dlx", &args[1..], Ecosystem::Npm),
        ("uvx", _) => ("uvx", args, Ecosystem::Python),
        ("uv", Some("tool")) if args.get(1).map(String::as_str) == Some("run") => {
            ("uv tool run", &args[2..], Ecosystem::Python)
        }
        ("uv", Some("x")) => ("uv tool run", &args[1..], Ecosystem::Python),
        ("pipx", Some("run")) => ("pipx run", &args[1..], Ecosystem::Python),
        _ => return Ok(None),
    };
    let parsed = match ecosystem {
        Ecosystem::Npm => npm_line(runner, rest),
        Ecosystem::Python => python_line(runner, rest),
    }
    .map_err(|why| format!("`{runner}`: {why}"))?;
    Ok(Some(parsed))
}

/// The flags of a runner: those that take no value and change nothing berth pins, those
/// that name the package, and those that take a value berth does not model.
struct Flags {
    plain: &'static [&'static str],
    package: &'static [&'static str],
}

const NPM_FLAGS: Flags = Flags {
    plain: &[
        "-y",
        "--yes",
        "-q",
        "--quiet",
        "--silent",
        "--bun",
        "--no-install=false",
    ],
    package: &["-p", "--package"],
};

const PYTHON_FLAGS: Flags = Flags {
    plain: &[
        "-q",
        "--quiet",
        "--isolated",
        "--no-progress",
        "--offline=false",
    ],
    package: &["--from", "--spec"],
};

/// Splits `args` into the package flag's value, the first positional and what follows it.
fn split_line<'a>(
    args: &'a [String],
    flags: &Flags,
) -> Result<(Option<&'a str>, &'a str, &'a [String]), String> {
    let mut from = None;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg == "--" {
            i += 1;
            break;
        }
        if !arg.starts_with('-') {
            break;
        }
        if flags.plain.contains(&arg) {
            i += 1;
            continue;
        }
        if let Some((flag, value)) = arg.split_once('=')
            && flags.package.contains(&flag)
        {
            from = Some(value);
            i += 1;
            continue;
        }
        if flags.package.contains(&arg) {
            let value = args
                .get(i + 1)
                .ok_or_else(|| format!("`{arg}` names no package"))?;
            from = Some(value.as_str());
            i += 2;
            continue;
        }
        return Err(format!(
            "the option `{arg}` is not one berth knows how to pin"
        ));
    }
    let first = args
        .get(i)
        .ok_or_else(|| "the line names no package".to_owned())?;
    Ok((from, first, &args[i + 1..]))
}

fn npm_line(runner: &str, args: &[String]) -> Result<RunnerCall, String> {
    let (from, first, rest) = split_line(args, &NPM_FLAGS)?;
    let (spec, program) = match from {
        Some(spec) => (spec, Some(first.to_owned())),
        None => (first, None),
    };
    let (package, requirement) = npm_spec(spec)?;
    Ok(RunnerCall {
        runner: runner.to_owned(),
        ecosystem: Ecosystem::Npm,
        spec: spec.to_owned(),
        package,
        requirement,
        program,
        args: rest.to_vec(),
    })
}

/// `name`, `name@range`, `@scope/name@tag` into the name and the requirement (`latest`
/// when none). Git URLs, paths, tarballs and aliases are not registry packages.
pub fn npm_spec(spec: &str) -> Result<(String, String), String> {
    let (name, requirement) = match spec.strip_prefix('@') {
        Some(scoped) => match scoped.split_once('@') {
            Some((name, req)) => (format!("@{name}"), req),
            None => (spec.to_owned(), ""),
        },
        None => match spec.split_once('@') {
            Some((name, req)) => (name.to_owned(), req),
            None => (spec.to_owned(), ""),
        },
    };
    let valid_part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._~".contains(&b))
    };
    let valid = match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, pkg)| valid_part(scope) && valid_part(pkg)),
        None => valid_part(&name),
    };
    if !valid || requirement.contains(':') || requirement.contains('/') {
        return Err(format!(
            "`{spec}` is not a package of the registry (a git URL, path, tarball or alias)"
        ));
    }
    let requirement = if requirement.is_empty() {
        "latest".to_owned()
    } else {
        requirement.to_owned()
    };
    Ok((name, requirement))
}

fn python_line(runner: &str, args: &[String]) -> Result<RunnerCall, String> {
    let (from, first, rest) = split_line(args, &PYTHON_FLAGS)?;
    let (spec, program) = match from {
        Some(spec) => (spec, Some(first.to_owned())),
        None => (first, None),
    };
    let (package, requirement) = python_spec(spec)?;
    Ok(RunnerCall {
        runner: runner.to_owned(),
        ecosystem: Ecosystem::Python,
        spec: spec.to_owned(),
        package,
        requirement,
        program,
        args: rest.to_vec(),
    })
}

/// `name`, `name==1.0`, `name>=1,<2`, `name@1.0`, `name@latest` into the normalised name
/// and a PEP 440 specifier (empty when none). Extras, URLs and markers are not pinned.
pub fn python_spec(spec: &str) -> Result<(String, String), String> {
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    let (name, tail) = spec.split_at(end);
    if name.is_empty() {
        return Err(format!("`{spec}` is not a package of an index"));
    }
    let requirement = match tail.strip_prefix('@') {
        Some("latest") => String::new(),
        Some(version) if !version.is_empty() && !version.contains(['/', ':']) => {
            format!("=={version}")
        }
        Some(_) => return Err(format!("`{spec}` is not a package of an index (a URL)")),
        None if tail.is_empty() => String::new(),
        None if tail.starts_with(['=', '<', '>', '!', '~'])
            && !tail.contains([';', '[', ' ', '@']) =>
        {
            tail.to_owned()
        }
        None => {
            return Err(format!(
                "`{spec}` has extras, a marker or a URL, which berth does not pin"
            ));
        }
    };
    Ok((crate::normalize_package_name(name), requirement))
}

#[cfg(test)]
mod tests;
