//! A fake KMS plugin (v2 or v1beta1) on a unix socket, for tests of the
//! KMS client. Like Kubernetes' own test plugin it "decrypts" by
//! base64-decoding what it is given, so a test "encrypts" a DEK by
//! base64-encoding it; a ciphertext that is not base64 is refused with
//! `InvalidArgument`. Its messages and service are written here by hand,
//! independently of the crate's.

use base64::Engine;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::{UnixListener, UnixStream};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::Status;
use tonic_prost::ProstCodec;

/// The plugin messages.
pub mod api {
    use std::collections::HashMap;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StatusRequest {}

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StatusResponse {
        #[prost(string, tag = "1")]
        pub version: String,
        #[prost(string, tag = "2")]
        pub healthz: String,
        #[prost(string, tag = "3")]
        pub key_id: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DecryptRequest {
        #[prost(bytes = "vec", tag = "1")]
        pub ciphertext: Vec<u8>,
        #[prost(string, tag = "2")]
        pub uid: String,
        #[prost(string, tag = "3")]
        pub key_id: String,
        #[prost(map = "string, bytes", tag = "4")]
        pub annotations: HashMap<String, Vec<u8>>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DecryptResponse {
        #[prost(bytes = "vec", tag = "1")]
        pub plaintext: Vec<u8>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct VersionRequest {
        #[prost(string, tag = "1")]
        pub version: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct VersionResponse {
        #[prost(string, tag = "1")]
        pub version: String,
        #[prost(string, tag = "2")]
        pub runtime_name: String,
        #[prost(string, tag = "3")]
        pub runtime_version: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct V1DecryptRequest {
        #[prost(string, tag = "1")]
        pub version: String,
        #[prost(bytes = "vec", tag = "2")]
        pub cipher: Vec<u8>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct V1DecryptResponse {
        #[prost(bytes = "vec", tag = "1")]
        pub plain: Vec<u8>,
    }
}

/// Which plugin API the fake serves.
#[derive(Clone, Copy, Debug)]
pub enum FakeVersion {
    V1,
    V2,
}

/// What a v2 `Decrypt` was sent besides the ciphertext.
#[derive(Clone, Debug, PartialEq)]
pub struct DecryptSeen {
    pub uid: String,
    pub key_id: String,
    pub annotations: HashMap<String, Vec<u8>>,
}

/// A running fake plugin; it stops when dropped.
pub struct FakeKms {
    /// `dir/kms.sock`.
    pub socket: PathBuf,
    state: Arc<State>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct State {
    key_id: String,
    healthz: Mutex<String>,
    decrypt_calls: AtomicUsize,
    seen: Mutex<Vec<DecryptSeen>>,
}

impl FakeKms {
    /// Serves `version` of the API on `dir/kms.sock`, with `key_id` as its
    /// current key, on its own thread and tokio runtime.
    pub fn start(dir: &Path, version: FakeVersion, key_id: &str) -> FakeKms {
        Self::launch(dir, key_id, move |listener, state| async move {
            let incoming = Incoming(listener);
            let mut server = tonic::transport::Server::builder();
            let served = match version {
                FakeVersion::V2 => server.add_service(V2(state)).serve_with_incoming(incoming).await,
                FakeVersion::V1 => server.add_service(V1(state)).serve_with_incoming(incoming).await,
            };
            served.expect("the fake KMS plugin serves");
        })
    }

    /// Accepts connections on `dir/kms.sock` and never reads or answers.
    pub fn start_silent(dir: &Path) -> FakeKms {
        Self::launch(dir, "", |listener, _| async move {
            let mut held: Vec<UnixStream> = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        })
    }

    /// How many `Decrypt` calls it has answered (or refused).
    pub fn decrypt_calls(&self) -> usize {
        self.state.decrypt_calls.load(Ordering::SeqCst)
    }

    /// What the v2 `Decrypt` calls were sent, in order.
    pub fn decrypts_seen(&self) -> Vec<DecryptSeen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// What v2 `Status` answers as `healthz` from now on ("ok" at first).
    pub fn set_healthz(&self, healthz: &str) {
        *self.state.healthz.lock().unwrap() = healthz.to_string();
    }

    fn launch<F, Fut>(dir: &Path, key_id: &str, serve: F) -> FakeKms
    where
        F: FnOnce(UnixListener, Arc<State>) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let socket = dir.join("kms.sock");
        // Bound here, so that the socket accepts before `start` returns.
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        let state = Arc::new(State {
            key_id: key_id.to_string(),
            healthz: Mutex::new("ok".to_string()),
            decrypt_calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = state.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = UnixListener::from_std(listener).unwrap();
                tokio::select! {
                    () = serve(listener, shared) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime closes every connection.
        });
        FakeKms {
            socket,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for FakeKms {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The accepted connections of a listener, as tonic's server takes them.
struct Incoming(UnixListener);

impl tonic::codegen::tokio_stream::Stream for Incoming {
    type Item = std::io::Result<UnixStream>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0
            .poll_accept(cx)
            .map(|accepted| Some(accepted.map(|(stream, _)| stream)))
    }
}

impl State {
    fn status(&self) -> api::StatusResponse {
        api::StatusResponse {
            version: "v2".into(),
            healthz: self.healthz.lock().unwrap().clone(),
            key_id: self.key_id.clone(),
        }
    }

    fn unbase64(&self, ciphertext: &[u8]) -> Result<Vec<u8>, Status> {
        self.decrypt_calls.fetch_add(1, Ordering::SeqCst);
        base64::engine::general_purpose::STANDARD
            .decode(ciphertext)
            .map_err(|e| Status::invalid_argument(format!("ciphertext is not base64: {e}")))
    }

    fn decrypt_v2(&self, request: api::DecryptRequest) -> Result<api::DecryptResponse, Status> {
        self.seen.lock().unwrap().push(DecryptSeen {
            uid: request.uid,
            key_id: request.key_id,
            annotations: request.annotations,
        });
        let plaintext = self.unbase64(&request.ciphertext)?;
        Ok(api::DecryptResponse { plaintext })
    }

    fn decrypt_v1(&self, request: api::V1DecryptRequest) -> Result<api::V1DecryptResponse, Status> {
        if request.version != "v1beta1" {
            return Err(Status::invalid_argument(format!(
                "unsupported version {:?}",
                request.version
            )));
        }
        let plain = self.unbase64(&request.cipher)?;
        Ok(api::V1DecryptResponse { plain })
    }
}

/// A unary method answered at once by a function.
struct Handler<F>(F);

impl<F, Req, Resp> UnaryService<Req> for Handler<F>
where
    F: FnMut(Req) -> Result<Resp, Status>,
{
    type Response = Resp;
    type Future = std::future::Ready<Result<tonic::Response<Resp>, Status>>;

    fn call(&mut self, request: tonic::Request<Req>) -> Self::Future {
        std::future::ready((self.0)(request.into_inner()).map(tonic::Response::new))
    }
}

type HttpFuture = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

/// Decodes `request`, answers it with `handle`, encodes the answer.
async fn unary<Req, Resp>(
    request: http::Request<Body>,
    handle: impl FnMut(Req) -> Result<Resp, Status> + Send,
) -> http::Response<Body>
where
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
{
    let mut grpc = Grpc::new(ProstCodec::<Resp, Req>::default());
    grpc.unary(Handler(handle), request).await
}

/// `v2.KeyManagementService`.
#[derive(Clone)]
struct V2(Arc<State>);

impl NamedService for V2 {
    const NAME: &'static str = "v2.KeyManagementService";
}

impl tower::Service<http::Request<Body>> for V2 {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = HttpFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> HttpFuture {
        let state = self.0.clone();
        Box::pin(async move {
            Ok(match request.uri().path() {
                "/v2.KeyManagementService/Status" => {
                    unary(request, |_: api::StatusRequest| Ok(state.status())).await
                }
                "/v2.KeyManagementService/Decrypt" => {
                    unary(request, |r: api::DecryptRequest| state.decrypt_v2(r)).await
                }
                other => Status::unimplemented(format!("no method {other}")).into_http(),
            })
        })
    }
}

/// `v1beta1.KeyManagementService`.
#[derive(Clone)]
struct V1(Arc<State>);

impl NamedService for V1 {
    const NAME: &'static str = "v1beta1.KeyManagementService";
}

impl tower::Service<http::Request<Body>> for V1 {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = HttpFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> HttpFuture {
        let state = self.0.clone();
        Box::pin(async move {
            Ok(match request.uri().path() {
                "/v1beta1.KeyManagementService/Version" => {
                    unary(request, |_: api::VersionRequest| {
                        Ok(api::VersionResponse {
                            version: "v1beta1".into(),
                            runtime_name: "fake-kms".into(),
                            runtime_version: "0.1.0".into(),
                        })
                    })
                    .await
                }
                "/v1beta1.KeyManagementService/Decrypt" => {
                    unary(request, |r: api::V1DecryptRequest| state.decrypt_v1(r)).await
                }
                other => Status::unimplemented(format!("no method {other}")).into_http(),
            })
        })
    }
}
