use super::*;
use berth_transport::url::SourceUrl;

#[derive(Debug, thiserror::Error)]
#[error("fetching failed")]
struct Outer(#[source] std::io::Error);

#[test]
fn a_full_disk_under_an_upstream_error_stays_visible_in_the_causes() {
    let url = SourceUrl::new("https://u:secret@example.com/r.git").expect("url");
    let disk = Outer(std::io::Error::from(std::io::ErrorKind::StorageFull));
    let cause = Upstream::with_causes(
        "writing https://u:secret@example.com/r.git pack failed",
        &url,
        [&disk as &(dyn std::error::Error + 'static), &disk.0],
    );
    assert_eq!(cause.io_kind(), Some(std::io::ErrorKind::StorageFull));
    let error = ResolveError::Fetch {
        url: url.shown.clone(),
        cause,
    };
    assert!(!error.to_string().contains("secret"), "{error}");
    let mut kinds = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            kinds.push(io.kind());
        }
        current = e.source();
    }
    assert_eq!(kinds, [std::io::ErrorKind::StorageFull]);
}

#[test]
fn time_outs_are_found_in_the_causes_and_kinds_need_no_message() {
    let timed_out = Outer(std::io::Error::new(std::io::ErrorKind::TimedOut, "slow"));
    assert!(berth_transport::http::is_timeout(&timed_out));
    let refused = Outer(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "no",
    ));
    assert!(!berth_transport::http::is_timeout(&refused));
    // The kind comes from the variant, not from words in a message.
    let fetch = ResolveError::Fetch {
        url: "u".into(),
        cause: Upstream::from_text("timed out while timing out".into()),
    };
    assert_eq!(fetch.kind(), ErrorKind::Upstream);
    let timeout = ResolveError::Timeout {
        url: "u".into(),
        cause: Upstream::from_text("slow".into()),
    };
    assert_eq!(timeout.kind(), ErrorKind::Timeout);
    assert_eq!(ResolveError::Cancelled.kind(), ErrorKind::Timeout);
    assert_eq!(
        ResolveError::MissingEnv { name: "X".into() }.kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn an_entry_error_names_its_source_once() {
    let error = |url: &str| EntryError {
        label: "plugins.toml:2: `http://h/x.git`".to_owned(),
        error: Box::new(ResolveError::PlainHttpCredentials {
            url: url.to_owned(),
        }),
    };
    assert_eq!(
        error("http://h/x.git").to_string(),
        "plugins.toml:2: `http://h/x.git`: refusing to send credentials over plain http to another machine; use https"
    );
    // Another URL than the label's is still named.
    assert_eq!(
        error("http://h/y.git").to_string(),
        "plugins.toml:2: `http://h/x.git`: `http://h/y.git`: refusing to send credentials over plain http to another machine; use https"
    );
}
