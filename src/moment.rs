//! A point in history as people give one on the command line: `rev:N`, an
//! RFC 3339 time, a time as the tables print it (`~2026-12-05T00:22:52Z ±
//! 1 s`, or with `--local` `~2026-12-05T01:22:52+01:00 ± 1 s`, `after T`
//! and `before T` as T;
//! `2026-12-05 00:22:52` is UTC), or a duration ago (`2h`, `30m`,
//! `1d`, as `--stuck-after` takes). Parsed when the arguments are, so a bad
//! one is a usage error before anything runs.

use crate::source::Revision;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

/// A revision, or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    Revision(Revision),
    Time(Timestamp),
}

impl std::str::FromStr for Moment {
    type Err = String;

    fn from_str(text: &str) -> Result<Moment, String> {
        if let Some(n) = text.strip_prefix("rev:") {
            return n
                .parse()
                .map(Moment::Revision)
                .map_err(|_| format!("{text:?}: rev: takes a revision number, as in rev:1200"));
        }
        time(text, Timestamp::now()).map(Moment::Time).ok_or_else(|| {
            format!(
                "{text:?} is not a time: give rev:N, an RFC 3339 time (2026-12-05T00:22:52Z), \
                 one in UTC as the tables print it (2026-12-05 00:22:52), or a duration ago (2h, 30m)"
            )
        })
    }
}

/// `text` as a time, durations counted back from `now`.
fn time(text: &str, now: Timestamp) -> Option<Timestamp> {
    let text = text.trim();
    if let Ok(t) = text.parse::<Timestamp>() {
        return Some(t);
    }
    // As `history` prints a time the clock bounds: its middle, or the
    // bound it has (`after T`, `before T`).
    let civil = ["~", "after ", "before "]
        .iter()
        .find_map(|p| text.strip_prefix(p))
        .unwrap_or(text);
    let civil = civil.split(" ± ").next().unwrap_or(civil).trim();
    if let Ok(t) = civil.parse::<Timestamp>() {
        return Some(t);
    }
    if let Ok(t) = civil.parse::<DateTime>() {
        return t.to_zoned(TimeZone::UTC).ok().map(|z| z.timestamp());
    }
    let ago = crate::duration::parse(text).ok()?;
    now.checked_sub(SignedDuration::try_from(ago).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_form_a_person_gives() {
        let now: Timestamp = "2026-12-05T12:00:00Z".parse().unwrap();
        let at = |s: &str| time(s, now).map(|t| t.to_string());
        let noon = Some("2026-12-05T12:00:00Z".to_string());
        assert_eq!(at("2026-12-05T12:00:00Z"), noon);
        assert_eq!(at("2026-12-05T13:00:00+01:00"), noon);
        assert_eq!(at("2026-12-05 12:00:00"), noon);
        assert_eq!(at("2026-12-05T12:00"), noon);
        assert_eq!(at("~2026-12-05 12:00:00 ± 1 s"), noon);
        assert_eq!(at("~2026-12-05T12:00:00Z ± 1 s"), noon);
        // As `--local` prints them.
        assert_eq!(at("~2026-12-05T13:00:00+01:00 ± 1 s"), noon);
        assert_eq!(at("2026-12-05T07:00:00.000000-05:00"), noon);
        assert_eq!(at("after 2026-12-05T13:00:00+01:00"), noon);
        assert_eq!(at("before 2026-12-05T12:00:00Z"), noon);
        assert_eq!(at("2h"), Some("2026-12-05T10:00:00Z".into()));
        assert_eq!(at("1d"), Some("2026-12-04T12:00:00Z".into()));
        assert_eq!(at("garbage"), None);
        assert_eq!("rev:12".parse::<Moment>(), Ok(Moment::Revision(Revision(12))));
        let bad = "rev:x".parse::<Moment>().unwrap_err();
        assert!(bad.contains("revision number"), "{bad}");
        let bad = "garbage".parse::<Moment>().unwrap_err();
        assert!(bad.contains("not a time") && !bad.contains("expected"), "{bad}");
    }
}
