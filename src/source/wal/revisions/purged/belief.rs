//! What the search knows of a key at a point of the log: absent, live
//! with some of its counters, value and lease, or unknown; and what it is
//! not (a compare on it failed).

use super::super::{KeyState, ValueDigest};
use super::steps::{Cmp, Target};
use crate::source::Revision;

/// What is known of a key at some point.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Belief {
    Absent,
    Live(Known),
    /// Live or absent, and what it is not.
    Unknown(Vec<Target>),
}

/// What is known of a live key.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Known {
    pub(super) mod_revision: Option<Revision>,
    pub(super) create_revision: Option<Revision>,
    pub(super) version: Option<i64>,
    pub(super) lease: Option<i64>,
    pub(super) value: Option<ValueDigest>,
    /// Targets it does not equal (a compare on it failed).
    pub(super) excluded: Vec<Target>,
}

impl Known {
    pub(super) fn exact(s: &KeyState) -> Known {
        Known {
            mod_revision: Some(s.mod_revision),
            create_revision: Some(s.create_revision),
            version: Some(s.version),
            lease: Some(s.lease),
            value: Some(s.value),
            excluded: Vec::new(),
        }
    }

    /// Both known of one key at once, or `None` where they disagree.
    pub(super) fn and(&self, other: &Known) -> Option<Known> {
        fn one<T: Copy + PartialEq>(a: Option<T>, b: Option<T>) -> Option<Option<T>> {
            match (a, b) {
                (Some(x), Some(y)) if x != y => None,
                _ => Some(a.or(b)),
            }
        }
        let mut excluded = self.excluded.clone();
        excluded.extend(other.excluded.iter().filter(|t| !self.excluded.contains(t)));
        Some(Known {
            mod_revision: one(self.mod_revision, other.mod_revision)?,
            create_revision: one(self.create_revision, other.create_revision)?,
            version: one(self.version, other.version)?,
            lease: one(self.lease, other.lease)?,
            value: one(self.value, other.value)?,
            excluded,
        })
    }
}

impl Belief {
    fn excluded(&self) -> &[Target] {
        match self {
            Belief::Absent => &[],
            Belief::Live(k) => &k.excluded,
            Belief::Unknown(e) => e,
        }
    }

    /// Itself, unless what it is contradicts what it is not.
    fn checked(self) -> Option<Belief> {
        let equal = |target| Cmp {
            key: 0,
            target,
            result: 0,
        };
        let contradicts = self
            .excluded()
            .iter()
            .any(|&t| self.holds(&equal(t)) == Some(true));
        (!contradicts).then_some(self)
    }

    /// Both at once, or `None` where they disagree.
    pub(super) fn and(&self, other: &Belief) -> Option<Belief> {
        let both = match (self, other) {
            (Belief::Unknown(a), Belief::Unknown(b)) => {
                let mut e = a.clone();
                e.extend(b.iter().filter(|t| !a.contains(t)));
                Belief::Unknown(e)
            }
            (Belief::Unknown(e), Belief::Absent) | (Belief::Absent, Belief::Unknown(e)) => {
                let equal = |target| Cmp {
                    key: 0,
                    target,
                    result: 0,
                };
                if e.iter().any(|&t| Belief::Absent.holds(&equal(t)) == Some(true)) {
                    return None;
                }
                Belief::Absent
            }
            (Belief::Unknown(e), Belief::Live(k)) | (Belief::Live(k), Belief::Unknown(e)) => {
                let mut k = k.clone();
                let more: Vec<Target> = e.iter().filter(|t| !k.excluded.contains(t)).copied().collect();
                k.excluded.extend(more);
                Belief::Live(k)
            }
            (Belief::Absent, Belief::Absent) => Belief::Absent,
            (Belief::Live(a), Belief::Live(b)) => Belief::Live(a.and(b)?),
            _ => return None,
        };
        both.checked()
    }

    /// It, with `target` excluded.
    fn excluding(&self, target: Target) -> Option<Belief> {
        let not = match self {
            Belief::Absent => Belief::Unknown(vec![target]),
            Belief::Live(_) => Belief::Live(Known {
                excluded: vec![target],
                ..Known::default()
            }),
            Belief::Unknown(_) => Belief::Unknown(vec![target]),
        };
        self.and(&not)
    }

    /// Whether the compare holds: `None` when what is known cannot tell.
    pub(super) fn holds(&self, c: &Cmp) -> Option<bool> {
        use std::cmp::Ordering;
        let excluded = self.excluded().contains(&c.target);
        match c.result {
            0 if excluded => return Some(false),
            3 if excluded => return Some(true),
            _ => {}
        }
        let ordering = |have: Option<i64>, want: i64| have.map(|h| h.cmp(&want));
        let ordering: Option<Ordering> = match (self, c.target) {
            (Belief::Unknown(_), _) => return None,
            (Belief::Absent, Target::Value(_)) => return Some(false),
            (Belief::Absent, Target::Version(v) | Target::Create(v) | Target::Mod(v) | Target::Lease(v)) => {
                Some(0.cmp(&v))
            }
            (Belief::Live(k), Target::Version(v)) => ordering(k.version, v),
            (Belief::Live(k), Target::Create(v)) => ordering(k.create_revision.map(|r| r.0), v),
            (Belief::Live(k), Target::Mod(v)) => ordering(k.mod_revision.map(|r| r.0), v),
            (Belief::Live(k), Target::Lease(v)) => ordering(k.lease, v),
            (Belief::Live(k), Target::Value(v)) => {
                let same = k.value.map(|have| have == v)?;
                return match c.result {
                    0 => Some(same),
                    3 => Some(!same),
                    _ => None,
                };
            }
        };
        let o = ordering?;
        Some(match c.result {
            0 => o == Ordering::Equal,
            1 => o == Ordering::Greater,
            2 => o == Ordering::Less,
            _ => o != Ordering::Equal,
        })
    }

    /// It, made to give `holds` for the compare, or `None` where it cannot.
    pub(super) fn made(&self, c: &Cmp, holds: bool) -> Result<Option<Belief>, Refused> {
        let equal = match (c.result, holds) {
            (0, true) | (3, false) => true,
            (0, false) | (3, true) => false,
            _ => return Err(Refused::Cannot("an ordering compare it cannot evaluate")),
        };
        if !equal {
            return Ok(self.excluding(c.target));
        }
        let live = |k: Known| Belief::Live(k);
        let is = match c.target {
            Target::Mod(0) | Target::Version(0) | Target::Create(0) => Belief::Absent,
            Target::Mod(v) => live(Known {
                mod_revision: Some(Revision(v)),
                ..Known::default()
            }),
            Target::Version(v) => live(Known {
                version: Some(v),
                ..Known::default()
            }),
            Target::Create(v) => live(Known {
                create_revision: Some(Revision(v)),
                ..Known::default()
            }),
            Target::Lease(v) => live(Known {
                lease: Some(v),
                ..Known::default()
            }),
            Target::Value(v) => live(Known {
                value: Some(v),
                ..Known::default()
            }),
        };
        Ok(self.and(&is))
    }
}

/// Why an outcome cannot be taken: it contradicts what is known, or the
/// search cannot tell.
pub(super) enum Refused {
    Contradiction,
    Cannot(&'static str),
}
