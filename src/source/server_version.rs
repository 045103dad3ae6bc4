//! The etcd server's version (from the Maintenance `Status` call) and the
//! known server behaviours of each release line that a replay depends on.
//!
//! - etcd issue 15220: before 3.4.25 and 3.5.8 a requested progress
//!   notification may be sent before the events it claims to cover, so it
//!   proves nothing about what has arrived.
//! - etcd issue 17507: 3.4.25–3.4.30 and 3.5.8–3.5.12 defer a progress
//!   request made while a watch is catching up until an event arrives; on a
//!   watch whose range has no events the answer never comes.
//! - Compaction at revision C dropped a tombstone whose revision is C up to
//!   3.4.33 and 3.5.15 (kept since 3.4.34, 3.5.16 and 3.6.0), so a delete at
//!   exactly C may leave no event to watch.

use std::fmt;

/// `major.minor.patch` of an etcd server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServerVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ServerVersion {
    /// Parses `3.5.1`, `3.6.0-rc.2` or `v3.4.23`; `None` for anything else.
    pub fn parse(text: &str) -> Option<ServerVersion> {
        let text = text.trim().trim_start_matches('v');
        let core = text.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
        let version = ServerVersion {
            major: parts.next()??,
            minor: parts.next()??,
            patch: parts.next().unwrap_or(Some(0))?,
        };
        Some(version)
    }

    const fn at_least(self, minor: u32, patch: u32) -> bool {
        self.major > 3
            || (self.major == 3 && (self.minor > minor || (self.minor == minor && self.patch >= patch)))
    }

    /// Whether this line has the fix for `(minor, patch)` on 3.4, the fix
    /// for the 3.5 line, and everything from 3.6 on.
    fn fixed_in(self, on_3_4: u32, on_3_5: u32) -> bool {
        match (self.major, self.minor) {
            (3, 4) => self.patch >= on_3_4,
            (3, 5) => self.patch >= on_3_5,
            _ => self.at_least(6, 0),
        }
    }

    /// A progress notification covers every event before it (etcd issue
    /// 15220 fixed).
    pub fn progress_is_ordered(self) -> bool {
        self.fixed_in(25, 8)
    }

    /// A progress request on a watch that is catching up may go unanswered
    /// until an event arrives (etcd issue 17507).
    pub fn defers_progress(self) -> bool {
        self.progress_is_ordered() && !self.fixed_in(31, 13)
    }

    /// Compaction at C keeps a tombstone whose revision is C.
    pub fn keeps_tombstone_at_compaction(self) -> bool {
        self.fixed_in(34, 16)
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::ServerVersion;

    fn v(text: &str) -> ServerVersion {
        ServerVersion::parse(text).unwrap()
    }

    #[test]
    fn parses_release_and_pre_release_versions() {
        assert_eq!(v("3.5.1").to_string(), "3.5.1");
        assert_eq!(v("v3.4.23").to_string(), "3.4.23");
        assert_eq!(v("3.6.0-rc.2").to_string(), "3.6.0");
        assert_eq!(ServerVersion::parse("not a version"), None);
        assert_eq!(ServerVersion::parse(""), None);
    }

    #[test]
    fn knows_which_releases_send_progress_early() {
        for early in ["3.3.27", "3.4.23", "3.4.24", "3.5.1", "3.5.7"] {
            assert!(!v(early).progress_is_ordered(), "{early}");
        }
        for ordered in [
            "3.4.25", "3.4.45", "3.5.8", "3.5.34", "3.6.0", "3.6.15", "3.7.2", "4.0.0",
        ] {
            assert!(v(ordered).progress_is_ordered(), "{ordered}");
        }
    }

    #[test]
    fn knows_which_releases_defer_progress_requests() {
        for deferring in ["3.4.25", "3.4.30", "3.5.8", "3.5.12"] {
            assert!(v(deferring).defers_progress(), "{deferring}");
        }
        for prompt in ["3.4.23", "3.4.31", "3.5.1", "3.5.13", "3.6.15", "3.7.2"] {
            assert!(!v(prompt).defers_progress(), "{prompt}");
        }
    }

    #[test]
    fn knows_which_releases_keep_a_tombstone_at_the_compaction_revision() {
        for dropping in ["3.4.23", "3.4.33", "3.5.1", "3.5.15"] {
            assert!(!v(dropping).keeps_tombstone_at_compaction(), "{dropping}");
        }
        for keeping in ["3.4.34", "3.4.45", "3.5.16", "3.5.34", "3.6.0", "3.7.2"] {
            assert!(v(keeping).keeps_tombstone_at_compaction(), "{keeping}");
        }
    }
}
