//! The server's snapshot over the Maintenance API, downloaded again from
//! the start (from another member where one is given) when the stream is
//! cut.

use super::retry::{is_transient, Retries};
use super::{members::Member, reason, Etcd, EtcdError};

/// Where the snapshot goes: `(chunk, remaining_bytes, from_start)`.
pub type WriteChunk<'a> = dyn FnMut(&[u8], u64, bool) -> std::io::Result<()> + 'a;

/// Why one download attempt ended without the whole snapshot.
enum Cut {
    /// Worth trying again: the member failed or stalled.
    Transient(String),
    Fatal(EtcdError),
}

impl Etcd {
    /// Streams the server's snapshot (the whole data file, with every
    /// retained revision, then its SHA-256) into `write(chunk,
    /// remaining_bytes, from_start)`; `from_start` marks the first chunk of
    /// each attempt, after which what was written before must be dropped.
    /// Returns the bytes written by the attempt that completed.
    pub async fn download_snapshot(&self, write: &mut WriteChunk<'_>) -> Result<u64, EtcdError> {
        let mut retries = Retries::new(self.connection.command_timeout);
        loop {
            let member = self.member();
            match self.download_from(&member, write, &mut retries).await {
                Ok(total) => return Ok(total),
                Err(Cut::Fatal(e)) => return Err(e),
                Err(Cut::Transient(why)) => {
                    if !retries.wait().await {
                        return Err(self.failure(format!("downloading the snapshot: {why}")));
                    }
                    self.fail_over(&member, why).await;
                }
            }
        }
    }

    /// One attempt, from `member`; each chunk must come within
    /// `--command-timeout`.
    async fn download_from(
        &self,
        member: &Member,
        write: &mut WriteChunk<'_>,
        retries: &mut Retries,
    ) -> Result<u64, Cut> {
        let timeout = self.connection.command_timeout;
        let cut = |e: etcd_client::Error| match is_transient(&e) {
            true => Cut::Transient(reason(&e)),
            false => Cut::Fatal(self.snapshot_err(e)),
        };
        let stalled = || Cut::Transient(format!("no data within {timeout:?}"));
        let mut stream = tokio::time::timeout(timeout, member.client.maintenance_client().snapshot())
            .await
            .map_err(|_| stalled())?
            .map_err(cut)?;
        let mut total = 0u64;
        while let Some(resp) = tokio::time::timeout(timeout, stream.message())
            .await
            .map_err(|_| stalled())?
            .map_err(cut)?
        {
            write(resp.blob(), resp.remaining_bytes(), total == 0)
                .map_err(|e| Cut::Fatal(EtcdError::Save(e)))?;
            total += resp.blob().len() as u64;
            retries.reset();
        }
        Ok(total)
    }

    fn snapshot_err(&self, e: etcd_client::Error) -> EtcdError {
        // etcd before 3.6 refuses the stream with "auth: permission denied"
        // and another code than PermissionDenied.
        if super::is_denied(&e) || super::reason(&e).contains("permission denied") {
            EtcdError::SnapshotDenied {
                endpoints: self.endpoint(),
            }
        } else {
            self.request_err(e)
        }
    }
}
