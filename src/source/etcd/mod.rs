//! Live etcd, read-only: connection (endpoints, TLS, auth, timeouts),
//! point reads, the state at a revision (`read`), history by Watch
//! (`replay`) and the server's snapshot (`download`). Nothing here
//! writes to etcd.

mod diagnose;
mod discovery;
mod download;
mod http_version;
mod members;
mod read;
mod replay;
mod retry;

pub use discovery::Discovery;
pub use members::MemberEvent;
pub use read::Pinned;
pub use replay::{Replay, Scope};

use crate::source::server_version::ServerVersion;
use crate::source::Revision;
use etcd_client::{Certificate, ConnectOptions, GetOptions, Identity, TlsOptions};
use members::Member;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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
    /// Where the endpoints to choose from come from.
    pub discovery: Discovery,
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
    #[error("no etcd client URL found in DNS for {domain}: {reason}")]
    Discovery { domain: String, reason: String },
    /// Every endpoint given failed its probe: each with why.
    #[error("no etcd member is usable: {0}")]
    NoMember(String),
    #[error("no etcd endpoint given")]
    NoEndpoints,
    #[error("etcd at {endpoints}: {reason}")]
    Request { endpoints: String, reason: String },
    #[error("saving the snapshot: {0}")]
    Save(std::io::Error),
    /// A read the credentials may not make, with the permission to grant.
    #[error(
        "etcd at {endpoint}: permission denied reading {what}; a role of {who} needs it: etcdctl \
         role grant-permission {grant}"
    )]
    Denied {
        endpoint: String,
        /// `key compact_rev_key`, `keys under /registry/`.
        what: String,
        /// `ROLE read compact_rev_key`, `--prefix=true ROLE read /registry/`.
        grant: String,
        /// `user NAME`, or `these credentials`.
        who: String,
    },
    /// The Maintenance snapshot was refused (it needs etcd's root role).
    #[error("etcd at {endpoints}: permission denied to download the snapshot")]
    SnapshotDenied { endpoints: String },
    /// A watch of every key was refused; the replay falls back to the scope.
    #[error("permission denied to watch every key")]
    WatchDenied,
    #[error(
        "etcd at {endpoints} {server} announce watch progress before the events it covers (etcd \
         issue 15220, fixed in 3.4.25 and 3.5.8), and these credentials may not watch every key, \
         so the end of the history replay cannot be confirmed; use credentials that can read every \
         key (kube-apiserver's), or snapshot --fetch snapshot"
    )]
    Unconfirmable {
        endpoints: String,
        /// "is version 3.4.23, which may", or why the version is unknown.
        server: String,
    },
}

/// What a read asks for, so that a refusal can say which permission it
/// lacks.
#[derive(Clone, Copy, Debug)]
pub(super) enum Reading<'a> {
    Key(&'a [u8]),
    Prefix(&'a [u8]),
}

impl Reading<'_> {
    /// The refusal of this read by the member at `endpoint`.
    fn denied(self, endpoint: &str, user: Option<&str>) -> EtcdError {
        let (what, grant) = match self {
            Reading::Key(key) => {
                let key = String::from_utf8_lossy(key);
                (format!("key {key}"), format!("ROLE read {key}"))
            }
            Reading::Prefix(prefix) => {
                let prefix = String::from_utf8_lossy(prefix);
                (
                    format!("keys under {prefix}"),
                    format!("--prefix=true ROLE read {prefix}"),
                )
            }
        };
        EtcdError::Denied {
            endpoint: endpoint.to_string(),
            what,
            grant,
            who: user.map_or("these credentials".into(), |u| format!("user {u}")),
        }
    }
}

/// One key as etcd returned it.
#[derive(Clone, Debug)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    pub lease: i64,
}

/// An open read-only connection to one member at a time: the first healthy
/// one of the endpoints, then another whenever the serving one fails.
pub struct Etcd {
    connection: Connection,
    serving: Mutex<Arc<Member>>,
    /// What happened to the choice of member since the run last asked.
    events: Mutex<Vec<MemberEvent>>,
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
        // `hasleader` on every request, as clientv3's WithRequireLeader
        // sends it: a member cut off from its leader refuses requests and
        // ends watches, instead of serving a silent, stale stream.
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(self.dial_timeout)
            .with_timeout(self.command_timeout)
            .with_keep_alive(Duration::from_secs(10), self.command_timeout)
            .with_require_leader(true);
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

    /// What the runs table and messages call this connection: the
    /// endpoints, or where they are to be found.
    pub fn describe(&self) -> String {
        match &self.discovery {
            Discovery::Given => self.endpoints.join(","),
            Discovery::Members => format!("members-of:{}", self.endpoints.join(",")),
            Discovery::Srv { domain, name: None } => format!("dns-srv:{domain}"),
            Discovery::Srv {
                domain,
                name: Some(name),
            } => format!("dns-srv:{domain}/{name}"),
        }
    }

    /// Probes every endpoint and connects to the first healthy member, in
    /// the order given; the others are kept as candidates to move to.
    pub async fn connect(&self) -> Result<Etcd, EtcdError> {
        let connection = self.discovered().await?;
        let (member, events) = members::choose(&connection).await?;
        Ok(Etcd {
            connection,
            serving: Mutex::new(Arc::new(member)),
            events: Mutex::new(events),
        })
    }
}

impl Etcd {
    /// Reads one key, at `revision` when given (0 = current).
    pub async fn get(&self, key: &[u8], revision: Revision) -> Result<Option<KeyValue>, EtcdError> {
        let resp = self
            .call(Reading::Key(key), |client| async move {
                client
                    .kv_client()
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .get(key, Some(GetOptions::new().with_revision(revision.0)))
                    .await
            })
            .await?;
        Ok(resp.kvs().first().map(|kv| KeyValue {
            key: kv.key().to_vec(),
            value: kv.value().to_vec(),
            create_revision: Revision(kv.create_revision()),
            mod_revision: Revision(kv.mod_revision()),
            version: kv.version(),
            lease: kv.lease(),
        }))
    }

    /// The member serving now.
    fn member(&self) -> Arc<Member> {
        self.serving.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn note(&self, event: MemberEvent) {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }

    /// What happened to the choice of member since the last call: endpoints
    /// skipped, the member that serves and each move to another.
    pub fn take_events(&self) -> Vec<MemberEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The endpoint of the member serving now.
    pub fn endpoint(&self) -> String {
        self.member().endpoint.clone()
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
        self.failure(reason(&e))
    }

    fn failure(&self, reason: String) -> EtcdError {
        EtcdError::Request {
            endpoints: self.endpoint(),
            reason,
        }
    }

    /// The version the serving member reported, as it spelt it; empty when
    /// the credentials may not ask.
    pub fn version(&self) -> String {
        self.member().version.clone()
    }

    /// The size of the serving member's data file, when the credentials may
    /// ask.
    pub fn db_size(&self) -> Option<i64> {
        self.member().db_size
    }

    /// The serving member's version, when it is one this tool can read.
    pub fn server_version(&self) -> Option<ServerVersion> {
        ServerVersion::parse(&self.member().version)
    }
}

/// A key-value etcd returned, as a record.
fn record_of(kv: etcd_client::KeyValue) -> crate::source::Record {
    let (create_revision, mod_revision, version, lease) =
        (kv.create_revision(), kv.mod_revision(), kv.version(), kv.lease());
    let (key, value) = kv.into_key_value();
    crate::source::Record {
        key,
        mod_revision: Revision(mod_revision),
        create_revision: Revision(create_revision),
        version,
        lease,
        value,
        deleted: false,
    }
}
