//! A client of a KMS plugin (v1beta1 or v2) over its unix socket: `Status`,
//! and `Decrypt` of data-encryption keys, each answer cached.
//!
//! The client lazily starts one OS thread that owns a current-thread tokio
//! runtime and the gRPC channel. Callers (any thread, also one inside a
//! runtime) send it a job and wait for the reply on a std channel, bounded
//! by the provider's timeout, so no caller ever blocks on a runtime.

use super::config::KmsProvider;
use prost::Message;
use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;
use worker::{no_answer, Call, Job, Reply, Worker};

/// What the plugin's `Status` answered (v2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KmsStatus {
    pub version: String,
    pub healthz: String,
    pub key_id: String,
}

/// A KMS v2 `EncryptedObject` (the bytes after `k8s:enc:kms:v2:<name>:`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EncryptedObject {
    pub encrypted_data: Vec<u8>,
    pub key_id: String,
    pub encrypted_dek_source: Vec<u8>,
    pub annotations: HashMap<String, Vec<u8>>,
    /// 0: the source is the DEK; 1: it is an HKDF seed.
    pub encrypted_dek_source_type: i32,
}

/// Why the plugin could not help: unreachable, refused, timed out.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct KmsError(pub String);

mod api;
mod worker;

/// A cached `Decrypt` answer; errors are kept too.
type Answer = Result<Arc<Vec<u8>>, KmsError>;

/// One provider's plugin. Blocking calls, usable from any thread (also
/// from inside a tokio runtime); each bounded by the provider's timeout.
pub struct KmsClient {
    provider: KmsProvider,
    worker: Mutex<Option<Worker>>,
    /// By ciphertext; a cell is filled once, other askers wait for it.
    cache: Mutex<HashMap<Vec<u8>, Arc<OnceLock<Answer>>>>,
}

impl KmsClient {
    /// A client of `provider`'s socket; nothing is dialled yet.
    pub fn new(provider: KmsProvider) -> KmsClient {
        KmsClient {
            provider,
            worker: Mutex::new(None),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The plugin's `Status` (v2) or `Version` (v1) answer.
    pub fn status(&self) -> Result<KmsStatus, KmsError> {
        match self.call(Call::Status)? {
            Reply::Status(status) => Ok(status),
            Reply::Plain(_) => Err(self.error("Status: unexpected answer")),
        }
    }

    /// The plaintext of `ciphertext` (an encrypted DEK or seed), from the
    /// cache or one `Decrypt` call.
    pub fn decrypt(
        &self,
        ciphertext: &[u8],
        key_id: &str,
        annotations: &HashMap<String, Vec<u8>>,
    ) -> Result<Arc<Vec<u8>>, KmsError> {
        let cell = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            match cache.get(ciphertext) {
                Some(cell) => cell.clone(),
                None => cache.entry(ciphertext.to_vec()).or_default().clone(),
            }
        };
        let mut asked = false;
        let answer = cell.get_or_init(|| {
            asked = true;
            let call = Call::Decrypt {
                ciphertext: ciphertext.to_vec(),
                key_id: key_id.to_string(),
                annotations: annotations.clone(),
            };
            match self.call(call)? {
                Reply::Plain(plain) => Ok(Arc::new(plain)),
                Reply::Status(_) => Err(self.error("Decrypt: unexpected answer")),
            }
        });
        match answer {
            Ok(plain) => Ok(plain.clone()),
            Err(e) if asked => Err(e.clone()),
            Err(e) => Err(KmsError(format!(
                "{e} (answer cached: this key is not asked for again in this run)"
            ))),
        }
    }

    /// `KMS provider "name" at /socket: what`, on one line.
    fn error(&self, what: impl std::fmt::Display) -> KmsError {
        let line = format!(
            "KMS provider {:?} at {}: {what}",
            self.provider.name,
            self.provider.socket.display()
        );
        KmsError(one_line(&line))
    }

    /// Hands `call` to the worker thread (starting it first if need be)
    /// and waits for its answer, at most the provider's timeout.
    fn call(&self, call: Call) -> Result<Reply, KmsError> {
        let stopped = || self.error("the client's thread has stopped");
        let jobs = {
            let mut worker = self.worker.lock().unwrap_or_else(PoisonError::into_inner);
            if worker.is_none() {
                *worker = Some(
                    Worker::start(self.provider.clone())
                        .map_err(|e| self.error(format_args!("cannot start a thread: {e}")))?,
                );
            }
            worker.as_ref().map(|w| w.jobs.clone()).ok_or_else(stopped)?
        };
        let (reply, answer) = mpsc::sync_channel(1);
        jobs.send(Job { call, reply }).map_err(|_| stopped())?;
        // The worker enforces the timeout itself; the margin only guards
        // against a worker that cannot run.
        let wait = self.provider.timeout + Duration::from_millis(200);
        match answer.recv_timeout(wait) {
            Ok(result) => result.map_err(|e| self.error(e)),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(self.error(no_answer(&self.provider))),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(stopped()),
        }
    }
}

impl Drop for KmsClient {
    fn drop(&mut self) {
        let worker = self.worker.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(Worker { jobs, thread }) = worker.take() {
            drop(jobs);
            let _ = thread.join();
        }
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses a KMS v2 `EncryptedObject`.
pub fn parse_encrypted_object(bytes: &[u8]) -> Result<EncryptedObject, String> {
    let object = api::EncryptedObject::decode(bytes)
        .map_err(|e| one_line(&format!("not a KMS v2 EncryptedObject: {e}")))?;
    let missing = if object.encrypted_data.is_empty() {
        Some("encryptedData")
    } else if object.key_id.is_empty() {
        Some("keyID")
    } else if object.encrypted_dek_source.is_empty() {
        Some("encryptedDEKSource")
    } else {
        None
    };
    if let Some(field) = missing {
        return Err(format!("the KMS v2 EncryptedObject has no {field}"));
    }
    if !matches!(object.encrypted_dek_source_type, 0 | 1) {
        return Err(format!(
            "the KMS v2 EncryptedObject has an unknown encryptedDEKSourceType {}",
            object.encrypted_dek_source_type
        ));
    }
    Ok(EncryptedObject {
        encrypted_data: object.encrypted_data,
        key_id: object.key_id,
        encrypted_dek_source: object.encrypted_dek_source,
        annotations: object.annotations,
        encrypted_dek_source_type: object.encrypted_dek_source_type,
    })
}
