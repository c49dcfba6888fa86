//! A marketplace built at test time for the marketplace tests: `acme/market` with entries
//! of every source form berth fetches (relative, `github`, `url`, `git-subdir`, `archive`,
//! `npm` from a static registry on 127.0.0.1) and some unusable ones.

use sha2::{Digest, Sha256};

use super::{FileServer, GitHttpServer, GitRepo, TestContext, copy_tree};

/// A plugin folder's files: a manifest naming it and one skill.
pub fn plugin(repo: &GitRepo, dir: &str, name: &str, body: &str) {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    repo.write(
        &format!("{prefix}.claude-plugin/plugin.json"),
        &format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\"}}\n"),
    );
    repo.write(
        &format!("{prefix}skills/{name}-skill/SKILL.md"),
        &format!("---\nname: {name}-skill\ndescription: {body}\n---\n{body}\n"),
    );
}

pub struct Market {
    pub ctx: TestContext,
    pub market: GitRepo,
    pub gh: GitRepo,
    pub _files: FileServer,
    /// The `sha` the catalog gives for `gh`.
    pub gh_v1: String,
    pub urlrepo: GitRepo,
    pub archive_entry: String,
    /// `git http-backend` over the upstream folder: a catalog's `url` entries name remote
    /// repositories, never a path or `file://` URL on this machine.
    pub git: GitHttpServer,
}

/// Builds `acme/market` and the repositories and archive its entries point to.
pub fn market() -> Market {
    let ctx = TestContext::new();
    let gh = ctx.repo("gh");
    plugin(&gh, "", "gh", "from github v1");
    let gh_v1 = gh.commit("v1");
    // `main` moves on; the catalog's `sha` keeps v1.
    plugin(&gh, "", "gh", "from github v2 on main");
    gh.commit("v2");

    let urlrepo = ctx.repo("urlrepo");
    plugin(&urlrepo, "", "byurl", "from a git url");
    plugin(&urlrepo, "plugins/sub", "sub", "from a git subdirectory");
    urlrepo.commit("two plugins");
    urlrepo.tag("v1");

    let served = ctx.root.join("served");
    let arc_src = ctx.root.join("arc-src");
    std::fs::create_dir_all(&arc_src).expect("mkdir");
    let scratch = GitRepo::init(&ctx.root.join("arc-repo"), &ctx.home);
    plugin(&scratch, "", "arc", "from an archive");
    copy_tree(
        &scratch.path.join(".claude-plugin"),
        &arc_src.join(".claude-plugin"),
    );
    copy_tree(&scratch.path.join("skills"), &arc_src.join("skills"));
    std::fs::create_dir_all(&served).expect("mkdir");
    let tgz = super::tar_gz(&arc_src, "arc-1.0");
    let sha = format!("{:x}", Sha256::digest(&tgz));
    std::fs::write(served.join("arc-1.0.tar.gz"), &tgz).expect("write");
    // A static npm registry: documents under `registry/`, tarballs under `tarballs/`.
    let npm_src = ctx.root.join("npm-src");
    let scratch = GitRepo::init(&ctx.root.join("npm-repo"), &ctx.home);
    plugin(&scratch, "", "npmtools", "from an npm package");
    copy_tree(
        &scratch.path.join(".claude-plugin"),
        &npm_src.join(".claude-plugin"),
    );
    copy_tree(&scratch.path.join("skills"), &npm_src.join("skills"));
    let npm_tgz = super::tar_gz(&npm_src, "package");
    std::fs::create_dir_all(served.join("registry")).expect("mkdir");
    std::fs::create_dir_all(served.join("tarballs")).expect("mkdir");
    std::fs::write(served.join("tarballs/tools-1.2.0.tgz"), &npm_tgz).expect("write");
    std::fs::write(served.join("tarballs/tools-2.0.0.tgz"), &npm_tgz).expect("write");
    let files = FileServer::start(&served, None);
    let integrity = |bytes: &[u8]| {
        format!(
            "sha512-{}",
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                sha2::Sha512::digest(bytes)
            )
        )
    };
    let version = |v: &str, integrity: &str| {
        serde_json::json!({"name": "tools", "version": v, "dist": {
            "tarball": files.url(&format!("tarballs/tools-{v}.tgz")),
            "integrity": integrity,
            "shasum": "0000000000000000000000000000000000000000"
        }})
    };
    let good = integrity(&npm_tgz);
    let document = serde_json::json!({
        "name": "tools",
        "dist-tags": {"latest": "2.0.0"},
        "versions": {"1.2.0": version("1.2.0", &good), "2.0.0": version("2.0.0", &good)}
    });
    std::fs::write(served.join("registry/tools"), document.to_string()).expect("write");
    // `badtools` says its tarball has other bytes than it has.
    let bad = serde_json::json!({
        "name": "badtools",
        "dist-tags": {"latest": "1.2.0"},
        "versions": {"1.2.0": version("1.2.0", &integrity(b"other bytes"))}
    });
    std::fs::write(served.join("registry/badtools"), bad.to_string()).expect("write");
    let registry = files.url("registry");
    let archive_entry = format!(
        r#"{{"name": "arc", "source": {{"source": "archive", "url": "{}", "sha256": "{sha}"}}}},
    {{"name": "npmtools", "source": {{"source": "npm", "package": "tools", "version": "^1.0.0", "registry": "{registry}"}}}},
    {{"name": "npmbad", "source": {{"source": "npm", "package": "badtools", "registry": "{registry}"}}}}"#,
        files.url("arc-1.0.tar.gz")
    );

    let git = GitHttpServer::start(&ctx.upstream, &ctx.root.join("git-http.log"), &[]);
    let market = ctx.repo("market");
    plugin(&market, "plugins/rel", "rel", "from the marketplace itself");
    market.write("README.md", "a marketplace\n");
    let m = Market {
        ctx,
        market,
        gh,
        _files: files,
        gh_v1,
        urlrepo,
        archive_entry,
        git,
    };
    m.write_catalog(&m.gh_v1.clone());
    m.market.commit("catalog");
    m
}

impl Market {
    pub fn write_catalog(&self, gh_sha: &str) {
        let url = format!("{}/urlrepo.git", self.git.url());
        self.market.write(
            ".claude-plugin/marketplace.json",
            &format!(
                r#"{{
  "name": "acme-market",
  "owner": {{"name": "Acme"}},
  "metadata": {{"pluginRoot": "./plugins"}},
  "plugins": [
    {{"name": "rel", "source": "./rel", "description": "relative"}},
    {{"name": "gh", "source": {{"source": "github", "repo": "acme/gh", "ref": "main", "sha": "{gh_sha}"}}}},
    {{"name": "byurl", "source": {{"source": "url", "url": "{url}", "ref": "v1"}}}},
    {{"name": "sub", "source": {{"source": "git-subdir", "url": "{url}", "path": "plugins/sub", "ref": "v1"}}}},
    {archive},
    {{"name": "odd", "source": {{"source": "svn", "url": "svn://x"}}}},
    {{"name": "twice", "source": "./rel"}},
    {{"name": "twice", "source": "./rel"}},
    {{"name": "escape", "source": "../../etc"}},
    {{"name": "loose", "source": "./rel", "strict": false, "skills": ["./skills/rel-skill"], "lspServers": {{"x": {{"command": "x-lsp"}}}}}}
  ]
}}
"#,
                archive = self.archive_entry
            ),
        );
    }
}

pub const ALL: [&str; 6] = ["rel", "gh", "byurl", "sub", "arc", "npmtools"];

pub fn manifest(plugins: &[&str]) -> String {
    let mut text = String::from(
        "# team plugins\n[[marketplace]]\nname = \"acme\"\nsource = \"github:acme/market\"\n\n",
    );
    for p in plugins {
        text.push_str(&format!("[[plugin]]\nsource = \"{p}@acme\"\n\n"));
    }
    text
}

pub fn marketplace_of(lock: &str) -> toml::Value {
    let value: toml::Value = toml::from_str(lock).expect("lockfile is TOML");
    value["marketplace"].as_array().expect("marketplaces")[0].clone()
}
