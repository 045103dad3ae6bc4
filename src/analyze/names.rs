//! Names that repeat across a cluster's objects (groups, resources, kinds,
//! namespaces, API versions, finalizers, field managers), stored once
//! each: the detectors that hold something of every object for a whole
//! cluster keep them as shared [`Name`]s.

use std::collections::HashSet;
use std::sync::Arc;

/// A name stored once and shared.
pub type Name = Arc<str>;

/// The names seen so far.
#[derive(Debug, Default)]
pub struct Interner(HashSet<Name>);

impl Interner {
    /// `text` as the shared name (stored on first sight).
    pub fn name(&mut self, text: &str) -> Name {
        if let Some(n) = self.0.get(text) {
            return n.clone();
        }
        let n: Name = Arc::from(text);
        self.0.insert(n.clone());
        n
    }

    /// [`Interner::name`] of an optional text.
    pub fn option(&mut self, text: Option<&str>) -> Option<Name> {
        text.map(|t| self.name(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_stored_once() {
        let mut names = Interner::default();
        let a = names.name("app.kubernetes.io/name");
        let b = names.name("app.kubernetes.io/name");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &names.name("app.kubernetes.io/part-of")));
        assert_eq!(names.option(None), None);
    }
}
