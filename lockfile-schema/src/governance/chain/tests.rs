use super::*;
use crate::governance::parse_policy;

fn chain(files: &[(&str, &str)]) -> Result<Policy, PolicyError> {
    chain_under("https://github.com", files)
}

fn chain_under(github_url: &str, files: &[(&str, &str)]) -> Result<Policy, PolicyError> {
    Policy::from_chain(
        files
            .iter()
            .map(|(label, text)| {
                (
                    (*label).to_owned(),
                    parse_policy(text, label).expect("valid"),
                )
            })
            .collect(),
        Canon::new(github_url),
    )
}

#[test]
fn a_child_may_not_allow_what_a_parent_denies() {
    let e = chain(&[
        ("org.toml", "[capabilities]\nhooks = \"deny\"\n"),
        ("team.toml", "[capabilities]\nhooks = \"allow\"\n"),
    ])
    .expect_err("loosens");
    let text = e.to_string();
    assert!(
        text.contains("`team.toml` sets hooks = \"allow\""),
        "{text}"
    );
    assert!(text.contains("`org.toml` sets it to \"deny\""), "{text}");
    let e = chain(&[
        ("org.toml", "[capabilities]\nhidden_unicode = \"deny\"\n"),
        ("team.toml", "[capabilities]\nhidden_unicode = \"warn\"\n"),
    ])
    .expect_err("loosens");
    assert_eq!(
        (e.child.as_str(), e.parent.as_str()),
        ("team.toml", "org.toml")
    );
}

#[test]
fn a_child_may_tighten_and_the_strictest_wins() {
    let policy = chain(&[
        (
            "org.toml",
            "[capabilities]\nhooks = \"approve\"\nmcp_stdio = \"approve\"\n",
        ),
        ("team.toml", "[capabilities]\nhooks = \"deny\"\n"),
    ])
    .expect("tightens");
    assert_eq!(
        policy.capability(Capability::Hooks),
        (Level::Deny, Some("team.toml"))
    );
    assert_eq!(
        policy.capability(Capability::McpStdio),
        (Level::Approve, Some("org.toml"))
    );
    assert_eq!(
        policy.capability(Capability::Executables),
        (Level::Allow, None)
    );
    assert_eq!(policy.hidden_unicode(), (UnicodeLevel::Deny, None));
    assert_eq!(Policy::default().hidden_unicode().0, UnicodeLevel::Deny);
}

#[test]
fn sources_intersect_and_a_wider_allow_list_is_refused() {
    let e = chain(&[
        ("org.toml", "[sources]\nallow = [\"github:acme/*\"]\n"),
        ("team.toml", "[sources]\nallow = [\"github:other/*\"]\n"),
    ])
    .expect_err("wider");
    assert!(e.to_string().contains("allows only `github:acme/*`"), "{e}");
    let e = chain(&[
        ("org.toml", "[sources]\ndeny = [\"github:acme/x-*\"]\n"),
        (
            "team.toml",
            "[sources]\nallow = [\"github:acme/x-tools\"]\n",
        ),
    ])
    .expect_err("denied");
    assert!(e.to_string().contains("denies `github:acme/x-*`"), "{e}");
    let policy = chain(&[
        (
            "org.toml",
            "[sources]\nallow = [\"github:acme/*\", \"github:anthropics/market\"]\n",
        ),
        (
            "team.toml",
            "[sources]\ndeny = [\"github:acme/experimental-*\"]\n",
        ),
    ])
    .expect("tightens");
    assert_eq!(policy.check_source("github:acme/tools", None), Ok(()));
    assert_eq!(
        policy.check_source("https://x.example/y.git", Some("github:Anthropics/market")),
        Ok(())
    );
    let denied = policy
        .check_source("github:acme/experimental-a", None)
        .expect_err("denied");
    assert_eq!(
        (denied.file.as_str(), denied.reason),
        ("team.toml", "denied by")
    );
    let outside = policy
        .check_source("github:evil/x", Some("./anthropics/market"))
        .expect_err("not allowed");
    assert_eq!(
        (outside.file.as_str(), outside.reason),
        ("org.toml", "not in the allow list of")
    );
}

#[test]
fn a_marketplace_is_read_unless_a_deny_pattern_matches_it() {
    let policy = chain(&[
        ("org.toml", "[sources]\nallow = [\"github:acme/*\"]\n"),
        ("team.toml", "[sources]\ndeny = [\"github:evil/*\"]\n"),
    ])
    .expect("tightens");
    // Not on the allow list, but a plugin picked from it may pass by its own source.
    assert_eq!(
        policy.check_marketplace_source("github:other/market"),
        Ok(())
    );
    let denied = policy
        .check_marketplace_source("github:Evil/market")
        .expect_err("denied");
    assert_eq!(
        (denied.file.as_str(), denied.reason, denied.rule.as_str()),
        ("team.toml", "denied by", "sources.deny = \"github:evil/*\"")
    );
    let refused = policy
        .check_marketplace_source("https://h.example/a/../b")
        .expect_err("no canonical form");
    assert_eq!(
        (refused.file.as_str(), refused.reason),
        ("org.toml", "refused by")
    );
    assert_eq!(
        Policy::default().check_marketplace_source("https://h/a/../b"),
        Ok(())
    );
}

#[test]
fn remote_hosts() {
    let policy = chain(&[(
        "p.toml",
        "[capabilities]\nmcp_remote_hosts = [\"*.acme.dev\", \"mcp.example.com\"]\n",
    )])
    .expect("valid");
    assert!(policy.has_remote_hosts());
    assert_eq!(policy.check_remote_host("https://a.acme.dev/mcp"), Ok(()));
    assert_eq!(
        policy.check_remote_host("https://MCP.example.com:8443/x"),
        Ok(())
    );
    // A user or password in the URL is refused: it is how `evil@x.acme.dev` reads as
    // an allowed host to a naive eye.
    assert!(
        policy
            .check_remote_host("https://u:p@mcp.example.com/x")
            .is_err()
    );
    let refused = policy
        .check_remote_host("https://evil.dev/mcp")
        .expect_err("refused");
    assert_eq!(
        (refused.host.as_str(), refused.why.as_deref()),
        ("evil.dev", None)
    );
}

#[test]
fn a_remote_host_is_the_one_a_whatwg_parser_connects_to() {
    let policy = chain(&[(
        "p.toml",
        "[capabilities]\nmcp_remote_hosts = [\"*.acme.dev\", \"::1\", \"Mcp.Example.com.\"]\n",
    )])
    .expect("valid");
    assert_eq!(policy.check_remote_host("http://[::1]:80/x"), Ok(()));
    assert_eq!(
        policy.check_remote_host("https://mcp.example.com./x"),
        Ok(())
    );
    // F7: WHATWG parsers read `\\` as `/`: the host is `evil.example`.
    let refused = policy
        .check_remote_host("https://evil.example\\.acme.dev/mcp")
        .expect_err("a backslash");
    assert!(refused.why.is_some_and(|w| w.contains("backslash")));
    for url in [
        "https://evil.example\\@x.acme.dev/",
        "https://evil.example@x.acme.dev/",
        "https://u:p@a.acme.dev/x",
        "a.acme.dev/mcp",
    ] {
        let refused = policy.check_remote_host(url).expect_err(url);
        assert!(refused.why.is_some(), "{url}");
    }
    // Without a host list, any URL is on no list to be refused from.
    assert_eq!(Policy::default().check_remote_host("not a url"), Ok(()));
}

#[test]
fn sources_are_matched_in_canonical_form() {
    // F8: a deny catches every spelling of the repository; an allow is not satisfied
    // by a spelling whose path leaves the allowed folder.
    let policy = chain_under(
        "http://127.0.0.1:8080",
        &[(
            "p.toml",
            "[sources]\nallow = [\"http://127.0.0.1:8080/acme/*\", \"https://git.example.com/team/*\"]\ndeny = [\"github:acme/experimental-*\", \"https://git.example.com/team/old\"]\n",
        )],
    )
    .expect("valid");
    for denied in [
        "github:ACME/Experimental-x",
        "github:acme/experimental-x.git",
        "http://127.0.0.1:8080/acme/experimental-x.git",
        "https://github.com/Acme/Experimental-X/",
        "git@github.com:acme/experimental-x.git",
        "https://git.example.com/TEAM/Old.git",
        "ssh://git@git.example.com/team/old",
    ] {
        let e = policy.check_source(denied, None).expect_err(denied);
        assert_eq!(e.reason, "denied by", "{denied}");
    }
    for refused in [
        "http://127.0.0.1:8080/acme/../ACME/Experimental-x.git",
        "http://127.0.0.1:8080/acme/%2e%2e/ACME/Experimental-x.git",
        "https://git.example.com/team\\..\\x",
    ] {
        let e = policy.check_source(refused, None).expect_err(refused);
        assert_eq!((e.reason, e.file.as_str()), ("refused by", "p.toml"));
        assert!(e.why.is_some_and(|w| w.contains(refused)), "{refused}");
    }
    assert_eq!(policy.check_source("github:ACME/Tools", None), Ok(()));
    assert_eq!(
        policy.check_source("git+https://git.example.com/team/tools.git", None),
        Ok(())
    );
    // An allow pattern does not fold the case of a path on a server berth does not
    // know: `TEAM` may be another account there.
    let outside = policy
        .check_source("https://git.example.com/TEAM/tools", None)
        .expect_err("another path");
    assert_eq!(outside.reason, "not in the allow list of");
    // A marketplace counts by its locked source.
    assert_eq!(
        policy.check_source("https://x.example/y", Some("github:acme/market")),
        Ok(())
    );
    assert!(
        policy
            .check_source("https://x.example/y", Some("./official"))
            .is_err()
    );
    // No `[sources]` rule: nothing to match, nothing refused.
    assert_eq!(
        Policy::default().check_source("https://h/a/../b", None),
        Ok(())
    );
}

#[test]
fn loosening_is_judged_in_canonical_form() {
    let e = chain(&[
        ("org.toml", "[sources]\ndeny = [\"github:acme/x-*\"]\n"),
        (
            "team.toml",
            "[sources]\nallow = [\"https://GitHub.com/ACME/X-Tools.git\"]\n",
        ),
    ])
    .expect_err("the URL of a denied repository");
    assert!(e.to_string().contains("denies `github:acme/x-*`"), "{e}");
    chain(&[
        ("org.toml", "[sources]\nallow = [\"github:acme/*\"]\n"),
        (
            "team.toml",
            "[sources]\nallow = [\"https://github.com/Acme/tools\"]\n",
        ),
    ])
    .expect("the URL of an allowed repository narrows the list");
    let e = chain(&[
        (
            "org.toml",
            "[capabilities]\nmcp_remote_hosts = [\"*.acme.dev\"]\n",
        ),
        (
            "team.toml",
            "[capabilities]\nmcp_remote_hosts = [\"EVIL.dev\"]\n",
        ),
    ])
    .expect_err("a wider host list");
    assert!(e.to_string().contains("`EVIL.dev`"), "{e}");
}

#[test]
fn signed_approvals_required_anywhere_are_required() {
    let policy = chain(&[
        ("org.toml", "require_signed_approvals = true\n"),
        ("team.toml", "allowed_signers = \"signers\"\n"),
    ])
    .expect("tightens");
    assert_eq!(policy.require_signed_approvals(), Some("org.toml"));
    let policy = chain(&[
        ("org.toml", "require_signed_approvals = false\n"),
        ("team.toml", "require_signed_approvals = true\n"),
    ])
    .expect("tightens");
    assert_eq!(policy.require_signed_approvals(), Some("team.toml"));
    assert_eq!(
        chain(&[("a.toml", "")])
            .expect("empty")
            .require_signed_approvals(),
        None
    );
    let e = chain(&[
        ("org.toml", "require_signed_approvals = true\n"),
        ("team.toml", "require_signed_approvals = false\n"),
    ])
    .expect_err("loosens");
    assert_eq!(
        e.to_string(),
        "`team.toml` sets require_signed_approvals = false, but `org.toml` sets it to true; a policy may only tighten what it extends: remove it from `team.toml` or change `org.toml`"
    );
}

#[test]
fn every_file_s_exclude_newer_is_an_ask_and_a_later_one_is_no_loosening() {
    let policy = chain(&[
        ("org.toml", "exclude-newer = \"14 days\"\n"),
        ("team.toml", "exclude-newer = \"7 days\"\n"),
        ("none.toml", "[capabilities]\nhooks = \"allow\"\n"),
    ])
    .expect("a later cutoff in a child is allowed: the earliest is used");
    let asks: Vec<(String, String)> = policy
        .release_age()
        .into_iter()
        .map(|a| (a.from, a.value.to_string()))
        .collect();
    assert_eq!(
        asks,
        [
            ("org.toml".to_owned(), "14 days".to_owned()),
            ("team.toml".to_owned(), "7 days".to_owned())
        ]
    );
}

#[test]
fn registry_signatures_required_anywhere_are_required_and_never_loosened() {
    let on = "[payloads]\nrequire_registry_signatures = true\n";
    let off = "[payloads]\nrequire_registry_signatures = false\n";
    let policy = chain(&[("org.toml", on), ("team.toml", "")]).expect("tightens");
    assert_eq!(policy.require_registry_signatures(), Some("org.toml"));
    let policy = chain(&[("org.toml", off), ("team.toml", on)]).expect("tightens");
    assert_eq!(policy.require_registry_signatures(), Some("team.toml"));
    assert_eq!(
        chain(&[("a.toml", "")])
            .expect("empty")
            .require_registry_signatures(),
        None
    );
    let e = chain(&[("org.toml", on), ("team.toml", off)]).expect_err("loosens");
    assert_eq!(
        e.to_string(),
        "`team.toml` sets require_registry_signatures = false, but `org.toml` sets it to true; a policy may only tighten what it extends: remove it from `team.toml` or change `org.toml`"
    );
}

#[test]
fn a_change_of_signer_gets_the_strictest_rule_and_a_child_never_loosens_it() {
    use crate::governance::SignerChange;
    let deny = "[sources]\nsigner_change = \"deny\"\n";
    let warn = "[sources]\nsigner_change = \"warn\"\n";
    let none = chain(&[("a.toml", "")]).expect("empty");
    assert_eq!(none.signer_change(), (SignerChange::Approve, None));
    let policy = chain(&[("org.toml", warn), ("team.toml", deny)]).expect("tightens");
    assert_eq!(
        policy.signer_change(),
        (SignerChange::Deny, Some("team.toml"))
    );
    let e = chain(&[("org.toml", deny), ("team.toml", warn)]).expect_err("loosens");
    assert_eq!(
        e.to_string(),
        "`team.toml` sets signer_change = \"warn\", but `org.toml` sets it to \"deny\"; a policy may only tighten what it extends: remove it from `team.toml` or change `org.toml`"
    );
}
