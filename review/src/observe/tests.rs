//! The bounds on what a server writes: a line, all of its output, the stderr kept, the
//! manifest stored (P4-8).

use std::io::Read;
use std::sync::mpsc::channel;

use serde_json::json;

use super::session::{MAX_LINE_BYTES, MAX_OUTPUT_BYTES, Output, keep_tail, read_lines};
use super::{MAX_MANIFEST_BYTES, NO_SANDBOX, ObserveError, bounded};

/// What [`read_lines`] passes on from `input`.
fn lines_of(input: impl Read) -> Vec<Output> {
    let (send, receive) = channel();
    read_lines(input, &send);
    drop(send);
    receive.into_iter().collect()
}

#[test]
fn lines_are_read_as_they_come() {
    let out = lines_of(&b"{\"a\":1}\nlog \xff line\n\npartial"[..]);
    assert_eq!(
        out,
        vec![
            Output::Line("{\"a\":1}".to_owned()),
            Output::Line("log \u{fffd} line".to_owned()),
            Output::Line(String::new()),
        ]
    );
}

#[test]
fn an_endless_line_is_cut_at_the_line_limit() {
    // `repeat` never ends: reading stops, having held at most one line.
    let out = lines_of(std::io::repeat(b'A'));
    assert_eq!(out, vec![Output::TooLong]);
    // A line just within the limit passes.
    let mut exact = vec![b'B'; MAX_LINE_BYTES];
    exact.push(b'\n');
    let out = lines_of(&exact[..]);
    assert_eq!(out.len(), 1);
    assert!(matches!(&out[0], Output::Line(l) if l.len() == MAX_LINE_BYTES));
}

/// Lines of 1 KiB, without end.
struct Lines;

impl Read for Lines {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(1024);
        buf[..n].fill(b'A');
        buf[n - 1] = b'\n';
        Ok(n)
    }
}

#[test]
fn endless_short_lines_are_cut_at_the_output_limit() {
    let out = lines_of(Lines);
    assert_eq!(out.len(), MAX_OUTPUT_BYTES / 1024 + 1);
    assert_eq!(out.last(), Some(&Output::TooMuch));
}

#[test]
fn only_the_end_of_stderr_is_kept() {
    let mut tail = Vec::new();
    for _ in 0..10_000 {
        keep_tail(&mut tail, b"0123456789");
    }
    keep_tail(&mut tail, b"the end");
    assert!(tail.len() <= 2 * 4096, "{}", tail.len());
    assert!(tail.ends_with(b"the end"));
}

#[test]
fn a_manifest_past_its_bound_is_refused() {
    assert!(bounded(json!({"tools": []})).is_ok());
    let big = json!({"instructions": "x".repeat(MAX_MANIFEST_BYTES)});
    assert_eq!(
        bounded(big),
        Err(ObserveError::Protocol(
            "what it offers is longer than 16 MiB".to_owned()
        ))
    );
}

#[test]
fn no_sandbox_is_recorded_the_same_everywhere_and_said_with_how_to_enable_one() {
    let error = ObserveError::NoSandbox {
        why: "bubblewrap (`bwrap`) is not installed".to_owned(),
    };
    assert_eq!(error.reason(), NO_SANDBOX);
    let said = error.to_string();
    assert!(
        said.starts_with("no sandbox here: bubblewrap (`bwrap`) is not installed; to observe in a sandbox, install bubblewrap"),
        "{said}"
    );
    assert!(
        said.contains("kernel.unprivileged_userns_clone=1"),
        "{said}"
    );
    assert!(
        said.contains("kernel.apparmor_restrict_unprivileged_userns"),
        "{said}"
    );
}
