//! The messages of the KMS plugin APIs (Kubernetes' `kms` protos: v2,
//! v1beta1, and the v2 `EncryptedObject`), written by hand.

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

#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptedObject {
    #[prost(bytes = "vec", tag = "1")]
    pub encrypted_data: Vec<u8>,
    #[prost(string, tag = "2")]
    pub key_id: String,
    #[prost(bytes = "vec", tag = "3")]
    pub encrypted_dek_source: Vec<u8>,
    #[prost(map = "string, bytes", tag = "4")]
    pub annotations: HashMap<String, Vec<u8>>,
    #[prost(int32, tag = "5")]
    pub encrypted_dek_source_type: i32,
}
