//! When a revision was written, in one short form every table shows: the
//! exact time an audit log gave, or the clock's interval as its middle and
//! half its width.

use crate::human_time::{seconds, stored};
use crate::store::HistoryRow;
use jiff::{SignedDuration, Timestamp};

/// The widest interval shown as a time: wider, a time in its middle would
/// mislead more than it tells.
const WIDEST: SignedDuration = SignedDuration::from_secs(3600);

/// In UTC, or the local zone with `--local` (see [`crate::human_time`]):
/// `2026-11-29T09:02:11.345678Z` (as the audit event wrote it) when exact,
/// `~2026-11-29T09:02:11Z ± 1 s` from the clock (its middle and half its
/// width, up to an hour), `unknown (between … and …)` when wider, `after …`
/// or `before …` when only one side is bounded, `-` when nothing is. Each
/// but the `unknown` forms and `-` is a time `--since`, `--until` and `--at`
/// take (`after T` and `before T` as T).
pub fn when(row: &HistoryRow) -> String {
    if let Some(at) = &row.written_at {
        return stored(at);
    }
    let parse = |t: &Option<String>| t.as_deref().and_then(|t| t.parse::<Timestamp>().ok());
    match (parse(&row.written_between[0]), parse(&row.written_between[1])) {
        (Some(from), Some(to)) if from <= to && to.duration_since(from) <= WIDEST => {
            let half = to.duration_since(from) / 2;
            let plus_minus = half.as_secs_f64().ceil() as i64;
            format!("~{} ± {plus_minus} s", seconds(from + half))
        }
        (Some(from), Some(to)) if from <= to => {
            format!("unknown (between {} and {})", seconds(from), seconds(to))
        }
        (Some(_), Some(_)) => "unknown".into(),
        (Some(from), None) => format!("after {}", seconds(from)),
        (None, Some(to)) => format!("before {}", seconds(to)),
        (None, None) => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn between(from: Option<&str>, to: Option<&str>) -> String {
        when(&HistoryRow {
            written_between: [from.map(Into::into), to.map(Into::into)],
            ..Default::default()
        })
    }

    #[test]
    fn a_wide_or_backwards_interval_is_unknown_not_a_time() {
        let (a, b) = ("2026-11-29T09:00:00Z", "2026-11-29T09:00:02Z");
        assert_eq!(between(Some(a), Some(b)), "~2026-11-29T09:00:01Z ± 1 s");
        assert_eq!(
            between(Some("2026-11-01T00:00:00Z"), Some(b)),
            "unknown (between 2026-11-01T00:00:00Z and 2026-11-29T09:00:02Z)"
        );
        assert_eq!(between(Some(b), Some(a)), "unknown");
        assert_eq!(between(Some(a), None), "after 2026-11-29T09:00:00Z");
        assert_eq!(between(None, None), "-");
    }
}
