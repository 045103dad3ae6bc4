//! The one error of every type stored and printed by name (a severity, a
//! change class, a run status, an encoding): a name the type does not have.
//! Read back from a database it means the database is damaged, never a
//! default.

/// `name` is none of the names of `what` ("a severity").
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not {what}")]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
}

/// The one of `all` that `as_str` calls `name`.
pub fn find<T: Copy>(
    all: &[T],
    as_str: fn(T) -> &'static str,
    what: &'static str,
    name: &str,
) -> Result<T, UnknownName> {
    all.iter()
        .copied()
        .find(|v| as_str(*v) == name)
        .ok_or_else(|| UnknownName {
            what,
            name: name.to_string(),
        })
}
