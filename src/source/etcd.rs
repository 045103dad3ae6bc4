//! Live etcd, read-only: connection (endpoints, TLS, auth, timeouts) and
//! reads. Nothing here writes to etcd.

use crate::decode::key::COMPACT_REV_KEY;
use crate::source::server_version::ServerVersion;
use crate::source::{LiveKey, Read, ReadError};
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
    /// A watch of every key was refused; the replay falls back to the scope.
    #[error("permission denied to watch every key")]
    WatchDenied,
    #[error(
        "etcd at {endpoints} {server} announce watch progress before the events it covers (etcd \
         issue 15220, fixed in 3.4.25 and 3.5.8), and these credentials may not watch every key, \
         so the end of the history replay cannot be confirmed; use credentials that can read every \
         key (kube-apiserver's), or snapshot --fetch-snapshot"
    )]
    Unconfirmable {
        endpoints: String,
        /// "is version 3.4.23, which may", or why the version is unknown.
        server: String,
    },
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
    /// The version the server reported, as it spelt it; empty when the
    /// credentials may not ask.
    version: String,
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
        // A cheap read proves the endpoint, TLS and credentials all work,
        // and names the server's version. Some releases reserve Status for
        // administrators: a plain read proves the rest then.
        let no_answer = || EtcdError::Connect {
            endpoints: endpoints.clone(),
            reason: format!("no answer within {:?}", self.dial_timeout),
        };
        let refused = |e: etcd_client::Error| EtcdError::Connect {
            endpoints: endpoints.clone(),
            reason: reason(&e),
        };
        let mut maintenance = client.maintenance_client();
        let version = match tokio::time::timeout(self.dial_timeout, maintenance.status())
            .await
            .map_err(|_| no_answer())?
        {
            Ok(status) => status.version().to_string(),
            Err(e) if is_denied(&e) => {
                let mut kv = client.kv_client();
                tokio::time::timeout(
                    self.dial_timeout,
                    kv.get(COMPACT_REV_KEY, Some(GetOptions::new().with_count_only())),
                )
                .await
                .map_err(|_| no_answer())?
                .map_err(refused)?;
                String::new()
            }
            Err(e) => return Err(refused(e)),
        };
        Ok(Etcd {
            version,
            client,
            endpoints,
        })
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

/// What a replay records: every key under the prefix, and
/// `compact_rev_key` (the apiserver's compaction marker, outside any prefix).
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    pub prefix: &'a [u8],
}

impl Scope<'_> {
    /// Whether a key is recorded.
    pub fn keeps(&self, key: &[u8]) -> bool {
        key.starts_with(self.prefix) || key == COMPACT_REV_KEY.as_bytes()
    }
}

/// What a history replay found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Every revision from the start up to the head was delivered.
    Complete,
    /// The start revision had been compacted; history is retained from this
    /// revision on.
    Compacted(i64),
    /// The sink asked to stop.
    Stopped,
}

/// What the server holds, pinned at the start of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    /// etcd's cluster id, hex.
    pub cluster_id: String,
    /// The revision the run reads the state at.
    pub head: i64,
}

/// The key range one watch covers.
#[derive(Clone, Copy, Debug)]
enum Watched<'a> {
    /// Every key. Every etcd revision belongs to a write, so the event at
    /// the head itself arrives and proves everything before it arrived.
    Everything,
    Prefix(&'a [u8]),
    Exact(&'a [u8]),
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

fn grpc_code(e: &etcd_client::Error) -> Option<tonic::Code> {
    match e {
        etcd_client::Error::GRpcStatus(status) => Some(status.code()),
        _ => None,
    }
}

/// etcd's "required revision has been compacted".
fn is_compacted(e: &etcd_client::Error) -> bool {
    grpc_code(e) == Some(tonic::Code::OutOfRange) && reason(e).contains("compacted")
}

fn is_denied(e: &etcd_client::Error) -> bool {
    grpc_code(e) == Some(tonic::Code::PermissionDenied)
}

impl Etcd {
    fn request_err(&self, e: etcd_client::Error) -> EtcdError {
        EtcdError::Request {
            endpoints: self.endpoints.clone(),
            reason: reason(&e),
        }
    }

    fn failure(&self, reason: String) -> EtcdError {
        EtcdError::Request {
            endpoints: self.endpoints.clone(),
            reason,
        }
    }

    /// The version the server reported, as it spelt it; empty when the
    /// credentials may not ask.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The server's version, when it is one this tool can read.
    pub fn server_version(&self) -> Option<ServerVersion> {
        ServerVersion::parse(&self.version)
    }

    /// Pins the current revision and names the cluster.
    pub async fn pin(&self) -> Result<Pinned, EtcdError> {
        let resp = self
            .client
            .kv_client()
            .get(COMPACT_REV_KEY, Some(GetOptions::new().with_count_only()))
            .await
            .map_err(|e| self.request_err(e))?;
        let header = resp
            .header()
            .ok_or_else(|| self.failure("response without a header".into()))?;
        Ok(Pinned {
            cluster_id: format!("{:x}", header.cluster_id()),
            head: header.revision(),
        })
    }

    /// Whether a read of `key` at `revision` is still possible (etcd
    /// refuses reads below its compaction revision).
    async fn readable_at(&self, key: &[u8], revision: i64) -> Result<bool, EtcdError> {
        let read = self
            .client
            .kv_client()
            .get(
                key,
                Some(GetOptions::new().with_revision(revision).with_count_only()),
            )
            .await;
        match read {
            Ok(_) => Ok(true),
            Err(e) if is_compacted(&e) => Ok(false),
            Err(e) => Err(self.request_err(e)),
        }
    }

    /// The server's compaction revision (0 if nothing was ever compacted),
    /// found by bisecting reads at old revisions of a key the run may read:
    /// a read below the compaction revision fails, one at or above it
    /// succeeds. About log2(head) cheap requests, none of which waits on
    /// the server's goodwill.
    pub async fn compaction_revision(&self, scope: Scope<'_>, head: i64) -> Result<i64, EtcdError> {
        if self.readable_at(scope.prefix, 1).await? {
            return Ok(0);
        }
        let (mut unreadable, mut readable) = (1, head.max(1));
        while readable - unreadable > 1 {
            let mid = unreadable + (readable - unreadable) / 2;
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
        head: i64,
        page: i64,
        keys_only: bool,
        mut each: impl FnMut(etcd_client::KeyValue) -> Result<bool, E>,
    ) -> Result<Read<()>, ReadError<E>>
    where
        E: std::error::Error + 'static,
    {
        let mut kv = self
            .client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES);
        let options = |opts: GetOptions| match keys_only {
            true => opts.with_keys_only(),
            false => opts,
        };
        let end = prefix_end(prefix);
        let mut start = prefix.to_vec();
        loop {
            let mut resp = kv
                .get(
                    start.clone(),
                    Some(options(
                        GetOptions::new()
                            .with_range(end.clone())
                            .with_revision(head)
                            .with_limit(page),
                    )),
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
                if !each(item).map_err(ReadError::Sink)? {
                    return Ok(Read::Stopped);
                }
            }
            if !more {
                break;
            }
        }
        let mut resp = kv
            .get(
                COMPACT_REV_KEY,
                Some(options(GetOptions::new().with_revision(head))),
            )
            .await
            .map_err(|e| self.request_err(e))?;
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
        head: i64,
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
    pub async fn live_keys(&self, scope: Scope<'_>, head: i64, page: i64) -> Result<Vec<LiveKey>, EtcdError> {
        let mut live = Vec::new();
        let read = self.each_key(scope.prefix, head, page, true, |kv| {
            live.push(LiveKey {
                create_revision: kv.create_revision(),
                mod_revision: kv.mod_revision(),
                version: kv.version(),
                key: kv.into_key_value().0,
            });
            Ok::<bool, std::convert::Infallible>(true)
        });
        match read.await {
            Ok(_) => Ok(live),
            Err(ReadError::Etcd(e)) => Err(e),
            // etcd reads never produce a data-file error.
            Err(ReadError::File(e)) => Err(self.failure(e.to_string())),
            Err(ReadError::Sink(never)) => match never {},
        }
    }

    /// Whether a watch of every key from `head` will see an event at
    /// `head`. Only a tombstone can be missing: compaction at exactly `head`
    /// dropped it on etcd up to 3.4.33 and 3.5.15. Any doubt answers yes:
    /// the watch then decides.
    async fn event_retained_at(&self, head: i64) -> Result<bool, EtcdError> {
        let written_at_head = self
            .client
            .kv_client()
            .get(
                [0u8],
                Some(
                    GetOptions::new()
                        .with_all_keys()
                        .with_revision(head)
                        .with_min_mod_revision(head)
                        .with_keys_only(),
                ),
            )
            .await;
        match written_at_head {
            Ok(resp) if !resp.kvs().is_empty() => return Ok(true),
            Ok(_) => {}
            Err(e) if is_compacted(&e) || is_denied(&e) => return Ok(true),
            Err(e) => return Err(self.request_err(e)),
        }
        // Only deletes at `head`; their tombstones stay unless compacted at
        // exactly `head`.
        match self.readable_at(&[0], head - 1).await {
            Ok(true) => return Ok(true),
            Ok(false) => {}
            Err(_) => return Ok(true),
        }
        Ok(self
            .server_version()
            .is_none_or(ServerVersion::keeps_tombstone_at_compaction))
    }

    /// Replays every revision in `scope` from `from` up to `head`: puts,
    /// deletes (as tombstones) and the earlier revision each one replaced.
    ///
    /// The replay ends on evidence: it watches every key, so the event at
    /// `head` (or a later one) arrives, and everything outside `scope` is
    /// dropped. Progress notifications never end it there. Credentials that
    /// may not watch every key fall back to watching `scope` alone, ended by
    /// a progress notification, which only etcd 3.4.25, 3.5.8 and later
    /// send after the events they cover; older servers are refused then.
    /// With `head = i64::MAX` it follows until the stream fails, reporting
    /// through [`Sink::progress`](crate::source::Sink::progress) how far
    /// everything has arrived.
    pub async fn replay<S>(
        &self,
        scope: Scope<'_>,
        from: i64,
        head: i64,
        idle: Duration,
        sink: &mut S,
    ) -> Result<Replay, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        if from > head || (from == head && !self.event_retained_at(head).await?) {
            return Ok(Replay::Complete);
        }
        match self
            .watch(Watched::Everything, scope, from, head, idle, sink)
            .await
        {
            Err(ReadError::Etcd(EtcdError::WatchDenied)) => {}
            done => return done,
        }
        let ordered = self
            .server_version()
            .is_some_and(ServerVersion::progress_is_ordered);
        if !ordered {
            let server = match self.version.is_empty() {
                true => "did not tell its version to these credentials, so it may be one that may".into(),
                false => format!("is version {}, which may", self.version),
            };
            return Err(EtcdError::Unconfirmable {
                endpoints: self.endpoints.clone(),
                server,
            }
            .into());
        }
        match self
            .watch(Watched::Prefix(scope.prefix), scope, from, head, idle, sink)
            .await?
        {
            Replay::Complete => {}
            ended => return Ok(ended),
        }
        self.watch(
            Watched::Exact(COMPACT_REV_KEY.as_bytes()),
            scope,
            from,
            head,
            idle,
            sink,
        )
        .await
    }

    /// One watch of `watched` from `from`, recording what `scope` keeps, up
    /// to `head`.
    async fn watch<S>(
        &self,
        watched: Watched<'_>,
        scope: Scope<'_>,
        from: i64,
        head: i64,
        idle: Duration,
        sink: &mut S,
    ) -> Result<Replay, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        let mut opts = etcd_client::WatchOptions::new()
            .with_start_revision(from)
            .with_prev_key();
        let key: &[u8] = match watched {
            Watched::Everything => {
                opts = opts.with_all_keys();
                b"\0"
            }
            Watched::Prefix(p) => {
                opts = opts.with_prefix();
                p
            }
            Watched::Exact(k) => k,
        };
        let version = self.server_version();
        // Progress notifications count only where etcd sends them after the
        // events they cover (etcd issue 15220); they end a replay only when
        // no event at the head can be expected, i.e. not watching everything.
        let ordered = version.is_some_and(ServerVersion::progress_is_ordered);
        let ends_on_progress = ordered && !matches!(watched, Watched::Everything);
        // A progress request sent while the watch catches up may never be
        // answered on some releases (etcd issue 17507): ask only after a
        // quiet spell, by when a watch with nothing to send has caught up.
        let ask_after = match version.is_some_and(ServerVersion::defers_progress) {
            true => Duration::from_secs(1),
            false => Duration::from_millis(100),
        };
        let mut stream = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .watch(key, Some(opts))
            .await
            .map_err(|e| self.request_err(e))?;
        let mut last_message = tokio::time::Instant::now();
        // Everything up to here has arrived, as the events prove.
        let mut proven = from - 1;
        loop {
            let msg = match tokio::time::timeout(ask_after, stream.message()).await {
                Err(_) => {
                    if last_message.elapsed() > idle {
                        return Err(self
                            .failure(format!("history replay stalled: nothing received for {idle:?}"))
                            .into());
                    }
                    // The answer keeps a quiet watch alive and, where etcd
                    // orders it, says how far the watch got.
                    stream.request_progress().await.map_err(|e| self.request_err(e))?;
                    continue;
                }
                Ok(msg) => msg.map_err(|e| self.request_err(e))?,
            };
            last_message = tokio::time::Instant::now();
            let Some(resp) = msg else {
                return Err(self.failure("watch stream closed".into()).into());
            };
            if resp.canceled() {
                if resp.compact_revision() > 0 {
                    return Ok(Replay::Compacted(resp.compact_revision()));
                }
                if resp.cancel_reason().contains("permission denied") {
                    return Err(EtcdError::WatchDenied.into());
                }
                return Err(self
                    .failure(format!("watch cancelled: {}", resp.cancel_reason()))
                    .into());
            }
            if resp.created() {
                continue;
            }
            if resp.events().is_empty() {
                // A progress notification. Where etcd may send it early it
                // proves nothing beyond the events, but still lets the sink
                // act (commit) on what they proved.
                let through = match ordered {
                    true => resp.header().map_or(0, |h| h.revision()),
                    false => proven,
                };
                if !sink.progress(through.min(head)).map_err(ReadError::Sink)? {
                    return Ok(Replay::Stopped);
                }
                if ends_on_progress && through >= head {
                    return Ok(Replay::Complete);
                }
                continue;
            }
            let mut newest = 0;
            for ev in resp.events() {
                let Some(kv) = ev.kv() else { continue };
                newest = newest.max(kv.mod_revision());
                if kv.mod_revision() > head || !scope.keeps(kv.key()) {
                    continue;
                }
                let prev_create = ev.prev_kv().map(|p| p.create_revision()).unwrap_or(0);
                if let Some(prev) = ev.prev_kv() {
                    if !sink.record(record_of(prev.clone())).map_err(ReadError::Sink)? {
                        return Ok(Replay::Stopped);
                    }
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
                if !sink.record(record).map_err(ReadError::Sink)? {
                    return Ok(Replay::Stopped);
                }
            }
            // A watch delivers revisions in order and never splits one
            // across responses: everything up to `newest` has arrived.
            proven = proven.max(newest);
            if !sink.progress(newest.min(head)).map_err(ReadError::Sink)? {
                return Ok(Replay::Stopped);
            }
            if newest >= head {
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
