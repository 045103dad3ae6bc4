//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::StoreError;
use crate::store::cluster::{Cluster, ClusterName};

impl Store {
    pub(in crate::store) fn cluster(
        &self,
        _etcd_cluster_id: &str,
        _name: Option<&ClusterName>,
    ) -> Result<(i64, Option<ClusterName>), StoreError> {
        Err(self.unported("clusters"))
    }

    pub(in crate::store) fn read_clusters(&self) -> Result<Vec<Cluster>, StoreError> {
        Err(self.unported("clusters"))
    }
}
