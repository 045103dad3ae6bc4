//! Which resources a run records (`--include-resource`,
//! `--exclude-resource`).

use crate::decode::key::{parse_key, ParsedKey};

/// Resources excluded when the user names none: Leases are node heartbeats
/// and leader elections, renewed every few seconds, and dominate the writes
/// of a real cluster while describing no configuration.
pub const DEFAULT_EXCLUDED: &str = "leases";

/// Resources to record, by name as the key spells it (`pods`) or with their
/// group (`leases.coordination.k8s.io`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceFilter {
    /// When not empty, only these resources are recorded.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

fn names(key: &ParsedKey, name: &str) -> bool {
    name == key.resource || name == crate::decode::key::qualified(&key.resource, &key.group)
}

impl ResourceFilter {
    /// From the command line: `none` among the excluded clears the list.
    pub fn new(include: &[String], exclude: &[String]) -> ResourceFilter {
        let exclude = if exclude.iter().any(|e| e == "none") {
            Vec::new()
        } else {
            exclude.to_vec()
        };
        ResourceFilter {
            include: include.to_vec(),
            exclude,
        }
    }

    /// Whether a key is recorded. Special keys (`compact_rev_key`) always
    /// are.
    pub fn records(&self, key: &ParsedKey) -> bool {
        if key.special.is_some() {
            return true;
        }
        (self.include.is_empty() || self.include.iter().any(|i| names(key, i)))
            && !self.exclude.iter().any(|e| names(key, e))
    }

    /// Whether the raw etcd `key` is recorded, read with the run's `prefix`;
    /// a key that is not a Kubernetes object key always is.
    pub fn records_key(&self, key: &[u8], prefix: &str) -> bool {
        match parse_key(&String::from_utf8_lossy(key), prefix) {
            Ok(parsed) => self.records(&parsed),
            Err(_) => true,
        }
    }

    /// How runs record the filter, to compare it with a later run's.
    pub fn describe(&self) -> String {
        format!(
            "include:{};exclude:{}",
            self.include.join(","),
            self.exclude.join(",")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(filter: &ResourceFilter, key: &str) -> bool {
        filter.records(&parse_key(key, "/registry/").unwrap())
    }

    #[test]
    fn matches_resources_by_name_or_name_and_group() {
        let default = ResourceFilter::new(&[], &[DEFAULT_EXCLUDED.into()]);
        assert!(!recorded(&default, "/registry/leases/kube-node-lease/node-1"));
        assert!(recorded(&default, "/registry/masterleases/10.0.0.7"));
        assert!(recorded(&default, "/registry/pods/default/web"));
        assert!(recorded(&default, "compact_rev_key"));
        let grouped = ResourceFilter::new(&[], &["leases.coordination.k8s.io".into()]);
        assert!(!recorded(&grouped, "/registry/leases/kube-node-lease/node-1"));
        let all = ResourceFilter::new(&[], &["leases".into(), "none".into()]);
        assert!(recorded(&all, "/registry/leases/kube-node-lease/node-1"));
        let only = ResourceFilter::new(&["pods".into()], &[]);
        assert!(recorded(&only, "/registry/pods/default/web"));
        assert!(!recorded(&only, "/registry/configmaps/default/web"));
        assert!(recorded(&only, "compact_rev_key"));
    }
}
