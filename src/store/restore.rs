//! A restore (or rewind) of etcd a run found: etcd's history no longer
//! continues what an earlier complete run of the cluster stored. Its head
//! or compaction revision went backwards, or at a revision both hold, a
//! key's newest write differs from what the database stores there.
//!
//! Invariant: a run that found one stores nothing more (it fails), so no
//! `(key, mod_revision)` of the restored timeline is ever mixed with one of
//! the stored timeline.

use crate::source::Revision;
use serde::{Deserialize, Serialize};

/// What a run saw of etcd against the earlier run whose history it would
/// have continued.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restore {
    /// The complete run of the same cluster, prefix and filter the run
    /// would have continued.
    pub previous_run: i64,
    /// The prefix both runs read.
    pub prefix: String,
    /// Everything up to this revision was stored by it.
    pub previous_head: Revision,
    /// The compaction revision it saw (`None` for runs from before it was
    /// recorded).
    pub previous_compact: Option<Revision>,
    /// etcd's head and compaction revisions as this run saw them.
    pub head: Revision,
    pub compact: Revision,
    /// Keys whose newest write at a revision both hold differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diverged: Option<Divergence>,
    /// The cluster's etcd cluster id changed: etcd answered with another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_cluster: Option<ClusterChange>,
}

/// A named cluster's etcd cluster id (hex) in the earlier run and now.
/// etcd fixes the id when the cluster forms (a hash of its first members'
/// ids) and keeps it through every membership change since; only a new
/// cluster, such as `etcdutl snapshot restore` forms from a backup, has
/// another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterChange {
    pub from: String,
    pub to: String,
}

/// Keys whose newest write at revision `at` differs between the database
/// and etcd.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The revision compared: the earlier run's head.
    pub at: Revision,
    /// How many keys differ.
    pub keys: u64,
    /// The first of them in key order, with its newest write on each side
    /// (`None`: not live there).
    pub key: String,
    pub stored: Option<Written>,
    pub etcd: Option<Written>,
}

/// A key's newest write at some revision: its mod and create revisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    pub mod_revision: Revision,
    pub create_revision: Revision,
}

impl Restore {
    /// What went backwards or differs, briefly: `head 341 → 325`,
    /// `compacted 300 → 120`, `3 keys differ at 341`.
    pub fn brief(&self) -> String {
        let mut seen = Vec::new();
        if let Some(c) = &self.etcd_cluster {
            seen.push(format!("etcd cluster id {} → {}", c.from, c.to));
        }
        if self.head < self.previous_head {
            seen.push(format!("head {} → {}", self.previous_head, self.head));
        }
        if let Some(before) = self.previous_compact.filter(|&c| self.compact < c) {
            seen.push(format!("compacted {before} → {}", self.compact));
        }
        if let Some(d) = &self.diverged {
            let s = if d.keys == 1 { "" } else { "s" };
            seen.push(format!("{} key{s} differ at {}", d.keys, d.at));
        }
        seen.join(", ")
    }
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "written at {} (created at {})",
            self.mod_revision, self.create_revision
        )
    }
}

/// A key's side of a divergence, as a message says it.
fn side(written: &Option<Written>) -> String {
    match written {
        Some(w) => w.to_string(),
        None => "not live".into(),
    }
}

impl std::fmt::Display for Restore {
    /// The whole account, as the run's error says it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let run = self.previous_run;
        write!(f, "etcd was restored or rewound since run {run}: ")?;
        if let Some(c) = &self.etcd_cluster {
            write!(f, "etcd cluster id {} (run {run}: {}), ", c.to, c.from)?;
        }
        write!(
            f,
            "head {} (run {run}: {}), compaction revision {} (run {run}: {})",
            self.head,
            self.previous_head,
            self.compact,
            self.previous_compact.map_or("-".into(), |c| c.to_string()),
        )?;
        if let Some(d) = &self.diverged {
            write!(
                f,
                "; at revision {}, which both hold, {} key(s) differ from what run {run} stored, first {}: stored {}, etcd {}",
                d.at,
                d.keys,
                d.key,
                side(&d.stored),
                side(&d.etcd)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restore(head: i64, compact: i64) -> Restore {
        Restore {
            previous_run: 2,
            prefix: "/registry/".into(),
            previous_head: Revision(341),
            previous_compact: Some(Revision(300)),
            head: Revision(head),
            compact: Revision(compact),
            diverged: None,
            etcd_cluster: None,
        }
    }

    #[test]
    fn brief_names_what_went_backwards() {
        assert_eq!(restore(325, 300).brief(), "head 341 → 325");
        assert_eq!(restore(400, 120).brief(), "compacted 300 → 120");
        let mut r = restore(400, 300);
        r.diverged = Some(Divergence {
            at: Revision(341),
            keys: 3,
            key: "/registry/a".into(),
            stored: None,
            etcd: Some(Written {
                mod_revision: Revision(330),
                create_revision: Revision(330),
            }),
        });
        assert_eq!(r.brief(), "3 keys differ at 341");
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Restore>(&json).unwrap(), r);
        assert!(r
            .to_string()
            .contains("first /registry/a: stored not live, etcd written at 330"));
    }

    #[test]
    fn another_etcd_cluster_comes_first() {
        let mut r = restore(120, 0);
        r.etcd_cluster = Some(ClusterChange {
            from: "cdf818194e3a8c32".into(),
            to: "8e9e05c52164694d".into(),
        });
        assert_eq!(
            r.brief(),
            "etcd cluster id cdf818194e3a8c32 → 8e9e05c52164694d, head 341 → 120, compacted 300 → 0"
        );
        assert!(r.to_string().starts_with(
            "etcd was restored or rewound since run 2: etcd cluster id 8e9e05c52164694d (run 2: cdf818194e3a8c32), head 120"
        ));
        // Restores recorded before the field existed still read.
        let old = r#"{"previous_run":2,"prefix":"/registry/","previous_head":341,"previous_compact":300,"head":120,"compact":0}"#;
        assert_eq!(serde_json::from_str::<Restore>(old).unwrap().etcd_cluster, None);
    }
}
