use super::*;

fn kind(s: &str) -> SourceKind {
    Source::parse(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .kind()
}

#[test]
fn parses_every_form_of_the_spec_table() {
    assert_eq!(
        Source::parse("github:acme/review-tools/plugins/review"),
        Ok(Source::GitHub {
            owner: "acme".into(),
            repo: "review-tools".into(),
            subpath: Some("plugins/review".into())
        })
    );
    assert_eq!(
        Source::parse("git+https://h/r.git"),
        Ok(Source::Git {
            url: "https://h/r.git".into()
        })
    );
    for git in [
        "https://h/o/r",
        "http://h/o/r.git",
        "git://h/r",
        "ssh://git@h/r",
        "file:///srv/repo",
        "git@github.com:o/r.git",
        "git+ssh://git@h/r",
        "git+file:///srv/r",
    ] {
        assert_eq!(kind(git), SourceKind::Git, "{git}");
    }
    for archive in [
        "https://h/p/lint-1.0.tar.gz",
        "http://h/x.zip",
        "file:///tmp/x.tgz",
        "https://h/x.tar?download=1",
    ] {
        assert_eq!(kind(archive), SourceKind::Archive, "{archive}");
    }
    for local in ["/abs", "./rel", "../rel", "~/p", "."] {
        assert_eq!(kind(local), SourceKind::Local, "{local}");
    }
}

#[test]
fn unknown_forms_suggest_github_or_dot_slash() {
    let err = Source::parse("acme/tools").expect_err("ambiguous");
    assert!(err.message.contains("github:acme/tools"), "{err}");
    assert!(err.message.contains("./acme/tools"), "{err}");
    let err = Source::parse("justaname").expect_err("unknown");
    assert!(err.message.contains("github:OWNER/REPO"), "{err}");
    assert!(Source::parse("github:onlyowner").is_err());
    assert!(Source::parse("github:o/r/../x").is_err());
    assert!(Source::parse("").is_err());
}

#[test]
fn repo_paths_are_normalised_and_kept_inside() {
    assert_eq!(normalize_repo_path("./plugins//a/"), Ok("plugins/a".into()));
    assert!(normalize_repo_path("/etc").is_err());
    assert!(normalize_repo_path("a/../../b").is_err());
    assert!(normalize_repo_path("./").is_err());
}
