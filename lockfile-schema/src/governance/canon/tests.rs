use super::*;

fn canon(text: &str) -> String {
    Canon::default().source(text).expect("canonical")
}

#[test]
fn one_github_repository_has_one_form() {
    for spelling in [
        "github:acme/tools",
        "github:ACME/Tools",
        "github:acme/tools.git",
        "github:acme/tools/",
        "github:acme//tools",
        "https://github.com/acme/tools",
        "https://GitHub.com/Acme/Tools.git/",
        "https://github.com:443/acme/tools",
        "https://user@github.com/acme/tools",
        "https://github.com./acme/tools",
        "https://github.com/%61cme/tools",
        "https://github.com/acme/./tools",
        "git+https://github.com/acme/tools.git",
        "http://github.com/acme/tools",
        "ssh://git@github.com/acme/tools.git",
        "ssh://git@github.com:22/acme/tools.git",
        "git://github.com/acme/tools",
        "git@github.com:acme/tools.git",
        "git@GitHub.com:/acme/tools",
        "https://www.github.com/acme/tools",
    ] {
        assert_eq!(canon(spelling), "github:acme/tools", "{spelling}");
    }
    // A folder inside the repository keeps its case: it is a path in a tree.
    assert_eq!(
        canon("github:ACME/tools/Plugins/X"),
        "github:acme/tools/Plugins/X"
    );
    // Another port is another server.
    assert_eq!(
        canon("https://github.com:8443/acme/tools"),
        "https://github.com:8443/acme/tools"
    );
}

#[test]
fn the_github_base_is_github() {
    let canon = Canon::new("http://127.0.0.1:8080/");
    assert_eq!(
        canon
            .source("http://127.0.0.1:8080/ACME/Tools.git")
            .as_deref(),
        Ok("github:acme/tools")
    );
    assert_eq!(
        canon.source("http://127.0.0.1:8080/acme/*").as_deref(),
        Ok("github:acme/*")
    );
    assert_eq!(
        canon.source("http://127.0.0.1:8081/acme/tools").as_deref(),
        Ok("http://127.0.0.1:8081/acme/tools")
    );
    let file = Canon::new("file:///srv/upstream");
    assert_eq!(
        file.source("file:///srv/upstream/acme/x.git").as_deref(),
        Ok("github:acme/x")
    );
}

#[test]
fn other_urls_lose_only_what_names_no_repository() {
    assert_eq!(
        canon("HTTPS://Git.Example.COM:443/Team/Tools.git/"),
        "https://git.example.com/Team/Tools"
    );
    // The row of docs/governance.md.
    assert_eq!(
        canon("git+HTTPS://User@Git.Example.com:443/Team/x.git/#main"),
        "https://git.example.com/Team/x"
    );
    assert_eq!(
        canon("ssh://git@Git.Example.com:22/team/tools.git"),
        "ssh://git.example.com/team/tools"
    );
    assert_eq!(
        canon("git@git.example.com:team/tools.git"),
        "ssh://git.example.com/team/tools"
    );
    assert_eq!(
        canon("https://h.example/a%2d%7e/%c3%a9/x.tar.gz?v=1#frag"),
        "https://h.example/a-~/%C3%A9/x.tar.gz?v=1"
    );
    assert_eq!(
        canon("https://h.example/a//b/./c"),
        "https://h.example/a/b/c"
    );
    assert_eq!(canon("file:///srv/x/.git"), "file:///srv/x/.git");
    // Patterns keep their `*`.
    assert_eq!(canon("https://*.Example.com/*"), "https://*.example.com/*");
    assert_eq!(canon("github:Acme/*"), "github:acme/*");
    assert_eq!(canon("*/tools"), "*/tools");
}

#[test]
fn a_spelling_that_could_reach_another_repository_is_refused() {
    for text in [
        "https://h.example/acme/../ACME/x.git",
        "https://h.example/acme/%2e%2e/ACME/x.git",
        "https://h.example/acme/.%2E/x",
        "https://h.example/acme/%2E./x",
        "https://h.example/acme\\..\\x",
        "https://evil.example\\@github.com/acme/x",
        "https://h.example/acme%2Fx",
        "https://h.example/acme%5cx",
        "github:acme/tools/../../evil/x",
        "github:acme/%2e%2e/evil",
        "git@h.example:acme/../x",
    ] {
        let e = Canon::default().source(text).expect_err(text);
        assert!(!e.0.is_empty(), "{text}");
    }
    assert!(Canon::default().source("https://exa mple.com/x").is_err());
}

#[test]
fn local_paths_are_resolved_by_name() {
    assert_eq!(canon("./plugins/x"), "./plugins/x");
    assert_eq!(canon("./plugins/../evil"), "./evil");
    assert_eq!(canon("./plugins/x/"), "./plugins/x");
    assert_eq!(canon("./a/./b//c"), "./a/b/c");
    assert_eq!(canon("../shared/x"), "../shared/x");
    assert_eq!(canon("./a/../../x"), "../x");
    assert_eq!(canon("./a/.."), ".");
    assert_eq!(canon("/srv/../../etc"), "/etc");
    assert_eq!(canon("~/p/../q"), "~/q");
}

#[test]
fn deny_matches_more_than_allow() {
    assert!(allow_matches("https://h/acme/*", "https://h/acme/x"));
    assert!(!allow_matches("https://h/acme/*", "https://h/ACME/x"));
    assert!(deny_matches("https://h/acme/*", "https://h/ACME/x"));
    assert!(!allow_matches("https://h/acme/*", "ssh://h/acme/x"));
    assert!(deny_matches("https://h/acme/*", "ssh://h/acme/x"));
    assert!(deny_matches("https://h/acme/*", "git://h/acme/x"));
    assert!(!deny_matches("https://h/acme/*", "file:///h/acme/x"));
    assert!(deny_matches("*://h/*", "ssh://h/x"));
}

#[test]
fn patterns_that_cannot_match_are_named() {
    assert!(pattern_problem("official").is_some_and(|m| m.contains("not a source")));
    assert!(pattern_problem("https://h/a/../b").is_some_and(|m| m.contains("`..`")));
    for fine in ["github:acme/*", "*", "https://*.acme.dev/*", "./plugins/*"] {
        assert_eq!(pattern_problem(fine), None, "{fine}");
    }
}

#[test]
fn remote_hosts_are_what_a_whatwg_parser_connects_to() {
    assert_eq!(
        url_host("https://A.acme.dev/mcp").as_deref(),
        Ok("a.acme.dev")
    );
    assert_eq!(
        url_host("https://a.acme.dev.:8443/").as_deref(),
        Ok("a.acme.dev")
    );
    assert_eq!(url_host("http://[::1]:80/x").as_deref(), Ok("::1"));
    assert_eq!(url_host("https://0x7f.1/x").as_deref(), Ok("127.0.0.1"));
    for refused in [
        "https://evil.example\\.acme.dev/mcp",
        "https://evil.example\\@x.acme.dev/",
        "https://u:p@mcp.example.com/x",
        "https://evil.example@x.acme.dev/",
        "not a url",
        "https://exa mple.acme.dev/",
        "data:text/plain,x.acme.dev",
    ] {
        assert!(url_host(refused).is_err(), "{refused}");
    }
}
