//! What a classification pass did.

/// What a classification pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassifyStats {
    /// Revisions that got a change class.
    pub classified: i64,
    /// Rows the pass read: each revision of the keys involved, once.
    pub rows_read: i64,
}
