//! Reading a policy: the transport rules, the graph's bounds, allowed-signers files.
use super::*;

fn refusal(url: &str) -> Option<&'static str> {
    transport_refusal(&Url::parse(url).expect("a URL"))
}

#[test]
fn plain_http_only_to_a_loopback_address() {
    for allowed in [
        "https://policies.example.com/p.toml",
        "http://127.0.0.1:8080/p.toml",
        "http://127.3.4.5/p.toml",
        "http://[::1]:8080/p.toml",
        "http://localhost/p.toml",
        "http://LOCALHOST:1/p.toml",
    ] {
        assert_eq!(refusal(allowed), None, "{allowed}");
    }
    for refused in [
        // F10: a name that starts like an address is a name, looked up in DNS.
        "http://127.evil.example.invalid/p.toml",
        "http://127.0.0.1.nip.io/p.toml",
        "http://0.0.0.0:8080/p.toml",
        "http://192.0.2.1/p.toml",
        "http://[::ffff:192.0.2.1]/p.toml",
        "http://localhost.evil.example/p.toml",
        "ftp://127.0.0.1/p.toml",
        "file:///etc/p.toml",
    ] {
        assert!(refusal(refused).is_some(), "{refused}");
    }
}

#[test]
fn every_redirect_is_held_to_the_rule_and_never_leaves_https() {
    let url = |u: &str| Url::parse(u).expect("a URL");
    let loopback = [url("http://127.0.0.1:1/redir")];
    assert_eq!(
        redirect_refusal(&loopback, &url("http://127.0.0.2:1/p")),
        None
    );
    assert_eq!(
        redirect_refusal(&loopback, &url("https://example.com/p")),
        None
    );
    assert!(redirect_refusal(&loopback, &url("http://0.0.0.0:1/p")).is_some());
    assert!(redirect_refusal(&loopback, &url("http://192.0.2.1/p")).is_some());
    assert!(redirect_refusal(&loopback, &url("file:///etc/passwd")).is_some());
    let secure = [url("https://example.com/p"), url("https://example.com/q")];
    assert_eq!(
        redirect_refusal(&secure, &url("https://other.example/p")),
        None
    );
    assert!(redirect_refusal(&secure, &url("http://127.0.0.1:1/p")).is_some());
    let long: Vec<Url> = (0..10)
        .map(|i| url(&format!("https://e.example/{i}")))
        .collect();
    assert!(redirect_refusal(&long, &url("https://e.example/x")).is_some());
}

#[test]
fn one_document_in_any_spelling_has_one_identity() {
    let a = identity(
        &Origin::Url(Url::parse("https://Policies.Example.com:443/a/../p.toml#x").expect("url")),
        "a",
    )
    .expect("identity");
    let b = identity(
        &Origin::Url(Url::parse("https://policies.example.com/p.toml").expect("url")),
        "b",
    )
    .expect("identity");
    assert_eq!(a, b);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("p.toml"), "").expect("write");
    std::os::unix::fs::symlink(dir.path(), dir.path().join("link")).expect("link");
    let direct = identity(&Origin::File(dir.path().join("p.toml")), "p").expect("identity");
    let linked =
        identity(&Origin::File(dir.path().join("link/./link/p.toml")), "p").expect("identity");
    assert_eq!(direct, linked);
}

#[test]
fn fan_out_reads_each_document_once_and_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for link in ["d1", "d2", "d3"] {
        std::os::unix::fs::symlink(".", root.join(link)).expect("link");
    }
    // F11: three spellings of the next level at every level.
    let levels = 20;
    for i in 0..levels {
        let j = i + 1;
        std::fs::write(
            root.join(format!("l{i}.toml")),
            format!("extends = [\"d1/l{j}.toml\", \"d2/l{j}.toml\", \"d3/l{j}.toml\"]\n"),
        )
        .expect("write");
    }
    std::fs::write(root.join(format!("l{levels}.toml")), "").expect("write");
    let e = load_policy(&root.join("l0.toml"), Canon::default()).expect_err("too deep");
    assert!(e.to_string().contains("more than 16 `extends` deep"), "{e}");
    let policy = load_policy(&root.join("l6.toml"), Canon::default()).expect("shallow");
    assert_eq!(policy.files().count(), levels - 6 + 1);

    // A wide graph: one file extending 70 distinct files.
    let wide = root.join("wide");
    std::fs::create_dir(&wide).expect("mkdir");
    let parents: Vec<String> = (0..70).map(|i| format!("\"p{i}.toml\"")).collect();
    for i in 0..70 {
        std::fs::write(wide.join(format!("p{i}.toml")), "").expect("write");
    }
    std::fs::write(
        wide.join("top.toml"),
        format!("extends = [{}]\n", parents.join(", ")),
    )
    .expect("write");
    let e = load_policy(&wide.join("top.toml"), Canon::default()).expect_err("too many");
    assert!(e.to_string().contains("a policy reads at most 64"), "{e}");
}

#[test]
fn allowed_signers_are_read_beside_their_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let org = dir.path().join("org");
    std::fs::create_dir(&org).expect("mkdir");
    std::fs::write(org.join("keys"), "# nobody yet\n").expect("write");
    std::fs::write(org.join("p.toml"), "allowed_signers = \"keys\"\n").expect("write");
    let top = dir.path().join("p.toml");
    std::fs::write(
        &top,
        "extends = [\"org/p.toml\"]\nrequire_signed_approvals = true\n",
    )
    .expect("write");
    let policy = load_policy(&top, Canon::default()).expect("valid");
    let files: Vec<&str> = policy.signers().iter().map(|s| s.file.as_str()).collect();
    assert_eq!(files, [org.join("keys").display().to_string()]);
    std::fs::write(org.join("p.toml"), "").expect("write");
    let e = load_policy(&top, Canon::default()).expect_err("no signers");
    assert!(
        e.to_string().contains("add `allowed_signers = \"FILE\"`"),
        "{e}"
    );
}

#[test]
fn every_require_signed_of_a_chain_is_read_beside_its_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let org = dir.path().join("org");
    std::fs::create_dir(&org).expect("mkdir");
    std::fs::write(org.join("git_keys"), "# the org's\n").expect("write");
    std::fs::write(
        org.join("p.toml"),
        "[sources]\nrequire_signed = \"git_keys\"\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("team_keys"), "# the team's\n").expect("write");
    let top = dir.path().join("p.toml");
    std::fs::write(
        &top,
        "extends = [\"org/p.toml\"]\n[sources]\nrequire_signed = \"team_keys\"\n",
    )
    .expect("write");
    let policy = load_policy(&top, Canon::default()).expect("valid");
    let files: Vec<&str> = policy
        .source_signers()
        .iter()
        .map(|s| s.file.as_str())
        .collect();
    let team = dir.path().join("team_keys").display().to_string();
    // A file's own before what it extends: each must be satisfied, in any order.
    assert_eq!(files, [team, org.join("git_keys").display().to_string()]);
    assert!(policy.signers().is_empty());
    std::fs::remove_file(org.join("git_keys")).expect("rm");
    let e = load_policy(&top, Canon::default()).expect_err("a missing file");
    assert!(e.to_string().contains("git_keys"), "{e}");
}
