//! Credentials written in source strings and URLs, removed before anything is written
//! or printed.

/// A source or URL with every literal credential removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    /// The text that is safe to write and print.
    pub text: String,
    /// Whether something was removed (the caller warns the user to use `${VAR}`).
    pub removed_secret: bool,
}

/// Removes literal credentials from a URL-like source string, keeping `${VAR}` references.
///
/// A password is always secret. A user name alone is secret on `http(s)` URLs, where tokens
/// are commonly passed as the user name, and kept on `ssh` URLs (`git@host`), where it is
/// the account.
pub fn redact(text: &str) -> Redacted {
    let unchanged = || Redacted {
        text: text.to_owned(),
        removed_secret: false,
    };
    let Some(scheme_end) = text.find("://") else {
        return unchanged();
    };
    let authority_start = scheme_end + 3;
    let scheme = &text[..scheme_end];
    let web = scheme.ends_with("http") || scheme.ends_with("https");
    // Where the authority ends is where the HTTP client (the `url` crate, WHATWG rules)
    // ends it: for web and file URLs a backslash ends it too, so in
    // `https://evil.example\@github.com/` the host is `evil.example` and nothing is a
    // credential.
    let special = web || scheme.ends_with("file") || scheme.ends_with("ftp");
    let ends: &[char] = if special {
        &['/', '?', '#', '\\']
    } else {
        &['/', '?', '#']
    };
    let authority_end = text[authority_start..]
        .find(ends)
        .map_or(text.len(), |i| authority_start + i);
    let authority = &text[authority_start..authority_end];
    let Some(at) = authority.rfind('@') else {
        return unchanged();
    };
    let userinfo = &authority[..at];
    let (user, password) = match userinfo.split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (userinfo, None),
    };
    let is_var = |s: &str| is_env_reference(s);
    let keep_password = password.is_none_or(is_var);
    let keep_user = match password {
        // Over http(s) a lone user name is the token (`https://ghp_x@github.com/...`), so
        // removing a literal password must take the user too: `https://oauth2@host`, left
        // behind, would read as a token and a second redaction would change it again.
        Some(_) if web => keep_password || is_var(user) || user.is_empty(),
        // Over ssh the user is an account (`git`), never the secret.
        Some(_) => true,
        None => !web || is_var(user) || user.is_empty(),
    };
    if keep_user && keep_password {
        return unchanged();
    }
    let mut kept = String::new();
    if keep_user {
        kept.push_str(user);
    }
    if keep_password && let Some(p) = password {
        kept.push(':');
        kept.push_str(p);
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..authority_start]);
    if !kept.is_empty() {
        out.push_str(&kept);
        out.push('@');
    }
    out.push_str(&authority[at + 1..]);
    out.push_str(&text[authority_end..]);
    Redacted {
        text: out,
        removed_secret: true,
    }
}

/// `${NAME}` and nothing else.
fn is_env_reference(s: &str) -> bool {
    s.strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backslash_ends_a_web_authority_as_the_http_client_ends_it() {
        // The host is `evil.example`: nothing before `\\` is userinfo, so nothing is a
        // credential and the text stays as written.
        let text = "https://evil.example\\@github.com/x.tar.gz";
        let redacted = redact(text);
        assert_eq!(redacted.text, text);
        assert!(!redacted.removed_secret);
        assert_eq!(redact("https://u:p@h\\x").text, "https://h\\x");
        // For other schemes a backslash is an ordinary character.
        assert!(redact("ssh://a\\b:pw@h/x").removed_secret);
    }

    #[test]
    fn redacts_literal_credentials_and_keeps_variables() {
        let r = redact("https://oauth2:TOKEN@gitlab.com/g/r");
        assert_eq!(r.text, "https://gitlab.com/g/r");
        assert!(r.removed_secret);
        assert_eq!(
            redact("https://ghp_secret@github.com/o/r").text,
            "https://github.com/o/r"
        );
        let kept = redact("https://x:${GL_TOKEN}@gitlab.com/g/r");
        assert_eq!(kept.text, "https://x:${GL_TOKEN}@gitlab.com/g/r");
        assert!(!kept.removed_secret);
        assert!(!redact("ssh://git@host/r").removed_secret);
        assert!(!redact("git@github.com:o/r.git").removed_secret);
        assert_eq!(
            redact("ssh://git:pw@host/r").text,
            "ssh://git@host/r",
            "an ssh password is a secret"
        );
        // Found by tests/fuzz/lockfile_fuzz.rs: redaction must be idempotent.
        let once = redact("https://a:000aAa@a.aa").text;
        assert_eq!(once, "https://a.aa");
        assert_eq!(redact(&once).text, once);
        assert_eq!(
            redact("https://${U}:pw@h/r").text,
            "https://${U}@h/r",
            "a variable user is kept"
        );
    }
}
