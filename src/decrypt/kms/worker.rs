//! The thread that talks to the plugin: a current-thread tokio runtime
//! owning the gRPC channel, serving each job it is sent in its own task,
//! each bounded by the provider's timeout.

use super::api;
use super::KmsStatus;
use crate::decrypt::config::{KmsProvider, KmsVersion};
use prost::Message;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use tokio::sync::mpsc as tmpsc;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint, Uri};

/// The thread that talks to the plugin, and how to reach it.
pub(super) struct Worker {
    pub(super) jobs: tmpsc::UnboundedSender<Job>,
    pub(super) thread: JoinHandle<()>,
}

/// A call, and where to send its answer.
pub(super) struct Job {
    pub(super) call: Call,
    pub(super) reply: mpsc::SyncSender<Result<Reply, String>>,
}

pub(super) enum Call {
    Status,
    Decrypt {
        ciphertext: Vec<u8>,
        key_id: String,
        annotations: HashMap<String, Vec<u8>>,
    },
}

pub(super) enum Reply {
    Status(KmsStatus),
    Plain(Vec<u8>),
}

impl Worker {
    /// Starts the thread; it stops once `jobs` is dropped.
    pub(super) fn start(provider: KmsProvider) -> std::io::Result<Worker> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (jobs, mut queue) = tmpsc::unbounded_channel::<Job>();
        let thread = std::thread::Builder::new()
            .name(format!("kms-{}", provider.name))
            .spawn(move || {
                runtime.block_on(async move {
                    let channel = Arc::new(tokio::sync::Mutex::new(None));
                    while let Some(job) = queue.recv().await {
                        let (provider, channel) = (provider.clone(), channel.clone());
                        tokio::spawn(async move {
                            let work = serve(&provider, &channel, job.call);
                            let result = tokio::time::timeout(provider.timeout, work)
                                .await
                                .unwrap_or_else(|_| Err(no_answer(&provider)));
                            let _ = job.reply.send(result);
                        });
                    }
                });
                // Dropping the runtime here cancels calls still in flight.
            })?;
        Ok(Worker { jobs, thread })
    }
}

/// The message of a call that timed out.
pub(super) fn no_answer(provider: &KmsProvider) -> String {
    format!("no answer within {:?}", provider.timeout)
}

/// One call to the plugin, on the worker's runtime.
async fn serve(
    provider: &KmsProvider,
    slot: &tokio::sync::Mutex<Option<Channel>>,
    call: Call,
) -> Result<Reply, String> {
    let channel = connect(provider, slot).await?;
    match (provider.version, call) {
        (KmsVersion::V2, Call::Status) => {
            let path = "/v2.KeyManagementService/Status";
            let r: api::StatusResponse = unary(channel, path, api::StatusRequest {})
                .await
                .map_err(|s| rpc_error("Status", s))?;
            if r.healthz != "ok" {
                return Err(format!("Status says healthz {:?}", r.healthz));
            }
            if r.version != "v2" && r.version != "v2beta1" {
                return Err(format!(
                    "Status says version {:?}, not \"v2\" or \"v2beta1\"",
                    r.version
                ));
            }
            Ok(Reply::Status(KmsStatus {
                version: r.version,
                healthz: r.healthz,
                key_id: r.key_id,
            }))
        }
        (KmsVersion::V1, Call::Status) => {
            let path = "/v1beta1.KeyManagementService/Version";
            let request = api::VersionRequest {
                version: "v1beta1".into(),
            };
            let r: api::VersionResponse = unary(channel, path, request)
                .await
                .map_err(|s| rpc_error("Version", s))?;
            if r.version != "v1beta1" {
                return Err(format!("Version says version {:?}, not \"v1beta1\"", r.version));
            }
            Ok(Reply::Status(KmsStatus {
                version: r.version,
                healthz: "ok".into(),
                key_id: String::new(),
            }))
        }
        (
            version,
            Call::Decrypt {
                ciphertext,
                key_id,
                annotations,
            },
        ) => {
            let plain = if version == KmsVersion::V2 {
                static CALLS: AtomicU64 = AtomicU64::new(0);
                let uid = format!(
                    "etcd-inspector-{}-{}",
                    std::process::id(),
                    CALLS.fetch_add(1, Ordering::Relaxed)
                );
                let request = api::DecryptRequest {
                    ciphertext,
                    uid,
                    key_id,
                    annotations,
                };
                let path = "/v2.KeyManagementService/Decrypt";
                let r: api::DecryptResponse = unary(channel, path, request)
                    .await
                    .map_err(|s| rpc_error("Decrypt", s))?;
                r.plaintext
            } else {
                let request = api::V1DecryptRequest {
                    version: "v1beta1".into(),
                    cipher: ciphertext,
                };
                let path = "/v1beta1.KeyManagementService/Decrypt";
                let r: api::V1DecryptResponse = unary(channel, path, request)
                    .await
                    .map_err(|s| rpc_error("Decrypt", s))?;
                r.plain
            };
            if plain.is_empty() {
                return Err("Decrypt answered an empty plaintext".into());
            }
            Ok(Reply::Plain(plain))
        }
    }
}

/// The channel to the plugin, dialled on first use (and again after a
/// failed dial).
async fn connect(
    provider: &KmsProvider,
    slot: &tokio::sync::Mutex<Option<Channel>>,
) -> Result<Channel, String> {
    let mut slot = slot.lock().await;
    if let Some(channel) = &*slot {
        return Ok(channel.clone());
    }
    let socket = provider.socket.clone();
    let connector = tower::service_fn(move |_: Uri| {
        let socket = socket.clone();
        async move {
            let stream = tokio::net::UnixStream::connect(socket).await?;
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
        }
    });
    let channel = Endpoint::from_static("http://localhost")
        .connect_with_connector(connector)
        .await
        .map_err(|e| format!("cannot connect: {}", cause(&e)))?;
    *slot = Some(channel.clone());
    Ok(channel)
}

/// One unary call, as tonic-generated clients make it.
async fn unary<Req, Resp>(channel: Channel, path: &'static str, request: Req) -> Result<Resp, tonic::Status>
where
    Req: Message + Send + Sync + 'static,
    Resp: Message + Default + Send + Sync + 'static,
{
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::from_error(Box::new(e)))?;
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    let response = grpc
        .unary(
            tonic::Request::new(request),
            PathAndQuery::from_static(path),
            codec,
        )
        .await?;
    Ok(response.into_inner())
}

/// What a failed call says: the socket's error when the plugin could not
/// be reached, else the plugin's own message.
fn rpc_error(method: &str, status: tonic::Status) -> String {
    if let Some(io) = find_io_error(&status) {
        return format!("cannot connect: {io}");
    }
    let message = if status.message().is_empty() {
        status.code().description()
    } else {
        status.message()
    };
    format!("{method} refused: {message}")
}

fn find_io_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        next = e.source();
    }
    None
}

/// The innermost useful message of a transport error: its io error, or
/// its chain of messages.
fn cause(error: &(dyn std::error::Error + 'static)) -> String {
    if let Some(io) = find_io_error(error) {
        return io.to_string();
    }
    let mut parts = vec![error.to_string()];
    let mut next = error.source();
    while let Some(e) = next {
        parts.push(e.to_string());
        next = e.source();
    }
    parts.join(": ")
}
