use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;

use super::npm::{env_replace, parse_ini};
use super::*;
use crate::auth::Credential;

/// Files by path, and an environment: the inputs of one reading.
struct Machine {
    files: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
}

impl Machine {
    fn new(files: &[(&str, &str)], env: &[(&str, &str)]) -> Self {
        let own = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        Self {
            files: own(files),
            env: own(env),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&ConfigInputs<'_>) -> T) -> T {
        let read = |path: &Path| -> std::io::Result<Option<String>> {
            let path = path.to_str().expect("utf-8");
            if path.contains("unreadable") {
                return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
            }
            Ok(self.files.get(path).cloned())
        };
        f(&ConfigInputs {
            env: &self.env,
            project_dir: Some(Path::new("/p")),
            home: Some(Path::new("/h")),
            read: &read,
        })
    }

    fn npm(&self, berth: Option<&str>) -> NpmConfig {
        self.with(|inputs| NpmConfig::load(inputs, berth))
            .expect("npm config")
    }

    fn index(&self, berth: Option<&str>) -> PackageIndex {
        self.with(|inputs| PackageIndex::resolve(berth, inputs))
            .expect("index")
    }
}

#[test]
fn ini_is_read_as_npm_reads_it() {
    let text = "; a comment\n# another\nregistry = https://r.example/ ; trailing\n\
                quoted = \"a;b\"\nsingle = 'x#y'\nescaped = a\\;b\nlist[] = 1\nflag\n\
                \r\n[section]\ninside = no\n";
    let got: BTreeMap<String, String> = parse_ini(text).into_iter().collect();
    let want: BTreeMap<String, String> = [
        ("registry", "https://r.example/"),
        ("quoted", "a;b"),
        ("single", "x#y"),
        ("escaped", "a;b"),
        ("flag", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn variables_expand_as_npm_expands_them() {
    let env: BTreeMap<String, String> = [("T".to_owned(), "tok".to_owned())].into();
    for (text, want) in [
        ("${T}", "tok"),
        ("a${T}b${T}", "atokbtok"),
        ("${UNSET}", "${UNSET}"),
        ("${UNSET?}", ""),
        ("${T?}", "tok"),
        ("\\${T}", "${T}"),
        ("\\\\${T}", "\\tok"),
        ("${}", "${}"),
        ("${A${T}}", "${Atok}"),
    ] {
        assert_eq!(env_replace(text, &env), want, "{text}");
    }
}

#[test]
fn npm_layers_are_read_highest_first() {
    let files = [
        (
            "/p/.npmrc",
            "registry=https://project.example/\n@acme:registry=https://acme-project.example",
        ),
        (
            "/h/.npmrc",
            "registry=https://user.example/\n@acme:registry=https://acme-user.example/\n@other:registry=https://other.example/",
        ),
        (
            "/g/etc/npmrc",
            "@global:registry=https://global.example/\nregistry=https://global.example/",
        ),
    ];
    let machine = Machine::new(&files, &[("PREFIX", "/g")]);
    let npm = machine.npm(None);
    assert_eq!(npm.registry(), "https://project.example/");
    assert_eq!(npm.registry_for("@acme/x"), "https://acme-project.example/");
    assert_eq!(npm.registry_for("@other/x"), "https://other.example/");
    assert_eq!(npm.registry_for("@global/x"), "https://global.example/");
    assert_eq!(npm.registry_for("@none/x"), "https://project.example/");
    assert_eq!(npm.registry_for("plain"), "https://project.example/");
    // The environment is above the files, berth's own setting above all, for `registry`
    // only: a scope's registry still holds.
    let env = [
        ("PREFIX", "/g"),
        ("NPM_CONFIG_REGISTRY", "https://upper.example"),
        ("npm_config_registry", "https://env.example"),
    ];
    let machine = Machine::new(&files, &env);
    assert_eq!(machine.npm(None).registry(), "https://env.example/");
    let npm = machine.npm(Some("https://berth.example"));
    assert_eq!(npm.registry(), "https://berth.example/");
    assert_eq!(npm.registry_for("@acme/x"), "https://acme-project.example/");
    // Nothing configured: the public registry.
    assert_eq!(
        Machine::new(&[], &[]).npm(None).registry(),
        DEFAULT_NPM_REGISTRY
    );
}

#[test]
fn the_user_config_is_where_npm_config_userconfig_says() {
    let files = [
        ("/h/.npmrc", "registry=https://home.example/"),
        ("/elsewhere/npmrc", "registry=https://elsewhere.example/"),
    ];
    let machine = Machine::new(&files, &[("NPM_CONFIG_USERCONFIG", "/elsewhere/npmrc")]);
    assert_eq!(machine.npm(None).registry(), "https://elsewhere.example/");
    let machine = Machine::new(&files, &[("npm_config_userconfig", "~/.npmrc")]);
    assert_eq!(machine.npm(None).registry(), "https://home.example/");
    let unreadable = Machine::new(&[], &[("npm_config_userconfig", "/unreadable")]);
    let err = unreadable
        .with(|inputs| NpmConfig::load(inputs, None))
        .expect_err("an unreadable file");
    assert!(err.to_string().contains("`/unreadable`"), "{err}");
}

#[test]
fn a_credential_is_the_longest_nerf_dart_that_matches() {
    let basic = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
    let password = base64::engine::general_purpose::STANDARD.encode("s3cret");
    let npmrc = format!(
        "//r.example/:_authToken=${{HOST_TOKEN}}\n\
         //r.example/team/:_authToken=team-token\n\
         //basic.example:8443/:_auth={basic}\n\
         //pw.example/npm/:username=alice\n//pw.example/npm/:_password={password}\n"
    );
    let machine = Machine::new(&[("/p/.npmrc", &npmrc)], &[("HOST_TOKEN", "host-token")]);
    let npm = machine.npm(None);
    let bearer = |t: &str| Some(Credential::Bearer(t.to_owned()));
    let registry = "https://r.example/team/";
    assert_eq!(
        npm.credential_for("https://r.example/team/x/-/x-1.0.0.tgz", registry),
        bearer("team-token")
    );
    assert_eq!(
        npm.credential_for("https://r.example/team", registry),
        bearer("host-token"),
        "`//r.example/team/` is a folder, which `/team` is not: npm walks up to the host"
    );
    assert_eq!(
        npm.credential_for("https://r.example/other/x", registry),
        bearer("host-token")
    );
    assert_eq!(
        npm.credential_for("https://basic.example:8443/x", registry),
        Some(Credential::Basic(basic.clone()))
    );
    assert_eq!(
        npm.credential_for("https://basic.example/x", registry),
        None,
        "another port is another registry"
    );
    assert_eq!(
        npm.credential_for("https://pw.example/npm/x", registry),
        Some(Credential::Basic(basic))
    );
    assert_eq!(
        npm.credential_for("https://cdn.example/x.tgz", registry),
        None
    );
    // A tarball elsewhere on the registry's host gets the registry's credential.
    let only_registry = Machine::new(&[("/p/.npmrc", "//h.example/reg/:_authToken=t")], &[]);
    assert_eq!(
        only_registry
            .npm(None)
            .credential_for("https://h.example/files/x.tgz", "https://h.example/reg/"),
        bearer("t")
    );
    // What an `npm` process gets, and what is never shown.
    let env = npm.npm_env();
    assert!(
        env.contains(&(
            "npm_config_//r.example/team/:_authToken".to_owned(),
            "team-token".to_owned()
        )),
        "{env:?}"
    );
    let shown = format!("{npm:?}");
    for secret in npm.secrets() {
        assert!(!shown.contains(&secret), "{shown}");
    }
    assert!(npm.secrets().contains(&"s3cret".to_owned()));
}

#[test]
fn the_index_is_berths_then_uvs_variables_then_its_files() {
    let files = [
        (
            "/p/uv.toml",
            "index-url = \"https://project.example/simple\"\n",
        ),
        (
            "/p/pyproject.toml",
            "[tool.uv]\nindex-url = \"https://pyproject.example/simple\"\n",
        ),
        (
            "/h/.config/uv/uv.toml",
            "[[index]]\nurl = \"https://extra.example/simple\"\n\n\
             [[index]]\nname = \"internal\"\nurl = \"https://user.example/simple\"\ndefault = true\n",
        ),
    ];
    let env = [
        ("UV_INDEX_URL", "https://uv-index-url.example/simple"),
        ("UV_DEFAULT_INDEX", "https://uv-default.example/simple"),
    ];
    let berth = "https://berth.example/simple";
    assert_eq!(Machine::new(&files, &env).index(Some(berth)).url, berth);
    assert_eq!(
        Machine::new(&files, &env).index(None).url,
        "https://uv-index-url.example/simple"
    );
    let index = Machine::new(&files, &env[1..]).index(None);
    assert_eq!(index.url, "https://uv-default.example/simple");
    assert_eq!(index.origin, IndexOrigin::Env("UV_DEFAULT_INDEX"));
    let index = Machine::new(&files, &[]).index(None);
    assert_eq!(index.url, "https://project.example/simple");
    assert_eq!(index.origin, IndexOrigin::File("/p/uv.toml".into()));
    // No `uv.toml` in the project: its `pyproject.toml`'s `[tool.uv]`.
    let index = Machine::new(&files[1..], &[]).index(None);
    assert_eq!(index.url, "https://pyproject.example/simple");
    // The user's file, its default `[[index]]`, with that name's credentials.
    let credentials = [
        ("UV_INDEX_INTERNAL_USERNAME", "alice"),
        ("UV_INDEX_INTERNAL_PASSWORD", "s3cret"),
    ];
    let index = Machine::new(&files[2..], &credentials).index(None);
    assert_eq!(index.url, "https://user.example/simple");
    assert_eq!(index.name.as_deref(), Some("internal"));
    assert_eq!(
        index.credentials,
        Some(("alice".to_owned(), "s3cret".to_owned()))
    );
    assert!(!format!("{index:?}").contains("s3cret"));
    // `UV_NO_CONFIG` reads no file; `UV_CONFIG_FILE` only its own.
    let none = Machine::new(&files, &[("UV_NO_CONFIG", "1")]).index(None);
    assert_eq!(
        (none.url.as_str(), none.origin),
        (DEFAULT_INDEX_URL, IndexOrigin::Default)
    );
    let only = Machine::new(&files, &[("UV_CONFIG_FILE", "/h/.config/uv/uv.toml")]).index(None);
    assert_eq!(only.url, "https://user.example/simple");
}

#[test]
fn a_named_variable_index_and_written_credentials() {
    let env = [
        ("UV_DEFAULT_INDEX", "corp=https://corp.example/simple"),
        ("UV_INDEX_CORP_PASSWORD", "tok"),
    ];
    let index = Machine::new(&[], &env).index(None);
    assert_eq!(index.url, "https://corp.example/simple");
    assert_eq!(index.credentials, Some((String::new(), "tok".to_owned())));
    assert!(
        !index.has_written_credential(),
        "uv's variables are its place"
    );
    let written = [(
        "/p/uv.toml",
        "index-url = \"https://u:pw@h.example/simple\"\n",
    )];
    assert!(
        Machine::new(&written, &[])
            .index(None)
            .has_written_credential()
    );
    let bad = Machine::new(&[("/p/uv.toml", "index-url = [")], &[]);
    let err = bad
        .with(|inputs| PackageIndex::resolve(None, inputs))
        .expect_err("not TOML");
    assert!(
        err.to_string().contains("`/p/uv.toml` is not valid TOML"),
        "{err}"
    );
}
