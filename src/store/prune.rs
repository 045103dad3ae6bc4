//! Retention: removing old runs and the revisions only they needed.

/// What a prune removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub runs: i64,
    pub revisions: i64,
    pub keys: i64,
    pub values: i64,
}
