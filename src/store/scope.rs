//! Which objects and revisions a reading command looks at.

use super::ClusterId;
use crate::source::Revision;

/// Which objects a command looks at (`--cluster`, `--namespace`,
/// `--resource`, `--key-prefix`, `--object`): the one object filter
/// `report`, `diff`, `findings`, `stats` and the aggregates share.
/// Namespace and resource are the key's, as the run that stored it parsed
/// them with its own prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectFilter {
    /// Only objects of this cluster (its row id); `None`: every cluster.
    /// The backend applies it where it reads keys; [`ObjectFilter::matches`]
    /// is about one cluster's keys.
    pub cluster: Option<ClusterId>,
    pub namespace: Option<String>,
    pub resource: Option<String>,
    pub key_prefix: Option<String>,
    /// Exactly this key (`--object`).
    pub key: Option<String>,
}

impl ObjectFilter {
    /// Whether an object with this key, namespace and resource is kept.
    pub fn matches(&self, key: &str, namespace: Option<&str>, resource: Option<&str>) -> bool {
        self.key.as_ref().is_none_or(|k| key == k)
            && self
                .key_prefix
                .as_ref()
                .is_none_or(|p| key.starts_with(p.as_str()))
            && self
                .namespace
                .as_ref()
                .is_none_or(|n| namespace == Some(n.as_str()))
            && self
                .resource
                .as_ref()
                .is_none_or(|r| resource == Some(r.as_str()))
    }
}

/// Which revisions an aggregate counts: a revision range and the objects.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub from_revision: Option<Revision>,
    pub to_revision: Option<Revision>,
    pub objects: ObjectFilter,
}
