//! The id of the request being answered: kept from the client's `X-Request-Id` when it
//! is plain, made otherwise, and in scope on the request's task so that every error body
//! and log line can carry it.

use axum::http::HeaderValue;

tokio::task_local! {
    pub(crate) static REQUEST_ID: String;
}

/// The id of the request being answered on this task, if any.
pub(crate) fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// A client's `X-Request-Id` is kept when it is short and plain; otherwise one is made.
pub(crate) fn usable(id: &HeaderValue) -> Option<String> {
    let id = id.to_str().ok()?;
    (!id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
    .then(|| id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::{HeaderValue, usable};

    #[test]
    fn client_ids_are_kept_only_when_plain() {
        assert_eq!(
            usable(&HeaderValue::from_static("abc-123_x.y")),
            Some("abc-123_x.y".into())
        );
        assert_eq!(usable(&HeaderValue::from_static("has space")), None);
        assert_eq!(usable(&HeaderValue::from_static("")), None);
        let long = "a".repeat(129);
        assert_eq!(usable(&HeaderValue::from_str(&long).expect("header")), None);
    }
}
