//! The TLS client an sslmode asks for, as libpq checks a server: the chain
//! against the root certificate when one is given (always for verify-ca and
//! verify-full), the host name for verify-full only; with no root
//! certificate, prefer and require encrypt without checking, as libpq does.

use super::params::SslMode;
use crate::store::BackendError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The rustls client for `mode`, trusting `root_cert` and presenting
/// `client_cert` when given.
pub fn client_config(
    mode: SslMode,
    root_cert: Option<&Path>,
    client_cert: Option<&(PathBuf, PathBuf)>,
) -> Result<rustls::ClientConfig, BackendError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, root_cert) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(format!(
                "sslmode={} needs a root certificate: set sslrootcert or PGSSLROOTCERT, or put it at ~/.postgresql/root.crt",
                if mode == SslMode::VerifyCa { "verify-ca" } else { "verify-full" }
            )
            .into())
        }
        (_, None) => Arc::new(Unchecked(provider.clone())),
        (SslMode::VerifyFull, Some(root)) => webpki(root, &provider)?,
        (_, Some(root)) => Arc::new(ChainOnly(webpki(root, &provider)?)),
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    Ok(match client_cert {
        Some((cert, key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|c| c.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("client certificate {}: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("client key {}: {e}", key.display()))?;
            builder.with_client_auth_cert(certs, key)?
        }
        None => builder.with_no_client_auth(),
    })
}

/// The chain-and-name verifier over the certificates in `root` (PEM).
fn webpki(root: &Path, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, BackendError> {
    let unreadable = |e: &dyn std::fmt::Display| format!("root certificate {}: {e}", root.display());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(root).map_err(|e| unreadable(&e))? {
        roots
            .add(cert.map_err(|e| unreadable(&e))?)
            .map_err(|e| unreadable(&e))?;
    }
    if roots.is_empty() {
        return Err(unreadable(&"holds no certificate").into());
    }
    Ok(WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build()?)
}

/// Accepts any certificate (the handshake's signatures still checked):
/// encryption without authentication, libpq's require without a root.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

/// Checks the chain, not the name: libpq's verify-ca.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked after the chain: a wrong name means a good chain.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(mode: SslMode, root: Option<&Path>) -> String {
        client_config(mode, root, None).expect_err("refused").to_string()
    }

    #[test]
    fn verifying_needs_a_readable_root_certificate() {
        assert!(
            refusal(SslMode::VerifyFull, None).starts_with("sslmode=verify-full needs a root certificate")
        );
        assert!(refusal(SslMode::VerifyCa, None).starts_with("sslmode=verify-ca needs a root certificate"));
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = refusal(SslMode::Require, Some(&empty));
        assert!(
            err.contains("empty.pem") && err.contains("holds no certificate"),
            "{err}"
        );
        let err = refusal(SslMode::VerifyFull, Some(&dir.path().join("absent.pem")));
        assert!(err.contains("absent.pem"), "{err}");
    }

    #[test]
    fn without_a_root_certificate_prefer_and_require_encrypt_unchecked() {
        for mode in [SslMode::Prefer, SslMode::Require] {
            assert!(client_config(mode, None, None).is_ok());
        }
    }
}
