//! etcd's revision and its byte form in the bbolt `key` bucket: 8-byte
//! big-endian main revision, `_`, 8-byte big-endian sub revision, and an
//! optional `t` marking a tombstone (17 or 18 bytes). Keys sort by
//! revision, so a scan replays history in commit order.

/// etcd's store-wide main revision: one per write transaction, what a
/// key's `mod_revision` and `create_revision` and a response header's
/// revision count in (0: none, or not known).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Revision(pub i64);

impl Revision {
    /// The revision after this one.
    pub fn next(self) -> Revision {
        Revision(self.0 + 1)
    }

    /// The revision before this one.
    pub fn prev(self) -> Revision {
        Revision(self.0 - 1)
    }
}

/// A revision as a number in text, as flags give one.
impl std::str::FromStr for Revision {
    type Err = std::num::ParseIntError;

    fn from_str(text: &str) -> Result<Revision, Self::Err> {
        text.parse().map(Revision)
    }
}

/// How far one revision is past another: a count of revisions, not a
/// revision.
impl std::ops::Sub for Revision {
    type Output = i64;

    fn sub(self, earlier: Revision) -> i64 {
        self.0 - earlier.0
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A revision as bbolt keys hold it: `main` per write transaction, `sub`
/// per change inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MainSub {
    pub main: i64,
    pub sub: i64,
}

/// A bbolt `key` bucket key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RevisionKey {
    pub revision: MainSub,
    pub tombstone: bool,
}

/// Parses a 17-byte revision (`meta` bucket values) or a 17/18-byte
/// `key` bucket key.
pub fn parse(bytes: &[u8]) -> Option<RevisionKey> {
    let tombstone = match bytes.len() {
        17 => false,
        18 if bytes[17] == b't' => true,
        _ => return None,
    };
    if bytes[8] != b'_' {
        return None;
    }
    let main = i64::from_be_bytes(bytes[..8].try_into().ok()?);
    let sub = i64::from_be_bytes(bytes[9..17].try_into().ok()?);
    Some(RevisionKey {
        revision: MainSub { main, sub },
        tombstone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(main: i64, sub: i64, t: bool) -> Vec<u8> {
        let mut k = main.to_be_bytes().to_vec();
        k.push(b'_');
        k.extend(sub.to_be_bytes());
        if t {
            k.push(b't');
        }
        k
    }

    #[test]
    fn parses_and_orders() {
        assert_eq!(
            parse(&key(241828, 0, false)),
            Some(RevisionKey {
                revision: MainSub { main: 241828, sub: 0 },
                tombstone: false
            })
        );
        assert!(parse(&key(5, 2, true)).unwrap().tombstone);
        assert!(key(5, 2, false) < key(6, 0, false) && key(5, 2, false) < key(5, 3, false));
        assert_eq!(parse(b"short"), None);
        let mut bad = key(1, 0, false);
        bad[8] = b'x';
        assert_eq!(parse(&bad), None);
        let mut wrong_marker = key(1, 0, true);
        wrong_marker[17] = b'x';
        assert_eq!(parse(&wrong_marker), None);
    }
}
