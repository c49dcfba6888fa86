//! `~/.netrc` (or `$NETRC`): the credentials file curl and git read, honoured for HTTP
//! sources that carry no credentials of their own.

use std::path::Path;

/// The login and password `netrc` gives for `host` (its `machine` entry, else `default`).
pub fn lookup(host: &str, home: Option<&Path>) -> Option<(String, String)> {
    let path = match std::env::var_os("NETRC") {
        Some(path) => path.into(),
        None => home?.join(".netrc"),
    };
    let text = std::fs::read_to_string(path).ok()?;
    parse(&text, host)
}

fn parse(text: &str, host: &str) -> Option<(String, String)> {
    let mut tokens = text.split_whitespace();
    let mut found: Option<(String, String)> = None;
    let mut default: Option<(String, String)> = None;
    let mut current: Option<bool> = None; // Some(true): the wanted machine; Some(false): default
    let (mut login, mut password) = (String::new(), String::new());
    let mut flush = |current: Option<bool>, login: &mut String, password: &mut String| {
        let entry = (std::mem::take(login), std::mem::take(password));
        match current {
            Some(true) if found.is_none() => found = Some(entry),
            Some(false) if default.is_none() => default = Some(entry),
            _ => {}
        }
    };
    while let Some(token) = tokens.next() {
        match token {
            "machine" => {
                flush(current, &mut login, &mut password);
                current = tokens
                    .next()
                    .map(|m| m == host)
                    .and_then(|is| is.then_some(true));
            }
            "default" => {
                flush(current, &mut login, &mut password);
                current = Some(false);
            }
            "login" => login = tokens.next().unwrap_or_default().to_owned(),
            "password" => password = tokens.next().unwrap_or_default().to_owned(),
            "account" | "port" => {
                tokens.next();
            }
            "macdef" => break,
            _ => {}
        }
    }
    flush(current, &mut login, &mut password);
    found
        .or(default)
        .filter(|(l, p)| !l.is_empty() || !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_then_default() {
        let text = "machine a.example login al password secret-a\nmachine b.example\n  login bo\n  password secret-b\ndefault login anon password x\n";
        assert_eq!(
            parse(text, "b.example"),
            Some(("bo".into(), "secret-b".into()))
        );
        assert_eq!(
            parse(text, "a.example"),
            Some(("al".into(), "secret-a".into()))
        );
        assert_eq!(parse(text, "c.example"), Some(("anon".into(), "x".into())));
        assert_eq!(parse("machine a login l password p", "z"), None);
    }
}
