//! Reads at a pinned revision: the head, the compaction revision, the keys
//! under a prefix (with or without values) and what a watch from the head
//! will see.

use super::replay::Scope;
use super::{is_compacted, is_denied, record_of, Etcd, EtcdError, Reading, MAX_RESPONSE_BYTES};
use crate::decode::key::COMPACT_REV_KEY;
use crate::source::server_version::ServerVersion;
use crate::source::{LiveKey, Read, ReadError, Revision};
use etcd_client::GetOptions;

/// What the server holds, pinned at the start of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    /// etcd's cluster id, hex.
    pub cluster_id: String,
    /// The revision the run reads the state at.
    pub head: Revision,
}

/// The first key after every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

impl Etcd {
    /// Pins the current revision and names the cluster.
    pub async fn pin(&self) -> Result<Pinned, EtcdError> {
        let resp = self
            .call(Reading::Key(COMPACT_REV_KEY.as_bytes()), |client| async move {
                client
                    .kv_client()
                    .get(COMPACT_REV_KEY, Some(GetOptions::new().with_count_only()))
                    .await
            })
            .await?;
        let header = resp
            .header()
            .ok_or_else(|| self.failure("response without a header".into()))?;
        Ok(Pinned {
            cluster_id: format!("{:x}", header.cluster_id()),
            head: Revision(header.revision()),
        })
    }

    /// Whether a read of `key` at `revision` is still possible (etcd
    /// refuses reads below its compaction revision).
    async fn readable_at(&self, key: &[u8], revision: Revision) -> Result<bool, EtcdError> {
        self.call(Reading::Key(key), |client| async move {
            let read = client
                .kv_client()
                .get(
                    key,
                    Some(GetOptions::new().with_revision(revision.0).with_count_only()),
                )
                .await;
            match read {
                Ok(_) => Ok(true),
                Err(e) if is_compacted(&e) => Ok(false),
                Err(e) => Err(e),
            }
        })
        .await
    }

    /// The server's compaction revision (0 if nothing was ever compacted),
    /// found by bisecting reads at old revisions of a key the run may read:
    /// a read below the compaction revision fails, one at or above it
    /// succeeds. About log2(head) cheap requests, none of which waits on
    /// the server's goodwill.
    pub async fn compaction_revision(&self, scope: Scope<'_>, head: Revision) -> Result<Revision, EtcdError> {
        if self.readable_at(scope.prefix, Revision(1)).await? {
            return Ok(Revision(0));
        }
        let (mut unreadable, mut readable) = (Revision(1), head.max(Revision(1)));
        while readable - unreadable > 1 {
            let mid = Revision(unreadable.0 + (readable - unreadable) / 2);
            if self.readable_at(scope.prefix, mid).await? {
                readable = mid;
            } else {
                unreadable = mid;
            }
        }
        Ok(readable)
    }

    /// Calls `each` for every key under `prefix`, then `compact_rev_key`, as
    /// of `head`, `page` keys per request; values are left out when
    /// `keys_only`.
    async fn each_key<E>(
        &self,
        prefix: &[u8],
        head: Revision,
        page: i64,
        keys_only: bool,
        mut each: impl FnMut(etcd_client::KeyValue) -> Result<bool, E>,
    ) -> Result<Read<()>, ReadError<E>>
    where
        E: std::error::Error + 'static,
    {
        // A page under the prefix, or `compact_rev_key`.
        let get = |page: bool, key: Vec<u8>, opts: GetOptions| {
            let reading = match page {
                true => Reading::Prefix(prefix),
                false => Reading::Key(COMPACT_REV_KEY.as_bytes()),
            };
            self.call(reading, move |client| {
                let (key, opts) = (key.clone(), opts.clone());
                async move {
                    client
                        .kv_client()
                        .max_decoding_message_size(MAX_RESPONSE_BYTES)
                        .get(key, Some(opts))
                        .await
                }
            })
        };
        let options = |opts: GetOptions| match keys_only {
            true => opts.with_keys_only(),
            false => opts,
        };
        let end = prefix_end(prefix);
        let mut start = prefix.to_vec();
        loop {
            let mut resp = get(
                true,
                start.clone(),
                options(
                    GetOptions::new()
                        .with_range(end.clone())
                        .with_revision(head.0)
                        .with_limit(page),
                ),
            )
            .await?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            if let Some(last) = kvs.last() {
                start = last.key().to_vec();
                start.push(0);
            }
            for item in kvs {
                if !each(item).map_err(ReadError::Sink)? {
                    return Ok(Read::Stopped);
                }
            }
            if !more {
                break;
            }
        }
        let mut resp = get(
            false,
            COMPACT_REV_KEY.as_bytes().to_vec(),
            options(GetOptions::new().with_revision(head.0)),
        )
        .await?;
        for item in resp.take_kvs() {
            if !each(item).map_err(ReadError::Sink)? {
                return Ok(Read::Stopped);
            }
        }
        Ok(Read::Done(()))
    }

    /// Reads every key under `prefix`, and `compact_rev_key`, as of `head`,
    /// `page` keys per request; returns how many keys under the prefix it
    /// read.
    pub async fn read_state<S>(
        &self,
        prefix: &[u8],
        head: Revision,
        page: i64,
        sink: &mut S,
    ) -> Result<Read<i64>, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        let mut keys = 0;
        let read = self
            .each_key(prefix, head, page, false, |item| {
                keys += i64::from(item.key().starts_with(prefix));
                sink.record(record_of(item))
            })
            .await?;
        Ok(match read {
            Read::Done(()) => Read::Done(keys),
            Read::Stopped => Read::Stopped,
        })
    }

    /// The counters of every live key in `scope` at `head`, without values.
    pub async fn live_keys(
        &self,
        scope: Scope<'_>,
        head: Revision,
        page: i64,
    ) -> Result<Vec<LiveKey>, EtcdError> {
        let mut live = Vec::new();
        self.each_live_key(scope, head, page, |k| {
            live.push(k);
            Ok::<bool, std::convert::Infallible>(true)
        })
        .await
        .map_err(|e| match e {
            ReadError::Etcd(e) => e,
            // etcd reads never produce a data-file error.
            ReadError::File(e) => self.failure(e.to_string()),
            ReadError::Sink(never) => match never {},
        })?;
        Ok(live)
    }

    /// Calls `each` with the counters of every live key in `scope` (then
    /// `compact_rev_key`) at `head`, in key order, without values, `page`
    /// keys per request: memory holds one page. `each` returning `false`
    /// stops the read.
    pub async fn each_live_key<E>(
        &self,
        scope: Scope<'_>,
        head: Revision,
        page: i64,
        mut each: impl FnMut(LiveKey) -> Result<bool, E>,
    ) -> Result<Read<()>, ReadError<E>>
    where
        E: std::error::Error + 'static,
    {
        self.each_key(scope.prefix, head, page, true, |kv| {
            each(LiveKey {
                create_revision: Revision(kv.create_revision()),
                mod_revision: Revision(kv.mod_revision()),
                version: kv.version(),
                key: kv.into_key_value().0,
            })
        })
        .await
    }

    /// Whether a watch of every key from `head` will see an event at
    /// `head`. Only a tombstone can be missing: compaction at exactly `head`
    /// dropped it on etcd up to 3.4.33 and 3.5.15. Any doubt answers yes:
    /// the watch then decides.
    pub(super) async fn event_retained_at(&self, head: Revision) -> Result<bool, EtcdError> {
        // A new etcd is at revision 1 with nothing written: the first write
        // is revision 2. (Reading at revision 0 below would mean "now".)
        if head <= Revision(1) {
            return Ok(false);
        }
        let written_at_head = self
            .call(Reading::Prefix(b""), |client| async move {
                let read = client
                    .kv_client()
                    .get(
                        [0u8],
                        Some(
                            GetOptions::new()
                                .with_all_keys()
                                .with_revision(head.0)
                                .with_min_mod_revision(head.0)
                                .with_keys_only(),
                        ),
                    )
                    .await;
                match read {
                    Ok(resp) => Ok(!resp.kvs().is_empty()),
                    Err(e) if is_compacted(&e) || is_denied(&e) => Ok(true),
                    Err(e) => Err(e),
                }
            })
            .await?;
        if written_at_head {
            return Ok(true);
        }
        // Only deletes at `head`; their tombstones stay unless compacted at
        // exactly `head`.
        match self.readable_at(&[0], head.prev()).await {
            Ok(true) => return Ok(true),
            Ok(false) => {}
            Err(_) => return Ok(true),
        }
        Ok(self
            .server_version()
            .is_none_or(ServerVersion::keeps_tombstone_at_compaction))
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"/registry/"), b"/registry0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }
}
