//! The clusters a database holds: etcd's cluster id, and the name
//! `--cluster` gives it (`prod-eu-1`), so that many clusters share one
//! database and every output says which one a row is from.
//!
//! Invariants: a cluster has at most one name and a name belongs to at most
//! one cluster; a cluster without a name is shown by etcd's cluster id (hex).

use super::reader::ClusterReads;
use super::recorder::ClusterWrites;
use super::sql::{first_row, one_row, Cursor, Sql};
use super::tables::Cell;
use super::StoreError;

/// A cluster's row id in one database (etcd's own cluster id is
/// [`Cluster::etcd_cluster_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct ClusterId(pub i64);

impl From<ClusterId> for Cell {
    fn from(id: ClusterId) -> Cell {
        Cell::Int(id.0)
    }
}

impl std::fmt::Display for ClusterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A cluster name as `--cluster` gives it: 1 to 63 letters, digits, `-`,
/// `_` and `.`, starting with a letter or digit (a Kubernetes object name
/// fits), so it reads the same in a table, a file name and a URL fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterName(String);

/// Why a text is not a cluster name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a cluster name: 1 to 63 letters, digits, '-', '_' and '.', starting with a letter or digit"
)]
pub struct BadClusterName(String);

impl ClusterName {
    pub fn parse(text: &str) -> Result<ClusterName, BadClusterName> {
        let ok = (1..=63).contains(&text.len())
            && text.starts_with(|c: char| c.is_ascii_alphanumeric())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        match ok {
            true => Ok(ClusterName(text.to_string())),
            false => Err(BadClusterName(text.to_string())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ClusterName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A cluster the database holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Its row id in the database.
    pub row: ClusterId,
    /// etcd's cluster id, hex as `etcdctl endpoint status` shows it.
    pub etcd_cluster_id: String,
    pub name: Option<ClusterName>,
}

impl Cluster {
    /// What every output calls it (`cluster` in JSON): its name, or etcd's
    /// cluster id when it has none.
    pub fn label(&self) -> &str {
        self.name.as_ref().map_or(&self.etcd_cluster_id, |n| n.as_str())
    }

    /// `prod-eu-1 (8e9e05c52164694d)`, or the id alone.
    pub fn described(&self) -> String {
        match &self.name {
            Some(n) => format!("{n} ({})", self.etcd_cluster_id),
            None => self.etcd_cluster_id.clone(),
        }
    }
}

/// `--cluster X` named none of the clusters a database holds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{database} holds no cluster {wanted} (it holds: {known})")]
pub struct UnknownCluster {
    pub database: String,
    pub wanted: String,
    /// The clusters it holds, as [`Cluster::described`] shows them.
    pub known: String,
}

/// The cluster `wanted` names among `clusters`: by name, else by etcd's
/// cluster id (hex, any case). `database` names the database in the error.
pub fn find<'c>(
    clusters: &'c [Cluster],
    wanted: &str,
    database: &str,
) -> Result<&'c Cluster, UnknownCluster> {
    clusters
        .iter()
        .find(|c| c.name.as_ref().is_some_and(|n| n.as_str() == wanted))
        .or_else(|| {
            clusters
                .iter()
                .find(|c| c.etcd_cluster_id.eq_ignore_ascii_case(wanted))
        })
        .ok_or_else(|| UnknownCluster {
            database: database.to_string(),
            wanted: wanted.to_string(),
            known: match clusters.is_empty() {
                true => "none: snapshot a cluster first".into(),
                false => listed(clusters),
            },
        })
}

/// `prod-eu-1 (8e9e05c52164694d), 5a1bd3c2b4f1e9a0`: the clusters as
/// messages list them.
pub fn listed(clusters: &[Cluster]) -> String {
    clusters
        .iter()
        .map(Cluster::described)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The columns [`cluster_at`] reads, over `clusters c`.
pub(super) const CLUSTER_COLUMNS: &str = "c.id, c.etcd_cluster_id, c.name";

/// The cluster in the next cells of a row selecting [`CLUSTER_COLUMNS`].
pub(super) fn cluster_at(c: &mut Cursor) -> Result<Cluster, StoreError> {
    Ok(Cluster {
        row: ClusterId(c.int("clusters.id")?),
        etcd_cluster_id: c.text("clusters.etcd_cluster_id")?,
        name: c.parsed("clusters.name", ClusterName::parse)?,
    })
}

impl<T: Sql + ?Sized> ClusterReads for T {
    fn clusters(&self) -> Result<Vec<Cluster>, StoreError> {
        let mut out = Vec::new();
        self.each(
            "clusters",
            &format!("SELECT {CLUSTER_COLUMNS} FROM clusters c ORDER BY c.id"),
            &[],
            &mut |row| {
                out.push(cluster_at(&mut Cursor::new(self, "clusters", row))?);
                Ok(())
            },
        )?;
        Ok(out)
    }
}

impl<T: Sql + ?Sized> ClusterWrites for T {
    /// Creates the cluster's row on first sight, takes its write lock
    /// ([`Sql::lock_cluster`]), then names it.
    fn cluster(
        &self,
        etcd_cluster_id: &str,
        name: Option<&ClusterName>,
    ) -> Result<(ClusterId, Option<ClusterName>), StoreError> {
        let id = Cell::Text(etcd_cluster_id.to_string());
        self.execute(
            "INSERT INTO clusters (etcd_cluster_id, first_seen) VALUES ($1, $2) ON CONFLICT (etcd_cluster_id) DO NOTHING",
            &[id.clone(), Cell::from(jiff::Timestamp::now())],
        )?;
        let Cluster { row, name: had, .. } = one_row(
            self,
            "clusters",
            &format!("SELECT {CLUSTER_COLUMNS} FROM clusters c WHERE c.etcd_cluster_id = $1"),
            std::slice::from_ref(&id),
            cluster_at,
        )?;
        self.lock_cluster(row.0, etcd_cluster_id)?;
        let Some(name) = name.filter(|n| had.as_ref() != Some(*n)) else {
            return Ok((row, None));
        };
        let holder = first_row(
            self,
            "clusters",
            "SELECT etcd_cluster_id FROM clusters WHERE name = $1",
            &[Cell::Text(name.to_string())],
            |c| c.text("etcd_cluster_id"),
        )?;
        if let Some(holder) = holder {
            return Err(StoreError::Conflict {
                path: self.location().to_path_buf(),
                message: format!(
                    "already calls etcd cluster {holder} {name}: etcd cluster {etcd_cluster_id} cannot be {name} too; \
                     give it another --cluster name (or, for a data file of {holder} whose membership changed \
                     since it formed, --cluster-id {holder})"
                ),
            });
        }
        self.execute(
            "UPDATE clusters SET name = $2 WHERE id = $1",
            &[Cell::from(row), Cell::Text(name.to_string())],
        )?;
        Ok((row, had))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(row: i64, id: &str, name: Option<&str>) -> Cluster {
        Cluster {
            row: ClusterId(row),
            etcd_cluster_id: id.into(),
            name: name.map(|n| ClusterName::parse(n).unwrap()),
        }
    }

    #[test]
    fn names_are_plain_words() {
        for good in ["prod-eu-1", "a", "k8s.staging_2", &"x".repeat(63)] {
            assert_eq!(ClusterName::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "-prod", "prod eu", "prod/eu", "ünï", "a\nb", &"x".repeat(64)] {
            assert!(ClusterName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn found_by_name_then_by_id_else_every_cluster_listed() {
        let all = [
            cluster(1, "8e9e05c52164694d", Some("prod-eu-1")),
            cluster(2, "5a1b", None),
            // A name equal to another cluster's id: the name wins.
            cluster(3, "77", Some("5A1B")),
        ];
        assert_eq!(find(&all, "prod-eu-1", "db").unwrap().row, ClusterId(1));
        assert_eq!(find(&all, "8E9E05C52164694D", "db").unwrap().row, ClusterId(1));
        assert_eq!(find(&all, "5a1b", "db").unwrap().row, ClusterId(2));
        assert_eq!(find(&all, "5A1B", "db").unwrap().row, ClusterId(3));
        assert_eq!(all[1].label(), "5a1b");
        let e = find(&all, "prod-us-1", "db").unwrap_err().to_string();
        assert_eq!(
            e,
            "db holds no cluster prod-us-1 (it holds: prod-eu-1 (8e9e05c52164694d), 5a1b, 5A1B (77))"
        );
        assert!(find(&[], "x", "db").unwrap_err().to_string().contains("none"));
    }

    #[test]
    fn a_name_is_one_clusters_and_a_new_one_renames() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::sqlite::Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
        let name = |n: &str| ClusterName::parse(n).unwrap();
        let (a, _) = store.cluster("aa", Some(&name("prod"))).unwrap();
        assert_eq!(store.cluster("aa", None).unwrap(), (a, None), "no name keeps it");
        assert_eq!(store.cluster("aa", Some(&name("prod"))).unwrap(), (a, None));
        let e = store.cluster("bb", Some(&name("prod"))).unwrap_err().to_string();
        assert!(
            e.contains("already calls etcd cluster aa prod: etcd cluster bb cannot be prod too"),
            "{e}"
        );
        let (b, _) = store.cluster("bb", None).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            store.cluster("aa", Some(&name("staging"))).unwrap(),
            (a, Some(name("prod"))),
            "a rename says what it replaced"
        );
        let labels: Vec<String> = store
            .clusters()
            .unwrap()
            .iter()
            .map(|c| c.label().to_string())
            .collect();
        assert_eq!(labels, ["staging", "bb"]);
        store.cluster("bb", Some(&name("prod"))).unwrap();
    }
}
