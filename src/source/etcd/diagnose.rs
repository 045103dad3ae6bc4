//! Why a connection to an endpoint failed, in the words an etcdctl or
//! kubectl user expects, with the fix: TLS required or not spoken, a
//! server certificate not trusted (by which CA), a client certificate
//! required or not matching its key, what answered when it is not etcd,
//! nothing listening. The client libraries bury the cause in a chain of
//! errors (`transport error`, `h2 protocol error`); this walks the chain,
//! and where the chain cannot tell TLS from another server, asks the
//! endpoint over plain HTTP/1.1, as a person with curl would.

use super::Connection;
use std::error::Error;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a failed connection to `endpoint` says, as one clause.
pub(super) async fn why(e: &etcd_client::Error, connection: &Connection, endpoint: &str) -> String {
    let said = chain(e);
    let has = |needle: &str| said.iter().any(|s| s.contains(needle));
    let tls = endpoint.starts_with("https://");
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map_or(String::new(), |p| p.display().to_string());
    let closed = has("BrokenPipe") || has("broken pipe");
    // Refused without a client certificate: TLS 1.3 servers say
    // CertificateRequired, TLS 1.2 ones (etcd built with older Go) say
    // BadCertificate, or the connection just closes.
    let refused = has("CertificateRequired") || has("BadCertificate") || has("HandshakeFailure") || closed;
    if has("CertificateRequired") || (tls && refused && connection.cert.is_none()) {
        return "the server requires a client certificate: give --cert and --key (kubeadm: \
                /etc/kubernetes/pki/etcd/healthcheck-client.crt and .key)"
            .into();
    }
    if has("InvalidCertificate(UnknownIssuer)") || has("InvalidCertificate(BadSignature)") {
        return match &connection.cacert {
            Some(_) => format!(
                "the server's certificate is not signed by the CA in --cacert {}",
                path(&connection.cacert)
            ),
            None => "the server's certificate is not signed by a CA this system trusts: give \
                     --cacert (kubeadm: /etc/kubernetes/pki/etcd/ca.crt)"
                .into(),
        };
    }
    if let Some(other) = said.iter().find(|s| s.contains("InvalidCertificate")) {
        return format!("the server's certificate is refused: {other}");
    }
    if has("InconsistentKeys") {
        return format!(
            "--key {} is not the key of --cert {}",
            path(&connection.key),
            path(&connection.cert)
        );
    }
    if has("BadCertificate") || has("UnknownCA") || has("CertificateUnknown") || (tls && closed) {
        return format!(
            "the server refused the client certificate --cert {}: it is not signed by a CA the \
             server trusts (its --trusted-ca-file)",
            path(&connection.cert)
        );
    }
    if has("ConnectionRefused") || has("Connection refused") {
        return format!("connection refused: nothing listens at {}", address(endpoint));
    }
    if has("TimedOut") || has("timed out") {
        return format!(
            "timed out after {:?}: nothing answered at {} (a firewall, or the wrong address?)",
            connection.dial_timeout,
            address(endpoint)
        );
    }
    // A plain server ends a TLS hello with EOF, or (etcd 3.5.1's
    // connection multiplexer, at times) with a reset; a reset alone could
    // be anything, so the endpoint is asked over plain HTTP first.
    let reset = has("ConnectionReset") || has("Connection reset");
    if tls && (has("tls handshake eof") || (reset && speaks_plain_http(endpoint).await)) {
        return "the server does not speak TLS: use http://, or it is not etcd".into();
    }
    if has("HTTP status code") {
        let status = said
            .iter()
            .filter(|s| s.contains("HTTP status code"))
            .min_by_key(|s| s.len())
            .cloned();
        return format!(
            "what answered is an HTTP server, not etcd's gRPC ({})",
            status.unwrap_or_default()
        );
    }
    if !tls && (closed || has("h2 protocol error")) {
        if let Some(said) = http_answer(endpoint).await {
            return said;
        }
    }
    super::reason(e)
}

/// The messages of `e` and its causes, outermost first, each I/O error's
/// kind too.
fn chain(e: &etcd_client::Error) -> Vec<String> {
    // The Debug form holds causes some errors do not give as `source`.
    let mut said = vec![e.to_string(), format!("{e:?}")];
    let mut next: Option<&(dyn Error + 'static)> = match e {
        etcd_client::Error::GRpcStatus(status) => {
            said.push(status.message().to_string());
            status.source().map(|s| s as &(dyn Error + 'static))
        }
        other => other.source(),
    };
    while let Some(err) = next {
        said.push(err.to_string());
        said.push(format!("{err:?}"));
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            said.push(format!("{:?}", io.kind()));
        }
        next = err.source();
    }
    said
}

/// `host:port` of an endpoint URL.
fn address(endpoint: &str) -> &str {
    let rest = endpoint.split("://").nth(1).unwrap_or(endpoint);
    rest.split('/').next().unwrap_or(rest)
}

/// What the endpoint answers to a plain HTTP/1.1 request, when that tells
/// what it is: etcd serving TLS (Go's TLS server answers a plain request
/// so), or another HTTP server.
async fn http_answer(endpoint: &str) -> Option<String> {
    let address = address(endpoint);
    let answer = plain_answer(address).await?;
    if answer.is_empty() {
        // etcd serving TLS closes a plain connection without a word.
        return Some(
            "the server closed the connection without answering plain HTTP: it most likely \
             requires TLS (etcd with --cert-file): use https:// (and --cacert, --cert and --key)"
                .into(),
        );
    }
    if answer.contains("HTTP request to an HTTPS server") {
        return Some("the server requires TLS: use https:// (and --cacert, --cert and --key)".into());
    }
    let status = answer.lines().next().filter(|l| l.starts_with("HTTP/"))?;
    Some(format!(
        "what answered at {address} is not etcd's gRPC: an HTTP server that says {status:?}"
    ))
}

/// Whether the endpoint answers a plain HTTP/1.1 request with an HTTP
/// status line: a server without TLS.
async fn speaks_plain_http(endpoint: &str) -> bool {
    plain_answer(address(endpoint))
        .await
        .is_some_and(|answer| answer.starts_with("HTTP/"))
}

/// The first bytes `address` sends back to `GET /version` over plain
/// HTTP/1.1, within two seconds; `None` when it cannot be asked.
async fn plain_answer(address: &str) -> Option<String> {
    let ask = async {
        let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
        let request = format!("GET /version HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut answer = vec![0u8; 512];
        let n = stream.read(&mut answer).await.ok()?;
        Some(String::from_utf8_lossy(&answer[..n]).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(2), ask).await.ok()?
}
