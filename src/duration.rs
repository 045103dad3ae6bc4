//! Durations as people write and read them: parsed in Go's syntax
//! (`500ms`, `1h30m`, `1.5h`, what kubectl and etcdctl take) plus `d` for
//! days, printed short (`3h 5m`, `2d 4h`).

use std::time::Duration;

/// Units a duration may be written in, longest name first where one is a
/// prefix of another (`ms` before `m`).
const UNITS: [(&str, u128); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("h", 3_600 * 1_000_000_000),
    ("d", 86_400 * 1_000_000_000),
];

/// Reads `500ms`, `5s`, `1h30m`, `1.5h`, `2d`; a bare number is seconds.
/// Negative, malformed and too long durations are errors, never a panic.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration like 30s, 1h30m or 2d");
    if text.is_empty() {
        return Err(bad());
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| too_long(text));
    }
    let mut rest = text;
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(|| format!("{text:?}: a number needs a unit (ms, s, m, h or d)"))?;
        let (number, after) = rest.split_at(number_end);
        let (unit, scale) = UNITS
            .iter()
            .filter(|(name, _)| after.starts_with(name))
            .max_by_key(|(name, _)| name.len())
            .ok_or_else(|| {
                let unit: String = after.chars().take_while(|c| !c.is_ascii_digit()).collect();
                format!("{text:?}: unknown unit {unit:?} (use ms, s, m, h or d)")
            })?;
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err(bad());
        }
        let whole: u128 = match whole {
            "" => 0,
            w => w.parse().map_err(|_| too_long(text))?,
        };
        // The fraction's digits past nanosecond precision do not count.
        let digits: String = fraction.chars().take(18).collect();
        let part = match digits.len() {
            0 => 0,
            n => digits.parse::<u128>().map_err(|_| bad())? * scale / 10u128.pow(n as u32),
        };
        nanos = whole
            .checked_mul(*scale)
            .and_then(|n| n.checked_add(part))
            .and_then(|n| n.checked_add(nanos))
            .ok_or_else(|| too_long(text))?;
        rest = &after[unit.len()..];
    }
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| too_long(text))?;
    Ok(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

fn too_long(text: &str) -> String {
    format!("{text:?} is longer than any duration this tool can count")
}

/// `3h 5m`, `2d 4h`, `45s`: how long, for people.
pub fn human(seconds: i64) -> String {
    let (d, h, m, s) = (
        seconds / 86400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_syntax_and_days() {
        let secs = Duration::from_secs;
        for (text, want) in [
            ("500ms", Duration::from_millis(500)),
            ("5s", secs(5)),
            ("90", secs(90)),
            ("2m", secs(120)),
            ("1h30m", secs(5400)),
            ("1.5h", secs(5400)),
            ("2d", secs(2 * 86400)),
            ("1d12h", secs(36 * 3600)),
            ("250us", Duration::from_micros(250)),
            ("1µs", Duration::from_micros(1)),
            ("0.5s", Duration::from_millis(500)),
            (".5m", secs(30)),
            ("1h0m0s", secs(3600)),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn bad_text_and_overflow_are_errors_not_panics() {
        for text in ["", "-5s", "5x", "s", "1.2.3s", "1h30", "..s", "5 s"] {
            assert!(parse(text).is_err(), "{text}");
        }
        for text in [
            "99999999999999999999999d",
            "18446744073709551616",
            "213503982334602d",
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains("longer than any duration"), "{text}: {e}");
        }
        assert!(parse("5x").unwrap_err().contains("unknown unit \"x\""));
    }

    #[test]
    fn printed_short() {
        assert_eq!(human(45), "45s");
        assert_eq!(human(3 * 3600 + 5 * 60), "3h 5m");
        assert_eq!(human(2 * 86400 + 4 * 3600 + 7), "2d 4h");
    }
}
