//! When a revision was written, in one short form every table shows: the
//! exact time an audit log gave, or the clock's interval as its middle and
//! half its width.

use crate::store::HistoryRow;
use jiff::Timestamp;

/// `2026-11-29T09:02:11.345678Z` (as the audit event wrote it) when exact, `~2026-11-29 09:02:11 ± 1 s`
/// from the clock, `after …` or `before …` when only one side is bounded,
/// `-` when nothing is.
pub fn when(row: &HistoryRow) -> String {
    if let Some(at) = &row.written_at {
        return at.clone();
    }
    let parse = |t: &Option<String>| t.as_deref().and_then(|t| t.parse::<Timestamp>().ok());
    let seconds = |t: Timestamp| t.strftime("%Y-%m-%d %H:%M:%S").to_string();
    match (parse(&row.written_between[0]), parse(&row.written_between[1])) {
        (Some(from), Some(to)) => {
            let half = to.duration_since(from) / 2;
            let middle = from + half;
            let plus_minus = half.as_secs_f64().abs().ceil() as i64;
            format!("~{} ± {plus_minus} s", seconds(middle))
        }
        (Some(from), None) => format!("after {}", seconds(from)),
        (None, Some(to)) => format!("before {}", seconds(to)),
        (None, None) => "-".into(),
    }
}
