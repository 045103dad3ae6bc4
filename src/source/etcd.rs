//! Live etcd, read-only: connection (endpoints, TLS, auth, timeouts) and
//! reads. Nothing here writes to etcd.

use etcd_client::{Certificate, Client, ConnectOptions, GetOptions, Identity, TlsOptions};
use std::path::PathBuf;
use std::time::Duration;

/// Largest response accepted; etcd's own limit for a request is 1.5 MiB but
/// a Range response can hold many values.
pub const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// How to reach etcd, following etcdctl's flags.
#[derive(Clone, Debug)]
pub struct Connection {
    pub endpoints: Vec<String>,
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub dial_timeout: Duration,
    pub command_timeout: Duration,
}

/// A failure to talk to etcd, phrased for the user.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("cannot read {what} {path}: {source}")]
    ReadFile {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--cert and --key must be given together")]
    HalfIdentity,
    #[error("--user needs --password (or ETCDCTL_PASSWORD)")]
    MissingPassword,
    #[error("cannot connect to etcd at {endpoints}: {reason}")]
    Connect { endpoints: String, reason: String },
    #[error("etcd at {endpoints}: {reason}")]
    Request { endpoints: String, reason: String },
    #[error("saving the snapshot: {0}")]
    Save(std::io::Error),
}

/// One key as etcd returned it.
#[derive(Clone, Debug)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub version: i64,
    pub lease: i64,
}

/// An open read-only connection.
pub struct Etcd {
    client: Client,
    endpoints: String,
}

/// The most useful words of a client error: the innermost cause.
fn reason(e: &etcd_client::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = s.to_string();
        source = s.source();
    }
    match e {
        etcd_client::Error::GRpcStatus(status) => status.message().to_string(),
        _ => text,
    }
}

impl Connection {
    fn read(what: &'static str, path: &PathBuf) -> Result<Vec<u8>, EtcdError> {
        std::fs::read(path).map_err(|source| EtcdError::ReadFile {
            what,
            path: path.clone(),
            source,
        })
    }

    fn options(&self) -> Result<ConnectOptions, EtcdError> {
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(self.dial_timeout)
            .with_timeout(self.command_timeout)
            .with_keep_alive(Duration::from_secs(10), self.command_timeout);
        if let Some(user) = &self.user {
            let password = self.password.clone().ok_or(EtcdError::MissingPassword)?;
            opts = opts.with_user(user.clone(), password);
        }
        let tls_wanted = self.cacert.is_some()
            || self.cert.is_some()
            || self.endpoints.iter().any(|e| e.starts_with("https://"));
        if tls_wanted {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &self.cacert {
                tls = tls.ca_certificate(Certificate::from_pem(Self::read("CA certificate", ca)?));
            }
            match (&self.cert, &self.key) {
                (Some(cert), Some(key)) => {
                    tls = tls.identity(Identity::from_pem(
                        Self::read("certificate", cert)?,
                        Self::read("key", key)?,
                    ));
                }
                (None, None) => {}
                _ => return Err(EtcdError::HalfIdentity),
            }
            opts = opts.with_tls(tls);
        }
        Ok(opts)
    }

    /// Connects and checks the server answers (etcd-client connects lazily).
    pub async fn connect(&self) -> Result<Etcd, EtcdError> {
        let endpoints = self.endpoints.join(",");
        let connect_err = |e: etcd_client::Error| EtcdError::Connect {
            endpoints: endpoints.clone(),
            reason: reason(&e),
        };
        let client = tokio::time::timeout(
            self.dial_timeout,
            Client::connect(&self.endpoints, Some(self.options()?)),
        )
        .await
        .map_err(|_| EtcdError::Connect {
            endpoints: endpoints.clone(),
            reason: format!("no answer within {:?}", self.dial_timeout),
        })?
        .map_err(connect_err)?;
        let etcd = Etcd { client, endpoints };
        // A cheap read proves the endpoint, TLS and credentials all work.
        let mut status = etcd.client.maintenance_client();
        tokio::time::timeout(self.dial_timeout, status.status())
            .await
            .map_err(|_| EtcdError::Connect {
                endpoints: etcd.endpoints.clone(),
                reason: format!("no answer within {:?}", self.dial_timeout),
            })?
            .map_err(|e| EtcdError::Connect {
                endpoints: etcd.endpoints.clone(),
                reason: reason(&e),
            })?;
        Ok(etcd)
    }
}

impl Etcd {
    /// Reads one key, at `revision` when given (0 = current).
    pub async fn get(&self, key: &[u8], revision: i64) -> Result<Option<KeyValue>, EtcdError> {
        let mut kv = self
            .client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES);
        let resp = kv
            .get(key, Some(GetOptions::new().with_revision(revision)))
            .await
            .map_err(|e| EtcdError::Request {
                endpoints: self.endpoints.clone(),
                reason: reason(&e),
            })?;
        Ok(resp.kvs().first().map(|kv| KeyValue {
            key: kv.key().to_vec(),
            value: kv.value().to_vec(),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
            version: kv.version(),
            lease: kv.lease(),
        }))
    }
}

/// A read that stopped: etcd failed, or the sink refused a record.
#[derive(Debug, thiserror::Error)]
pub enum ReadError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Etcd(#[from] EtcdError),
    #[error(transparent)]
    Sink(E),
}

/// The keys a replay follows.
#[derive(Clone, Copy, Debug)]
pub enum Keys<'a> {
    /// Every key starting with these bytes.
    Prefix(&'a [u8]),
    /// One key.
    Exact(&'a [u8]),
}

/// What a history replay found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Every revision from the start up to the head was delivered.
    Complete,
    /// The start revision had been compacted; history is retained from this
    /// revision on.
    Compacted(i64),
}

/// What the server holds, pinned at the start of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    /// etcd's cluster id, hex.
    pub cluster_id: String,
    /// The revision the run reads the state at.
    pub head: i64,
}

/// A key that no object uses, watched to learn the compaction revision.
const PROBE_KEY: &[u8] = b"\0etcd-inspector/compaction-probe";

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

fn record_of(kv: etcd_client::KeyValue) -> crate::source::Record {
    let (create_revision, mod_revision, version, lease) =
        (kv.create_revision(), kv.mod_revision(), kv.version(), kv.lease());
    let (key, value) = kv.into_key_value();
    crate::source::Record {
        key,
        mod_revision,
        create_revision,
        version,
        lease,
        value,
        deleted: false,
    }
}

impl Etcd {
    fn request_err(&self, e: etcd_client::Error) -> EtcdError {
        EtcdError::Request {
            endpoints: self.endpoints.clone(),
            reason: reason(&e),
        }
    }

    /// Pins the current revision and names the cluster.
    pub async fn pin(&self) -> Result<Pinned, EtcdError> {
        let resp = self
            .client
            .kv_client()
            .get(
                crate::decode::key::COMPACT_REV_KEY,
                Some(GetOptions::new().with_count_only()),
            )
            .await
            .map_err(|e| self.request_err(e))?;
        let header = resp.header().ok_or_else(|| EtcdError::Request {
            endpoints: self.endpoints.clone(),
            reason: "response without a header".into(),
        })?;
        Ok(Pinned {
            cluster_id: format!("{:x}", header.cluster_id()),
            head: header.revision(),
        })
    }

    /// The server's compaction revision (0 if nothing was ever compacted),
    /// learnt by watching a key from revision 1: etcd cancels such a watch
    /// with the compaction revision, or syncs it when nothing was compacted.
    pub async fn compaction_revision(&self, timeout: Duration) -> Result<i64, EtcdError> {
        let mut stream = self
            .client
            .watch_client()
            .watch(
                PROBE_KEY,
                Some(etcd_client::WatchOptions::new().with_start_revision(1)),
            )
            .await
            .map_err(|e| self.request_err(e))?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if tokio::time::Instant::now() > deadline {
                return Err(EtcdError::Request {
                    endpoints: self.endpoints.clone(),
                    reason: format!("no answer to the compaction probe within {timeout:?}"),
                });
            }
            match tokio::time::timeout(Duration::from_millis(50), stream.message()).await {
                Err(_) => stream.request_progress().await.map_err(|e| self.request_err(e))?,
                Ok(msg) => {
                    let Some(resp) = msg.map_err(|e| self.request_err(e))? else {
                        return Err(EtcdError::Request {
                            endpoints: self.endpoints.clone(),
                            reason: "watch stream closed".into(),
                        });
                    };
                    if resp.canceled() {
                        if resp.compact_revision() > 0 {
                            return Ok(resp.compact_revision());
                        }
                        return Err(EtcdError::Request {
                            endpoints: self.endpoints.clone(),
                            reason: format!("watch cancelled: {}", resp.cancel_reason()),
                        });
                    }
                    if resp.created() {
                        stream.request_progress().await.map_err(|e| self.request_err(e))?;
                    } else if resp.events().is_empty() {
                        return Ok(0);
                    }
                }
            }
        }
    }

    /// Reads every key under `prefix`, and `compact_rev_key`, as of `head`,
    /// `page` keys per request; returns how many keys it read.
    pub async fn read_state<S>(
        &self,
        prefix: &[u8],
        head: i64,
        page: i64,
        sink: &mut S,
    ) -> Result<i64, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        let mut kv = self
            .client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES);
        let end = prefix_end(prefix);
        let mut start = prefix.to_vec();
        let mut keys = 0;
        loop {
            let mut resp = kv
                .get(
                    start.clone(),
                    Some(
                        GetOptions::new()
                            .with_range(end.clone())
                            .with_revision(head)
                            .with_limit(page),
                    ),
                )
                .await
                .map_err(|e| self.request_err(e))?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            if let Some(last) = kvs.last() {
                start = last.key().to_vec();
                start.push(0);
            }
            for item in kvs {
                keys += 1;
                sink.record(record_of(item)).map_err(ReadError::Sink)?;
            }
            if !more {
                break;
            }
        }
        let mut resp = kv
            .get(
                crate::decode::key::COMPACT_REV_KEY,
                Some(GetOptions::new().with_revision(head)),
            )
            .await
            .map_err(|e| self.request_err(e))?;
        for item in resp.take_kvs() {
            sink.record(record_of(item)).map_err(ReadError::Sink)?;
        }
        Ok(keys)
    }

    /// Replays every revision of `keys` from `from` up to `head`: puts,
    /// deletes (as tombstones) and the earlier revision each one replaced.
    pub async fn replay<S>(
        &self,
        keys: Keys<'_>,
        from: i64,
        head: i64,
        idle: Duration,
        sink: &mut S,
    ) -> Result<Replay, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        if from > head {
            return Ok(Replay::Complete);
        }
        let mut opts = etcd_client::WatchOptions::new()
            .with_start_revision(from)
            .with_prev_key();
        let key = match keys {
            Keys::Prefix(p) => {
                opts = opts.with_prefix();
                p
            }
            Keys::Exact(k) => k,
        };
        let mut stream = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .watch(key, Some(opts))
            .await
            .map_err(|e| self.request_err(e))?;
        let mut last_message = tokio::time::Instant::now();
        loop {
            let msg = match tokio::time::timeout(Duration::from_millis(100), stream.message()).await {
                Err(_) => {
                    if last_message.elapsed() > idle {
                        return Err(EtcdError::Request {
                            endpoints: self.endpoints.clone(),
                            reason: format!("history replay stalled: nothing received for {idle:?}"),
                        }
                        .into());
                    }
                    // Ask where the watch is; etcd answers once it has caught up.
                    stream.request_progress().await.map_err(|e| self.request_err(e))?;
                    continue;
                }
                Ok(msg) => msg.map_err(|e| self.request_err(e))?,
            };
            last_message = tokio::time::Instant::now();
            let Some(resp) = msg else {
                return Err(EtcdError::Request {
                    endpoints: self.endpoints.clone(),
                    reason: "watch stream closed".into(),
                }
                .into());
            };
            if resp.canceled() {
                if resp.compact_revision() > 0 {
                    return Ok(Replay::Compacted(resp.compact_revision()));
                }
                return Err(EtcdError::Request {
                    endpoints: self.endpoints.clone(),
                    reason: format!("watch cancelled: {}", resp.cancel_reason()),
                }
                .into());
            }
            if resp.created() {
                stream.request_progress().await.map_err(|e| self.request_err(e))?;
                continue;
            }
            if resp.events().is_empty() {
                // A progress notification: every event up to its revision was sent.
                let through = resp.header().map_or(0, |h| h.revision());
                sink.progress(through.min(head)).map_err(ReadError::Sink)?;
                if through >= head {
                    return Ok(Replay::Complete);
                }
                continue;
            }
            let mut reached_head = false;
            for ev in resp.events() {
                let Some(kv) = ev.kv() else { continue };
                if kv.mod_revision() > head {
                    reached_head = true;
                    continue;
                }
                reached_head |= kv.mod_revision() == head;
                let prev_create = ev.prev_kv().map(|p| p.create_revision()).unwrap_or(0);
                if let Some(prev) = ev.prev_kv() {
                    sink.record(record_of(prev.clone())).map_err(ReadError::Sink)?;
                }
                let record = match ev.event_type() {
                    etcd_client::EventType::Put => record_of(kv.clone()),
                    etcd_client::EventType::Delete => crate::source::Record {
                        key: kv.key().to_vec(),
                        mod_revision: kv.mod_revision(),
                        create_revision: prev_create,
                        version: 0,
                        lease: 0,
                        value: Vec::new(),
                        deleted: true,
                    },
                };
                sink.record(record).map_err(ReadError::Sink)?;
            }
            // etcd never splits one revision's events across responses.
            if let Some(last) = resp
                .events()
                .iter()
                .filter_map(|e| e.kv())
                .map(|kv| kv.mod_revision())
                .max()
            {
                sink.progress(last.min(head)).map_err(ReadError::Sink)?;
            }
            if reached_head {
                return Ok(Replay::Complete);
            }
        }
    }
}

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
            .map_err(|e| self.request_err(e))?;
        let mut total = 0u64;
        while let Some(resp) = stream.message().await.map_err(|e| self.request_err(e))? {
            write(resp.blob(), resp.remaining_bytes()).map_err(EtcdError::Save)?;
            total += resp.blob().len() as u64;
        }
        Ok(total)
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
