//! Values encrypted the way kube-apiserver's providers write them (reference
//! §2.4), built here directly with the RustCrypto crates and the layouts, so
//! the tool's decryption is checked against an independent encryption.

use aes_gcm::aead::{Aead, AeadInPlace, KeyInit, Payload};
use cbc::cipher::{block_padding::Pkcs7, BlockEncryptMut, KeyIvInit};
use prost::Message;

/// `n` random bytes.
pub fn random(n: usize) -> Vec<u8> {
    let mut out = vec![0; n];
    getrandom::fill(&mut out).unwrap();
    out
}

/// AES-GCM (128/192/256 by key size): nonce(12) ‖ ciphertext ‖ tag(16).
pub fn gcm(key: &[u8], plaintext: &[u8], aad: &[u8]) -> Vec<u8> {
    let nonce = random(12);
    let payload = Payload { msg: plaintext, aad };
    let sealed = match key.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(key)
            .unwrap()
            .encrypt(nonce[..].into(), payload),
        32 => aes_gcm::Aes256Gcm::new_from_slice(key)
            .unwrap()
            .encrypt(nonce[..].into(), payload),
        n => panic!("no AES-GCM with a {n}-byte key here"),
    }
    .unwrap();
    [nonce, sealed].concat()
}

/// `k8s:enc:aesgcm:v1:<name>:` + AES-GCM with the etcd key as AAD.
pub fn aesgcm(name: &str, key: &[u8], etcd_key: &str, plaintext: &[u8]) -> Vec<u8> {
    [
        format!("k8s:enc:aesgcm:v1:{name}:").into_bytes(),
        gcm(key, plaintext, etcd_key.as_bytes()),
    ]
    .concat()
}

/// IV(16) ‖ AES-CBC with PKCS#7 padding.
pub fn cbc(key: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let iv = random(16);
    let ct = match key.len() {
        16 => cbc::Encryptor::<aes::Aes128>::new_from_slices(key, &iv)
            .unwrap()
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
        32 => cbc::Encryptor::<aes::Aes256>::new_from_slices(key, &iv)
            .unwrap()
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
        n => panic!("no AES-CBC with a {n}-byte key here"),
    };
    [iv, ct].concat()
}

/// `k8s:enc:aescbc:v1:<name>:` + AES-CBC.
pub fn aescbc(name: &str, key: &[u8], plaintext: &[u8]) -> Vec<u8> {
    [
        format!("k8s:enc:aescbc:v1:{name}:").into_bytes(),
        cbc(key, plaintext),
    ]
    .concat()
}

/// `k8s:enc:secretbox:v1:<name>:` + nonce(24) ‖ tag(16) ‖ ciphertext, as
/// Go's `secretbox.Seal` lays it out.
pub fn secretbox(name: &str, key: &[u8], plaintext: &[u8]) -> Vec<u8> {
    use crypto_secretbox::XSalsa20Poly1305;
    let nonce = random(24);
    let mut ct = plaintext.to_vec();
    let tag = XSalsa20Poly1305::new_from_slice(key)
        .unwrap()
        .encrypt_in_place_detached(nonce[..].into(), b"", &mut ct)
        .unwrap();
    [
        format!("k8s:enc:secretbox:v1:{name}:").into_bytes(),
        nonce,
        tag.to_vec(),
        ct,
    ]
    .concat()
}

/// KMS v2's `EncryptedObject` (field numbers from the reference).
#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptedObject {
    #[prost(bytes = "vec", tag = "1")]
    pub encrypted_data: Vec<u8>,
    #[prost(string, tag = "2")]
    pub key_id: String,
    #[prost(bytes = "vec", tag = "3")]
    pub encrypted_dek_source: Vec<u8>,
    #[prost(map = "string, bytes", tag = "4")]
    pub annotations: std::collections::HashMap<String, Vec<u8>>,
    #[prost(int32, tag = "5")]
    pub encrypted_dek_source_type: i32,
}

/// What the fake KMS plugin "encrypts" a key to: its base64, as Kubernetes'
/// test plugin does.
pub fn kms_wrap(key: &[u8]) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(key).into_bytes()
}

/// A KMS v2 value under provider `name`, key id `key_id`: with `seed`, the
/// HKDF seed form (type 1), else the DEK form (type 0) with key `secret`.
pub fn kms_v2(
    name: &str,
    key_id: &str,
    secret: &[u8],
    seed: bool,
    etcd_key: &str,
    plaintext: &[u8],
) -> Vec<u8> {
    let (data, source_type) = if seed {
        let info = random(32);
        let mut key = [0u8; 32];
        hkdf::Hkdf::<sha2::Sha256>::from_prk(secret)
            .unwrap()
            .expand(&info, &mut key)
            .unwrap();
        ([info, gcm(&key, plaintext, etcd_key.as_bytes())].concat(), 1)
    } else {
        (gcm(secret, plaintext, etcd_key.as_bytes()), 0)
    };
    let object = EncryptedObject {
        encrypted_data: data,
        key_id: key_id.into(),
        encrypted_dek_source: kms_wrap(secret),
        annotations: Default::default(),
        encrypted_dek_source_type: source_type,
    };
    [
        format!("k8s:enc:kms:v2:{name}:").into_bytes(),
        object.encode_to_vec(),
    ]
    .concat()
}

/// A KMS v1 value: uint16 big-endian length ‖ wrapped DEK ‖ AES-GCM
/// (`cbc`: AES-CBC, as before Kubernetes 1.25).
pub fn kms_v1(name: &str, dek: &[u8], cbc_payload: bool, etcd_key: &str, plaintext: &[u8]) -> Vec<u8> {
    let wrapped = kms_wrap(dek);
    let payload = if cbc_payload {
        cbc(dek, plaintext)
    } else {
        gcm(dek, plaintext, etcd_key.as_bytes())
    };
    [
        format!("k8s:enc:kms:v1:{name}:").into_bytes(),
        (wrapped.len() as u16).to_be_bytes().to_vec(),
        wrapped,
        payload,
    ]
    .concat()
}
