//! The server's version from `GET /version` on its client port, which etcd
//! serves to anyone who can connect: some releases (3.4.45) refuse `Status`
//! to users without the root role, and the version decides how a replay may
//! end (see [`crate::source::server_version`]).

use super::Connection;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::sync::Arc;

/// What `/version` answers: `{"etcdserver":"3.4.45","etcdcluster":"3.4.0"}`.
#[derive(serde::Deserialize)]
struct Versions {
    etcdserver: String,
}

/// The version `endpoint` reports over HTTP(S), with the connection's CA and
/// client certificate; `None` when it cannot be learnt within the dial
/// timeout.
pub(super) async fn version_over_http(connection: &Connection, endpoint: &str) -> Option<String> {
    tokio::time::timeout(connection.dial_timeout, ask(connection, endpoint))
        .await
        .ok()
        .flatten()
}

async fn ask(connection: &Connection, endpoint: &str) -> Option<String> {
    let uri: hyper::Uri = format!("{}/version", endpoint.trim_end_matches('/'))
        .parse()
        .ok()?;
    let authority = uri.authority()?.clone();
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tls = uri.scheme_str() == Some("https");
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await.ok()?;
    let request = hyper::Request::get("/version")
        .header(hyper::header::HOST, authority.as_str())
        .body(Empty::<Bytes>::new())
        .ok()?;
    let body = match tls {
        true => {
            let config = client_config(connection)?;
            let name = ServerName::try_from(host).ok()?;
            let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .ok()?;
            get(TokioIo::new(stream), request).await?
        }
        false => get(TokioIo::new(tcp), request).await?,
    };
    serde_json::from_slice::<Versions>(&body)
        .ok()
        .map(|v| v.etcdserver)
}

/// Sends `request` over `io` (HTTP/1.1) and returns the body of a success.
async fn get<T>(io: T, request: hyper::Request<Empty<Bytes>>) -> Option<Bytes>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.ok()?;
    let driven = tokio::spawn(connection);
    let response = sender.send_request(request).await.ok();
    let body = match response {
        Some(r) if r.status().is_success() => r.into_body().collect().await.ok().map(|b| b.to_bytes()),
        _ => None,
    };
    driven.abort();
    body
}

/// TLS as the gRPC connection has it: the CA from `--cacert`, the client
/// certificate from `--cert`/`--key` when given.
fn client_config(connection: &Connection) -> Option<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(connection.cacert.as_ref()?).ok()?;
    for cert in CertificateDer::pem_slice_iter(&ca) {
        roots.add(cert.ok()?).ok()?;
    }
    let builder =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .ok()?
            .with_root_certificates(roots);
    match (&connection.cert, &connection.key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_slice_iter(&std::fs::read(cert).ok()?)
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            let key = PrivateKeyDer::from_pem_slice(&std::fs::read(key).ok()?).ok()?;
            builder.with_client_auth_cert(certs, key).ok()
        }
        _ => Some(builder.with_no_client_auth()),
    }
}
