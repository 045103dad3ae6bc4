//! The server's snapshot over the Maintenance API.

use super::{Etcd, EtcdError};

impl Etcd {
    /// Streams the server's snapshot (the whole data file, with every
    /// retained revision, then its SHA-256) into `write(chunk,
    /// remaining_bytes)`; returns the bytes written.
    pub async fn download_snapshot(
        &self,
        write: &mut dyn FnMut(&[u8], u64) -> std::io::Result<()>,
    ) -> Result<u64, EtcdError> {
        let mut stream = self
            .client
            .maintenance_client()
            .snapshot()
            .await
            .map_err(|e| self.snapshot_err(e))?;
        let mut total = 0u64;
        while let Some(resp) = stream.message().await.map_err(|e| self.snapshot_err(e))? {
            write(resp.blob(), resp.remaining_bytes()).map_err(EtcdError::Save)?;
            total += resp.blob().len() as u64;
        }
        Ok(total)
    }

    fn snapshot_err(&self, e: etcd_client::Error) -> EtcdError {
        // etcd before 3.6 refuses the stream with "auth: permission denied"
        // and another code than PermissionDenied.
        if super::is_denied(&e) || super::reason(&e).contains("permission denied") {
            EtcdError::SnapshotDenied {
                endpoints: self.endpoints.clone(),
            }
        } else {
            self.request_err(e)
        }
    }
}
