//! Decryption of values kube-apiserver encrypted at rest (reference §2.4),
//! with the cluster's EncryptionConfiguration and, for KMS, its plugin.
//! Records are decrypted, then decoded: decode stays a pure function of
//! bytes, and the plugin call is the only I/O of this stage.

pub mod config;
pub mod kms;
pub mod label;
pub mod local;
pub mod policy;

use crate::decode::envelope::{encrypted_parts, CBOR_MAGIC, PROTOBUF_MAGIC};
use config::{EncryptionConfig, KmsProvider, KmsVersion, LocalKey, Provider};
use kms::KmsClient;
use label::Label;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A decrypted value and which provider and key it was stored under.
pub struct Plaintext {
    pub bytes: Vec<u8>,
    /// As [`label()`] names it: `aesgcm:key1`, `kms-v2:plugin:42`.
    pub label: String,
}

/// Why a value did not decrypt, or the decryptor could not be set up; a
/// caller can tell each case apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecryptError {
    /// The value is under a provider or key the config does not configure
    /// for its resource: restoring the key to the config is the only fix.
    #[error("stored under {stored}, which {} does not configure for this resource", config.display())]
    MissingKey { stored: String, config: PathBuf },
    /// Every configured key the value could be under was tried; one line
    /// naming each provider and key tried (`aesgcm key "key1":
    /// authentication failed`).
    #[error("{}", attempts.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Failed { attempts: Vec<Attempt> },
    /// A KMS plugin did not answer its status call (unreachable, refused,
    /// or not healthy).
    #[error("{0}")]
    PluginUnavailable(String),
    /// `--kms-socket` names a KMS provider the config does not have.
    #[error("--kms-socket {name}=...: {} has no kms provider named {name:?} (it has: {known})", config.display())]
    UnknownSocket {
        name: String,
        config: PathBuf,
        known: String,
    },
}

/// One configured key that did not open a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The provider and key (`aesgcm key "key1"`, `kms v2 provider "p"`).
    pub key: String,
    pub failure: Failure,
}

/// Why one key did not open a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Not the key the value was written with (authentication failed, bad
    /// padding, a plaintext that is no object).
    WrongKey(String),
    /// The value does not have its provider's layout (too short, an unknown
    /// DEK source type).
    Malformed(String),
    /// The KMS plugin could not be reached or refused; its message names the
    /// provider and its socket.
    Plugin(String),
}

impl std::fmt::Display for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.failure {
            Failure::WrongKey(why) | Failure::Malformed(why) => write!(f, "{}: {why}", self.key),
            Failure::Plugin(why) => f.write_str(why),
        }
    }
}

impl Failure {
    /// A cipher's failure: a wrong key, or a value of the wrong shape.
    fn of_cipher(e: local::CipherError) -> Failure {
        match e {
            local::CipherError::Authentication | local::CipherError::Padding => {
                Failure::WrongKey(e.to_string())
            }
            local::CipherError::TooShort(_) | local::CipherError::KeySize(_) => {
                Failure::Malformed(e.to_string())
            }
        }
    }
}

/// The configured providers and their KMS plugins.
pub struct Decryptor {
    config: EncryptionConfig,
    /// By KMS provider name.
    kms: HashMap<String, Arc<KmsClient>>,
}

impl std::fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Decryptor({})", self.config.path.display())
    }
}

impl Decryptor {
    /// Providers from `config`; `sockets` replaces a KMS provider's socket
    /// (`--kms-socket NAME=PATH`). Nothing is dialled yet.
    pub fn new(config: EncryptionConfig, sockets: &[(String, PathBuf)]) -> Result<Decryptor, DecryptError> {
        let mut kms = HashMap::new();
        for provider in config.rules.iter().flat_map(|r| &r.providers) {
            if let Provider::Kms(k) = provider {
                let mut k = k.clone();
                if let Some((_, path)) = sockets.iter().find(|(name, _)| *name == k.name) {
                    k.socket = path.clone();
                }
                kms.entry(k.name.clone())
                    .or_insert_with(|| Arc::new(KmsClient::new(k)));
            }
        }
        if let Some((name, _)) = sockets.iter().find(|(name, _)| !kms.contains_key(name)) {
            let known: Vec<&str> = kms.keys().map(String::as_str).collect();
            return Err(DecryptError::UnknownSocket {
                name: name.clone(),
                config: config.path.clone(),
                known: if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                },
            });
        }
        Ok(Decryptor { config, kms })
    }

    /// Asks every KMS plugin for its status, as a live run does before it
    /// reads: an unreachable plugin is one error at the start.
    pub fn check_plugins(&self) -> Result<Vec<(String, kms::KmsStatus)>, DecryptError> {
        let mut names: Vec<&String> = self.kms.keys().collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let status = self.kms[name]
                    .status()
                    .map_err(|e| DecryptError::PluginUnavailable(e.to_string()))?;
                Ok((name.clone(), status))
            })
            .collect()
    }

    /// The rule that chooses `resource`'s providers (`None`: identity).
    pub fn rule_for(&self, group: &str, resource: &str) -> Option<usize> {
        self.config.rule_for(group, resource)
    }

    /// Whether values under `rule` may be encrypted (any provider but
    /// identity): such values are sensitive.
    pub fn encrypts(&self, rule: Option<usize>) -> bool {
        rule.is_some_and(|i| {
            self.config.rules[i]
                .providers
                .iter()
                .any(|p| !matches!(p, Provider::Identity))
        })
    }

    /// The names-only policy recorded with a run; `statuses` gives each KMS
    /// v2 plugin's current key id.
    pub fn policy(&self, statuses: &[(String, kms::KmsStatus)]) -> policy::Policy {
        policy::Policy::of(&self.config, statuses)
    }

    /// Decrypts `value`, stored at `etcd_key` (the AAD) of a resource whose
    /// providers `rule` chooses. `Ok(None)`: not encrypted.
    pub fn decrypt(
        &self,
        rule: Option<usize>,
        etcd_key: &[u8],
        value: &[u8],
    ) -> Result<Option<Plaintext>, DecryptError> {
        let Some((provider, version, rest)) = encrypted_parts(value) else {
            return Ok(None);
        };
        let providers = rule.map_or(&[][..], |i| &self.config.rules[i].providers[..]);
        let mut tried = Vec::new();
        for p in providers {
            let attempt = match (p, provider, version) {
                (Provider::AesCbc(keys), "aescbc", "v1") => {
                    local_keys("aescbc", keys, rest, &mut tried, |k, d| {
                        local::aescbc(k, d)
                            .map_err(Failure::of_cipher)
                            .and_then(plausible)
                    })
                }
                (Provider::AesGcm(keys), "aesgcm", "v1") => {
                    local_keys("aesgcm", keys, rest, &mut tried, |k, d| {
                        local::aesgcm(k, d, etcd_key).map_err(Failure::of_cipher)
                    })
                }
                (Provider::Secretbox(keys), "secretbox", "v1") => {
                    local_keys("secretbox", keys, rest, &mut tried, |k, d| {
                        local::secretbox(k, d).map_err(Failure::of_cipher)
                    })
                }
                (Provider::Kms(k), "kms", v) if v == k.version.as_str() => named(rest, &k.name)
                    .map(|payload| self.kms_decrypt(k, etcd_key, payload).map_err(|e| tried.push(e))),
                _ => None,
            };
            if let Some(Ok(plain)) = attempt {
                return Ok(Some(plain));
            }
        }
        match tried.is_empty() {
            true => Err(DecryptError::MissingKey {
                stored: label(value).unwrap_or_default(),
                config: self.config.path.clone(),
            }),
            false => Err(DecryptError::Failed { attempts: tried }),
        }
    }

    /// The provider and key `value` names, as [`label()`] gives it but with
    /// the key names `rule`'s providers configure (a name may hold `:`).
    pub fn label(&self, rule: Option<usize>, value: &[u8]) -> Option<String> {
        let (provider, version, rest) = encrypted_parts(value)?;
        let providers = rule.map_or(&[][..], |i| &self.config.rules[i].providers[..]);
        let configured = providers.iter().find_map(|p| {
            let keys = match (p, provider, version) {
                (Provider::AesCbc(keys), "aescbc", "v1")
                | (Provider::AesGcm(keys), "aesgcm", "v1")
                | (Provider::Secretbox(keys), "secretbox", "v1") => keys,
                _ => return None,
            };
            keys.iter().find(|k| named(rest, &k.name).is_some())
        });
        match configured {
            Some(key) => Some(Label::local(provider, &key.name).to_string()),
            None => label(value),
        }
    }

    /// Decrypts a KMS value; every error names the provider.
    fn kms_decrypt(&self, k: &KmsProvider, etcd_key: &[u8], payload: &[u8]) -> Result<Plaintext, Attempt> {
        let client = &self.kms[&k.name];
        let key = format!("kms {} provider {:?}", k.version.as_str(), k.name);
        // The plugin's errors name the provider and its socket already.
        let plugin = |e: kms::KmsError| Attempt {
            key: key.clone(),
            failure: Failure::Plugin(e.to_string()),
        };
        let ours = |failure: Failure| Attempt {
            key: key.clone(),
            failure,
        };
        match k.version {
            KmsVersion::V2 => {
                let object = kms::parse_encrypted_object(payload).map_err(|e| ours(Failure::Malformed(e)))?;
                let source = client
                    .decrypt(&object.encrypted_dek_source, &object.key_id, &object.annotations)
                    .map_err(plugin)?;
                let data = &object.encrypted_data;
                let bytes = match object.encrypted_dek_source_type {
                    0 => local::aesgcm(&source, data, etcd_key),
                    1 if data.len() >= 32 => local::hkdf_key(&source, &data[..32])
                        .and_then(|key| local::aesgcm(&key, &data[32..], etcd_key)),
                    1 => Err(local::CipherError::TooShort(data.len())),
                    other => {
                        return Err(ours(Failure::Malformed(format!(
                            "encryptedDEKSourceType {other} is not known"
                        ))))
                    }
                }
                .map_err(|e| {
                    let why = format!("key id {:?}: {e}", object.key_id);
                    ours(match Failure::of_cipher(e) {
                        Failure::WrongKey(_) => Failure::WrongKey(why),
                        _ => Failure::Malformed(why),
                    })
                })?;
                Ok(Plaintext {
                    bytes,
                    label: Label::kms(KmsVersion::V2, &k.name, Some(&object.key_id)).to_string(),
                })
            }
            KmsVersion::V1 => {
                let (dek_cipher, data) = length_prefixed(payload).ok_or_else(|| {
                    ours(Failure::Malformed(
                        "value too short for its length-prefixed key".into(),
                    ))
                })?;
                let dek = client.decrypt(dek_cipher, "", &HashMap::new()).map_err(plugin)?;
                // Data from before Kubernetes 1.25 is AES-CBC under the DEK.
                let bytes = local::aesgcm(&dek, data, etcd_key)
                    .or_else(|gcm| {
                        local::aescbc(&dek, data)
                            .map_err(|_| Failure::of_cipher(gcm))
                            .and_then(plausible)
                    })
                    .map_err(ours)?;
                Ok(Plaintext {
                    bytes,
                    label: Label::kms(KmsVersion::V1, &k.name, None).to_string(),
                })
            }
        }
    }
}

impl KmsVersion {
    /// As the value's prefix writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            KmsVersion::V1 => "v1",
            KmsVersion::V2 => "v2",
        }
    }
}

/// Tries each configured key whose name the value carries; `None` when no
/// key's name matched.
fn local_keys(
    provider: &str,
    keys: &[LocalKey],
    rest: &[u8],
    tried: &mut Vec<Attempt>,
    open: impl Fn(&[u8], &[u8]) -> Result<Vec<u8>, Failure>,
) -> Option<Result<Plaintext, ()>> {
    let mut matched = false;
    for key in keys {
        let Some(data) = named(rest, &key.name) else {
            continue;
        };
        matched = true;
        match open(&key.secret, data) {
            Ok(bytes) => {
                return Some(Ok(Plaintext {
                    bytes,
                    label: Label::local(provider, &key.name).to_string(),
                }))
            }
            Err(failure) => tried.push(Attempt {
                key: format!("{provider} key {:?}", key.name),
                failure,
            }),
        }
    }
    matched.then_some(Err(()))
}

/// The bytes after `name:`, when `rest` starts with it.
fn named<'a>(rest: &'a [u8], name: &str) -> Option<&'a [u8]> {
    rest.strip_prefix(name.as_bytes())?.strip_prefix(b":")
}

/// KMS v1's big-endian `uint16` length, that many bytes, and the rest.
fn length_prefixed(payload: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = payload.split_first_chunk::<2>()?;
    let len = u16::from_be_bytes(*len) as usize;
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// aescbc has no MAC: a wrong key gives valid padding about once in 256
/// tries, so a plaintext counts only if it starts like a stored object.
fn plausible(bytes: Vec<u8>) -> Result<Vec<u8>, Failure> {
    let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
    if bytes.starts_with(PROTOBUF_MAGIC) || bytes.starts_with(CBOR_MAGIC) || first == Some(b'{') {
        Ok(bytes)
    } else {
        Err(Failure::WrongKey(
            "wrong key (the plaintext is not an object)".into(),
        ))
    }
}

/// The provider and key an encrypted value names, without any config:
/// `aescbc:key1` (a key name may contain `:`; without the config's names
/// it ends at the next `:`), `kms-v1:plugin`, `kms-v2:plugin:<key id>`.
/// `None` for a value that is not encrypted.
pub fn label(value: &[u8]) -> Option<String> {
    let (provider, version, rest) = encrypted_parts(value)?;
    let end = rest.iter().position(|&b| b == b':').unwrap_or(rest.len());
    let name = String::from_utf8_lossy(&rest[..end]);
    // A KMS v2 value's key id is inside its EncryptedObject; one that does
    // not parse names no key id (decrypting it says why).
    let key_id = match (provider, version) {
        ("kms", "v2") => rest
            .get(end + 1..)
            .and_then(|object| kms::parse_encrypted_object(object).ok())
            .map(|o| o.key_id),
        _ => None,
    };
    Some(Label::of_envelope(provider, version, &name, key_id.as_deref()).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex::unhex;

    /// Kubernetes' AES-GCM vector: key `snorlax_awesomes`, authenticated
    /// data `bamboo`, plaintext `pandas are the best`.
    const GCM_PAYLOAD: &str =
        "9f27c8fcea8a58c467d8e437dbf2d85955f9b4bd912f4ef967d788a0cb07797dac0a3f0a0845605ca85ac8562b4ae1";

    fn decryptor(secret: &str) -> (tempfile::TempDir, Decryptor) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        std::fs::write(
            &path,
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aesgcm:\n          keys: [{{name: k1, secret: '{secret}'}}]\n"
            ),
        )
        .unwrap();
        let config = config::load(&path).unwrap();
        (dir, Decryptor::new(config, &[]).unwrap())
    }

    fn value(key: &str, payload: &[u8]) -> Vec<u8> {
        [format!("k8s:enc:aesgcm:v1:{key}:").as_bytes(), payload].concat()
    }

    #[test]
    fn each_failure_is_its_own_case() {
        let payload = unhex(GCM_PAYLOAD).unwrap();
        // base64 of `snorlax_awesomes`, and of `snorlax_awesomeS`.
        let (dir, right) = decryptor("c25vcmxheF9hd2Vzb21lcw==");
        let (_other, wrong) = decryptor("c25vcmxheF9hd2Vzb21lUw==");
        let rule = right.rule_for("", "secrets");
        let opened = right
            .decrypt(rule, b"bamboo", &value("k1", &payload))
            .unwrap()
            .unwrap();
        assert_eq!(
            (opened.bytes.as_slice(), opened.label.as_str()),
            (&b"pandas are the best"[..], "aesgcm:k1")
        );
        match right.decrypt(rule, b"bamboo", &value("k2", &payload)) {
            Err(DecryptError::MissingKey { stored, .. }) => assert_eq!(stored, "aesgcm:k2"),
            other => panic!("{:?}", other.err()),
        }
        match wrong.decrypt(rule, b"bamboo", &value("k1", &payload)) {
            Err(DecryptError::Failed { attempts }) => {
                assert_eq!(
                    attempts[0].failure,
                    Failure::WrongKey("authentication failed".into())
                );
                assert_eq!(
                    attempts[0].to_string(),
                    r#"aesgcm key "k1": authentication failed"#
                );
            }
            other => panic!("{:?}", other.err()),
        }
        match right.decrypt(rule, b"bamboo", &value("k1", &payload[..20])) {
            Err(DecryptError::Failed { attempts }) => {
                assert!(
                    matches!(attempts[0].failure, Failure::Malformed(_)),
                    "{attempts:?}"
                )
            }
            other => panic!("{:?}", other.err()),
        }
        let config = config::load(&dir.path().join("enc.yaml")).unwrap();
        match Decryptor::new(config, &[("p".into(), "/nowhere".into())]) {
            Err(e @ DecryptError::UnknownSocket { .. }) => {
                assert!(e.to_string().contains("(it has: none)"), "{e}")
            }
            other => panic!("{:?}", other.err()),
        }
    }
}
