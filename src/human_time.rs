//! Times as tables and report text show them: RFC 3339 in UTC
//! (`2026-11-29T09:00:01Z`), or with `--local` in the local time zone with
//! its offset (`2026-11-29T10:00:01+01:00`). Either form is a time
//! `--since`, `--until` and `--at` take back. JSON and YAML never go
//! through here: they stay in UTC.
//!
//! The zone is a setting of the process, as the log format is: chosen once
//! by [`use_local_zone`] at startup, before any thread starts, then only
//! read. jiff finds it without libc's `localtime` (`TZ`, an IANA name, a
//! POSIX rule or a TZif path; else `/etc/localtime`).

use jiff::tz::TimeZone;
use jiff::Timestamp;
use std::sync::OnceLock;

/// The local zone, once `--local` chose it; UTC while unset.
static LOCAL: OnceLock<TimeZone> = OnceLock::new();

/// Shows every later time in the local time zone.
pub fn use_local_zone() -> Result<(), jiff::Error> {
    let zone = TimeZone::try_system()?;
    // A second call keeps the zone the first found: the same.
    let _ = LOCAL.set(zone);
    Ok(())
}

/// `t` to the second: `2026-11-29T09:00:01Z`, or with its local offset.
pub fn seconds(t: Timestamp) -> String {
    show(t, LOCAL.get(), "")
}

/// A stored RFC 3339 time (`2026-11-29T09:02:11.345678Z`), its fraction
/// of a second kept, in the zone shown; text that is not one as it is.
pub fn stored(text: &str) -> String {
    match (LOCAL.get(), text.parse::<Timestamp>()) {
        (Some(_), Ok(t)) => exact(t),
        _ => text.to_string(),
    }
}

/// `t` with its fraction of a second, in the zone shown.
pub fn exact(t: Timestamp) -> String {
    show(t, LOCAL.get(), "%.f")
}

/// `t` in `zone` (UTC when `None`, written `Z`), with `fraction` (a
/// strftime directive for the fraction of a second, or none).
fn show(t: Timestamp, zone: Option<&TimeZone>, fraction: &str) -> String {
    match zone {
        Some(zone) => t
            .to_zoned(zone.clone())
            .strftime(&format!("%Y-%m-%dT%H:%M:%S{fraction}%:z"))
            .to_string(),
        None => t.strftime(&format!("%Y-%m-%dT%H:%M:%S{fraction}Z")).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_with_z_or_a_zone_with_its_offset() {
        let t: Timestamp = "2026-11-29T09:00:01.5Z".parse().unwrap();
        assert_eq!(show(t, None, ""), "2026-11-29T09:00:01Z");
        let berlin = TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(show(t, Some(&berlin), ""), "2026-11-29T10:00:01+01:00");
        assert_eq!(show(t, Some(&berlin), "%.f"), "2026-11-29T10:00:01.5+01:00");
        let summer: Timestamp = "2026-07-01T09:00:00Z".parse().unwrap();
        assert_eq!(show(summer, Some(&berlin), ""), "2026-07-01T11:00:00+02:00");
        // What is shown is the same instant.
        let back: Timestamp = show(t, Some(&berlin), "%.f").parse().unwrap();
        assert_eq!(back, t);
    }
}
