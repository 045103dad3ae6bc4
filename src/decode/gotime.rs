//! Kubernetes' JSON forms of `metav1.Time`, `metav1.MicroTime` and
//! `metav1.Duration`.

/// `Time`: RFC 3339 in UTC with whole seconds; `None` when out of range.
pub fn time(seconds: i64, nanos: i32) -> Option<String> {
    Some(rfc3339(jiff::Timestamp::new(seconds, nanos).ok()?))
}

/// A timestamp as `Time` writes it (`2008-01-01T01:01:01Z`): the one form
/// every time this tool records or shows takes.
pub fn rfc3339(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The current time, as [`rfc3339`] writes it.
pub fn now() -> String {
    rfc3339(jiff::Timestamp::now())
}

/// `MicroTime`: RFC 3339 in UTC with exactly six fraction digits.
pub fn micro_time(seconds: i64, nanos: i32) -> Option<String> {
    let ts = jiff::Timestamp::new(seconds, nanos).ok()?;
    let micros = ts.subsec_nanosecond() / 1000;
    Some(format!("{}.{micros:06}Z", ts.strftime("%Y-%m-%dT%H:%M:%S")))
}

/// Go's `time.Duration.String()`: `1h2m3.5s`, `150ms`, `0s`.
pub fn duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.unsigned_abs();
    const SEC: u64 = 1_000_000_000;
    if u < SEC {
        let (unit, div) = match u {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", decimal(u, div));
    }
    let hours = u / (3600 * SEC);
    let minutes = (u % (3600 * SEC)) / (60 * SEC);
    let rest = u % (60 * SEC);
    let mut out = sign.to_string();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{}s", decimal(rest, SEC)));
    out
}

/// `value / div` with the remainder as trailing decimals, zeros trimmed.
fn decimal(value: u64, div: u64) -> String {
    let whole = value / div;
    let frac = value % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(time(1199149261, 0).unwrap(), "2008-01-01T01:01:01Z");
        assert_eq!(
            micro_time(1199149261, 123456789).unwrap(),
            "2008-01-01T01:01:01.123456Z"
        );
        assert!(time(i64::MAX, 0).is_none());
    }

    #[test]
    fn durations_match_go() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(1_500_000_000), "1.5s");
        assert_eq!(duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(duration(90_000_000_000), "1m30s");
        assert_eq!(duration(150_000_000), "150ms");
        assert_eq!(duration(1_500), "1.5µs");
        assert_eq!(duration(-2_000_000_000), "-2s");
    }
}
