//! Release age: `exclude-newer`, the cutoff that keeps a lock off releases younger than
//! it (uv's `exclude-newer`, npm's `--before`, Dependabot's cooldown).
//!
//! It is asked for in `plugins.toml` and in policy files, as an instant (`2026-11-01`,
//! `2026-11-01T00:00:00Z`) or as a span before the time of locking (`7 days`). The
//! earliest instant asked for wins. A lock records the instant it used and, when that came
//! from a span, the span, so a later run asking for the same span reuses the recorded
//! instant instead of moving it: the lock reproduces on another day. The clock is the
//! caller's: nothing here reads it.

pub use jiff::Timestamp;
use jiff::{Span, SpanRelativeTo, Unit};

/// What an `exclude-newer` key asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExcludeNewer {
    /// Nothing released at or after this instant (a date alone is its midnight, UTC).
    At(Timestamp),
    /// Nothing released within this span before the time of locking.
    Span {
        /// As written (`7 days`), for the lock and messages.
        written: String,
        /// Its length: days and weeks are 24 hours and 7 days.
        seconds: i64,
    },
}

impl ExcludeNewer {
    /// Reads an RFC 3339 instant (`2026-11-01T00:00:00Z`), a date (`2026-11-01`, its
    /// midnight UTC), or a span (`7 days`, `24 hours`, `2 weeks`, ISO 8601's `P7D`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        if let Ok(at) = trimmed.parse::<Timestamp>() {
            return Ok(ExcludeNewer::At(at));
        }
        if let Ok(date) = trimmed.parse::<jiff::civil::Date>() {
            let at = date
                .to_zoned(jiff::tz::TimeZone::UTC)
                .map_err(|e| format!("`{trimmed}`: {e}"))?
                .timestamp();
            return Ok(ExcludeNewer::At(at));
        }
        let expected = "an RFC 3339 date and time (`2026-11-01T00:00:00Z`), a date (`2026-11-01`) or a span before now (`7 days`, `24 hours`, `2 weeks`)";
        let span: Span = trimmed
            .parse()
            .map_err(|_| format!("`{trimmed}` is not {expected}"))?;
        let seconds = span
            .total((Unit::Second, SpanRelativeTo::days_are_24_hours()))
            .map_err(|_| {
                format!("`{trimmed}` has months or years, which have no fixed length; write days or weeks")
            })?;
        if seconds < 0.0 {
            return Err(format!(
                "`{trimmed}` is negative; write how long before now"
            ));
        }
        // Whole seconds: the lock records seconds.
        #[allow(clippy::cast_possible_truncation)]
        let seconds = seconds as i64;
        Ok(ExcludeNewer::Span {
            written: trimmed.to_owned(),
            seconds,
        })
    }

    /// The instant it stands for when locking at `now`.
    pub fn instant(&self, now: Timestamp) -> Timestamp {
        match self {
            ExcludeNewer::At(at) => *at,
            ExcludeNewer::Span { seconds, .. } => {
                Timestamp::from_second(now.as_second().saturating_sub(*seconds))
                    .unwrap_or(Timestamp::MIN)
            }
        }
    }
}

impl std::fmt::Display for ExcludeNewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExcludeNewer::At(at) => f.write_str(&show_instant(*at)),
            ExcludeNewer::Span { written, .. } => f.write_str(written),
        }
    }
}

/// One `exclude-newer` and where it was asked for (`plugins.toml`, a policy file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The file that says it, as messages name it.
    pub from: String,
    /// What it asks.
    pub value: ExcludeNewer,
}

/// The cutoff a lock was made with: nothing it pins was released at or after `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cutoff {
    /// The instant, whole seconds.
    pub at: Timestamp,
    /// The span `at` was computed from, as written, when it came from one.
    pub span: Option<String>,
}

impl Cutoff {
    /// Whether a release at `released` is held back.
    pub fn excludes(&self, released: Timestamp) -> bool {
        released >= self.at
    }

    /// As the lock writes the instant: RFC 3339 in UTC, whole seconds.
    pub fn to_rfc3339(&self) -> String {
        self.at.to_string()
    }

    /// The cutoff as a message shows it: a date alone at midnight, else the instant.
    pub fn shown(&self) -> String {
        show_instant(self.at)
    }

    /// Reads the lock's two fields.
    pub fn from_lock(at: &str, span: Option<&str>) -> Result<Self, String> {
        let at: Timestamp = at
            .parse()
            .map_err(|e| format!("`exclude-newer = \"{at}\"` is not an RFC 3339 instant: {e}"))?;
        if let Some(span) = span
            && !matches!(ExcludeNewer::parse(span), Ok(ExcludeNewer::Span { .. }))
        {
            return Err(format!("`exclude-newer-span = \"{span}\"` is not a span"));
        }
        Ok(Cutoff {
            at: whole_seconds(at),
            span: span.map(str::to_owned),
        })
    }
}

/// `$BERTH_NOW`, the time a run locks at instead of the clock's (for tests and for
/// reproducing a lock): an RFC 3339 instant or a date.
pub fn parse_now(text: &str) -> Result<Timestamp, String> {
    match ExcludeNewer::parse(text) {
        Ok(ExcludeNewer::At(at)) => Ok(at),
        _ => Err(format!(
            "`BERTH_NOW={text}` is not an RFC 3339 date and time such as `2026-12-01T00:00:00Z`; unset it to use the clock"
        )),
    }
}

/// An instant as a message shows it: a date alone at midnight UTC, else RFC 3339.
pub fn show_instant(at: Timestamp) -> String {
    let text = whole_seconds(at).to_string();
    match text.strip_suffix("T00:00:00Z") {
        Some(date) => date.to_owned(),
        None => text,
    }
}

/// `at` without its fraction of a second.
pub fn whole_seconds(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(at)
}

/// The cutoff `asks` give when locking at `now`, and the ask that set it: each ask's
/// instant (a span equal to the span `recorded` came from gives `recorded`'s instant, so
/// the lock does not move with the clock), the earliest winning. `None` when nothing asks.
pub fn settle<'a>(
    asks: &'a [Ask],
    recorded: Option<&Cutoff>,
    now: Timestamp,
) -> Option<(Cutoff, &'a Ask)> {
    let now = whole_seconds(now);
    let recorded_span = recorded.and_then(|r| {
        let span = r.span.as_deref()?;
        match ExcludeNewer::parse(span) {
            Ok(ExcludeNewer::Span { seconds, .. }) => Some((seconds, r.at)),
            _ => None,
        }
    });
    asks.iter()
        .map(|ask| {
            let cutoff = match &ask.value {
                ExcludeNewer::At(at) => Cutoff {
                    at: whole_seconds(*at),
                    span: None,
                },
                ExcludeNewer::Span { written, seconds } => Cutoff {
                    at: match recorded_span {
                        Some((recorded, at)) if recorded == *seconds => at,
                        _ => ask.value.instant(now),
                    },
                    span: Some(written.clone()),
                },
            };
            (cutoff, ask)
        })
        .min_by_key(|(cutoff, _)| cutoff.at)
}

/// Why a lock made under `made` may pin what `asks` hold back at `now` (a policy read by
/// what takes a lock as it is): made without a cutoff, or under a later one than asked.
/// The words follow the lock's name (`` `plugins.lock` was made without … ``); `None`
/// when it holds, or nothing asks.
pub fn made_too_late(asks: &[Ask], made: Option<&Cutoff>, now: Timestamp) -> Option<String> {
    let (wanted, ask) = settle(asks, None, now)?;
    let why = match made {
        Some(made) if made.at <= wanted.at => return None,
        Some(made) => format!(
            "was made under the cutoff {}, later than",
            show_instant(made.at)
        ),
        None => "was made without".to_owned(),
    };
    Some(format!(
        "{why} the release-age cutoff `{}` asks (`exclude-newer = \"{}\"`: nothing released at or after {})",
        ask.from,
        ask.value,
        show_instant(wanted.at)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("an instant")
    }

    #[test]
    fn instants_dates_and_spans_are_read() {
        assert_eq!(
            ExcludeNewer::parse("2026-11-01T10:00:00Z"),
            Ok(ExcludeNewer::At(at("2026-11-01T10:00:00Z")))
        );
        assert_eq!(
            ExcludeNewer::parse("2026-11-01"),
            Ok(ExcludeNewer::At(at("2026-11-01T00:00:00Z")))
        );
        for (text, seconds) in [
            ("7 days", 7 * 86_400),
            ("24 hours", 86_400),
            ("2 weeks", 14 * 86_400),
            ("P7D", 7 * 86_400),
            ("1 day 12 hours", 36 * 3_600),
        ] {
            assert_eq!(
                ExcludeNewer::parse(text),
                Ok(ExcludeNewer::Span {
                    written: text.to_owned(),
                    seconds
                }),
                "{text}"
            );
        }
        for bad in ["soon", "3 months", "-2 days", "2026-13-01"] {
            let err = ExcludeNewer::parse(bad).expect_err(bad);
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn the_earliest_wins_and_a_recorded_span_does_not_move() {
        let now = at("2026-12-01T00:00:00Z");
        let asks = vec![
            Ask {
                from: "plugins.toml".into(),
                value: ExcludeNewer::parse("7 days").expect("span"),
            },
            Ask {
                from: "policy".into(),
                value: ExcludeNewer::parse("2026-11-20").expect("date"),
            },
        ];
        let (cutoff, who) = settle(&asks, None, now).expect("a cutoff");
        assert_eq!(
            (cutoff.at, who.from.as_str()),
            (at("2026-11-20T00:00:00Z"), "policy")
        );
        assert_eq!(cutoff.span, None);
        let (cutoff, who) = settle(&asks[..1], None, now).expect("a cutoff");
        assert_eq!(cutoff.at, at("2026-11-24T00:00:00Z"));
        assert_eq!(cutoff.span.as_deref(), Some("7 days"));
        assert_eq!(who.from, "plugins.toml");
        // A week later the same span keeps the recorded instant.
        let later = at("2026-12-08T00:00:00Z");
        let (again, _) = settle(&asks[..1], Some(&cutoff), later).expect("a cutoff");
        assert_eq!(again, cutoff);
        // Another span is computed afresh.
        let other = [Ask {
            from: "plugins.toml".into(),
            value: ExcludeNewer::parse("1 week").expect("span"),
        }];
        let (same_length, _) = settle(&other, Some(&cutoff), later).expect("a cutoff");
        assert_eq!(same_length.at, cutoff.at, "a week is seven days");
        assert!(settle(&[], Some(&cutoff), later).is_none());
    }

    #[test]
    fn a_lock_made_later_or_without_the_cutoff_is_named() {
        let now = at("2026-12-01T00:00:00Z");
        let asks = [Ask {
            from: "berth-policy.toml".into(),
            value: ExcludeNewer::parse("7 days").expect("span"),
        }];
        let made = |when: &str| Cutoff {
            at: at(when),
            span: Some("7 days".into()),
        };
        // Made on an earlier day under the same span: its cutoff is earlier, so it holds.
        assert_eq!(
            made_too_late(&asks, Some(&made("2026-11-10T00:00:00Z")), now),
            None
        );
        assert_eq!(made_too_late(&[], None, now), None);
        assert_eq!(
            made_too_late(&asks, None, now).as_deref(),
            Some(
                "was made without the release-age cutoff `berth-policy.toml` asks (`exclude-newer = \"7 days\"`: nothing released at or after 2026-11-24)"
            )
        );
        assert!(
            made_too_late(&asks, Some(&made("2026-11-30T00:00:00Z")), now).is_some_and(
                |why| why.starts_with("was made under the cutoff 2026-11-30, later than")
            )
        );
    }

    #[test]
    fn instants_are_shown_short_at_midnight() {
        assert_eq!(show_instant(at("2026-11-19T00:00:00Z")), "2026-11-19");
        assert_eq!(
            show_instant(at("2026-11-19T10:00:00.5Z")),
            "2026-11-19T10:00:00Z"
        );
        let cutoff = Cutoff::from_lock("2026-11-19T10:00:00Z", Some("7 days")).expect("valid");
        assert!(cutoff.excludes(at("2026-11-19T10:00:00Z")));
        assert!(!cutoff.excludes(at("2026-11-19T09:59:59Z")));
        assert!(Cutoff::from_lock("yesterday", None).is_err());
        assert_eq!(parse_now("2026-12-01"), Ok(at("2026-12-01T00:00:00Z")));
        assert!(
            parse_now("7 days")
                .expect_err("a span")
                .contains("`BERTH_NOW=7 days`")
        );
        assert!(Cutoff::from_lock("2026-11-19T10:00:00Z", Some("2026-11-01")).is_err());
    }
}
