//! The lines of one plugin's changes in `berth plugins diff`'s human forms: each hook,
//! server, file and shell line that was added, removed or changed, in words and as the
//! literal a reviewer reads (a command, a path, a name). `diff_report` sets them as text or
//! markdown and escapes what plugins wrote.

use berth_review::{Change, HookEntry, McpEntry, SurfaceDiff};

/// One line of a plugin's changes: `+` added, `-` removed, `~` changed; its words, and the
/// literal parts (commands, paths, names) to set in code.
pub(super) struct Line {
    pub(super) sign: char,
    pub(super) what: String,
    pub(super) literal: String,
}

fn line(sign: char, what: impl Into<String>, literal: impl Into<String>) -> Line {
    Line {
        sign,
        what: what.into(),
        literal: literal.into(),
    }
}

fn hook_text(h: &HookEntry) -> (String, String) {
    let matcher = if h.matcher.is_empty() || h.matcher == "*" {
        String::new()
    } else {
        format!(" [{}]", h.matcher)
    };
    let what = format!("{} hook on {}{matcher}", h.kind, h.event);
    (what, h.command.clone())
}

fn mcp_text(s: &McpEntry) -> String {
    match (&s.command, &s.url) {
        (Some(command), _) => std::iter::once(command.as_str())
            .chain(s.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(url)) => url.clone(),
        (None, None) => format!("({})", s.transport),
    }
}

/// `a, b` as `a`, `b`.
fn names(list: &[String]) -> String {
    list.iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What besides its identity differs between two versions of a hook.
fn hook_change(c: &Change<HookEntry>) -> String {
    let mut what = Vec::new();
    if c.old.timeout != c.new.timeout {
        what.push(format!("timeout {}s -> {}s", c.old.timeout, c.new.timeout));
    }
    if c.old.is_async != c.new.is_async {
        what.push(format!("async {} -> {}", c.old.is_async, c.new.is_async));
    }
    if what.is_empty() {
        what.push("other fields".to_owned());
    }
    what.join(", ")
}

/// What a plugin's diff runs that changed, one line each: hooks, MCP and LSP servers,
/// what cannot be modelled, the entry's definition, files, components, tools and shell
/// lines.
pub(super) fn lines(changes: &SurfaceDiff) -> Vec<Line> {
    let mut out = Vec::new();
    server_lines(changes, &mut out);
    offer_lines(changes, &mut out);
    rest_lines(changes, &mut out);
    out
}

/// What observed MCP servers offer the model differently: each tool, prompt, resource
/// and instruction text added, removed or changed, with the text a model would read.
fn offer_lines(changes: &SurfaceDiff, out: &mut Vec<Line>) {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(none)".to_owned(),
        other => other.to_string(),
    };
    for (server, change) in &changes.mcp_offers {
        if let Some((old, new)) = &change.record {
            out.push(line(
                '~',
                format!("MCP server `{server}`'s record"),
                format!("{old} -> {new}"),
            ));
        }
        for (offer, value) in &change.added {
            let description = value.get("description").map(text).unwrap_or_default();
            out.push(line(
                '+',
                format!("MCP server `{server}` offers {offer}"),
                description,
            ));
        }
        for offer in &change.removed {
            out.push(line(
                '-',
                format!("MCP server `{server}` offers {offer}"),
                "",
            ));
        }
        for (offer, fields) in &change.changed {
            for (field, (old, new)) in fields {
                out.push(line(
                    '~',
                    format!("MCP server `{server}`, {offer}: {field}"),
                    format!("{} -> {}", text(old), text(new)),
                ));
            }
        }
    }
}

/// The lines of changed hooks and MCP and LSP servers.
fn server_lines(changes: &SurfaceDiff, out: &mut Vec<Line>) {
    for h in &changes.hooks.added {
        let (what, cmd) = hook_text(h);
        out.push(line('+', what, cmd));
    }
    for h in &changes.hooks.removed {
        let (what, cmd) = hook_text(h);
        out.push(line('-', what, cmd));
    }
    for c in &changes.hooks.changed {
        let (what, cmd) = hook_text(&c.new);
        out.push(line('~', format!("{what} ({})", hook_change(c)), cmd));
    }
    for (name, s) in &changes.mcp_servers.added {
        out.push(line('+', format!("MCP server `{name}`"), mcp_text(s)));
    }
    for (name, s) in &changes.mcp_servers.removed {
        out.push(line('-', format!("MCP server `{name}`"), mcp_text(s)));
    }
    for (name, c) in &changes.mcp_servers.changed {
        let mut what = format!("MCP server `{name}` (was `{}`", mcp_text(&c.old));
        if !c.env_changed.is_empty() {
            what.push_str(&format!(
                "; environment values of {}",
                names(&c.env_changed)
            ));
        }
        if !c.headers_changed.is_empty() {
            what.push_str(&format!("; header values of {}", names(&c.headers_changed)));
        }
        what.push(')');
        out.push(line('~', what, mcp_text(&c.new)));
    }
    for (name, v) in &changes.lsp_servers.added {
        out.push(line(
            '+',
            format!("LSP server `{name}`"),
            v.shown.to_string(),
        ));
    }
    for (name, v) in &changes.lsp_servers.removed {
        out.push(line(
            '-',
            format!("LSP server `{name}`"),
            v.shown.to_string(),
        ));
    }
    for (name, c) in &changes.lsp_servers.changed {
        let env = if c.env_changed.is_empty() {
            String::new()
        } else {
            format!(" (environment values of {})", names(&c.env_changed))
        };
        out.push(line(
            '~',
            format!("LSP server `{name}`{env}"),
            c.new.shown.to_string(),
        ));
    }
}

/// The lines of the rest: what cannot be modelled, the entry's definition, files,
/// components, tools and shell lines.
fn rest_lines(changes: &SurfaceDiff, out: &mut Vec<Line>) {
    for u in &changes.unmodeled.added {
        let what = format!("{} berth cannot model", u.capability.as_str());
        out.push(line('+', what, format!("{}: {}", u.source, u.what)));
    }
    for u in &changes.unmodeled.removed {
        let what = format!("{} berth cannot model", u.capability.as_str());
        out.push(line('-', what, format!("{}: {}", u.source, u.what)));
    }
    if changes.definition_changed {
        out.push(line(
            '~',
            "what its marketplace entry defines",
            "(see the lock's `definition`)",
        ));
    }
    let names = [
        ("executable", &changes.executables),
        ("file a command names", &changes.named_files),
        ("file", &changes.files),
        (
            "shell lines or granting front matter of",
            &changes.prose_runs,
        ),
        (
            "prose (covered: the plugin runs code)",
            &changes.prose_files,
        ),
        ("skill", &changes.skills),
        ("command", &changes.commands),
        ("agent", &changes.agents),
    ];
    for (kind, diff) in names {
        for n in &diff.added {
            out.push(line('+', kind, n.clone()));
        }
        for n in &diff.removed {
            out.push(line('-', kind, n.clone()));
        }
        for n in &diff.changed {
            out.push(line('~', format!("{kind} (content)"), n.clone()));
        }
    }
    for t in &changes.tools_changed {
        let show = |tools: &Option<Vec<String>>| match tools {
            Some(tools) => format!("[{}]", tools.join(", ")),
            None => "(any)".to_owned(),
        };
        out.push(line(
            '~',
            format!("tools of {} `{}`: {} ->", t.kind, t.name, show(&t.old)),
            show(&t.new),
        ));
    }
    for sh in &changes.shell_changed {
        for added in sh.new.iter().filter(|l| !sh.old.contains(l)) {
            out.push(line(
                '+',
                format!("shell line of {} `{}`", sh.kind, sh.name),
                added.clone(),
            ));
        }
        for removed in sh.old.iter().filter(|l| !sh.new.contains(l)) {
            out.push(line(
                '-',
                format!("shell line of {} `{}`", sh.kind, sh.name),
                removed.clone(),
            ));
        }
    }
}
