//! Kubernetes objects encoded as kube-apiserver stores them, built with the
//! k8s-pb crate (independent of our own encoder) and as JSON.

use k8s_pb::api::core::v1::{Container, Pod, PodSpec};
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;

/// `k8s\0` + runtime.Unknown{typeMeta, raw}.
pub fn stored_protobuf(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let envelope = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(envelope.encode_to_vec());
    out
}

/// A Pod with one container running `image`.
pub fn pod(namespace: &str, name: &str, uid: &str, image: &str) -> Vec<u8> {
    let pod = Pod {
        metadata: Some(ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: Some("main".into()),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    };
    stored_protobuf("v1", "Pod", pod.encode_to_vec())
}

/// A custom resource as the apiextensions server stores it (JSON + newline).
pub fn widget(namespace: &str, name: &str, uid: &str, size: i64) -> Vec<u8> {
    let mut v = serde_json::to_vec(&serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "generation": 1},
        "spec": {"size": size}
    }))
    .unwrap();
    v.push(b'\n');
    v
}

/// An Opaque Secret whose `data.password` is `password`.
pub fn secret(namespace: &str, name: &str, uid: &str, password: &str) -> Vec<u8> {
    let secret = k8s_pb::api::core::v1::Secret {
        metadata: Some(ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        }),
        data: [("password".to_string(), password.as_bytes().to_vec())].into(),
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    stored_protobuf("v1", "Secret", secret.encode_to_vec())
}

/// A ConfigMap whose `data` holds `entries`.
pub fn config_map(namespace: &str, name: &str, uid: &str, entries: &[(&str, &str)]) -> Vec<u8> {
    let map = k8s_pb::api::core::v1::ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        }),
        data: entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    stored_protobuf("v1", "ConfigMap", map.encode_to_vec())
}

/// An `admission.k8s.io/v1` AdmissionReview whose request (uid `uid`) asks
/// to create the Deployment `prod/web`, stored as a built-in type would be.
/// Its field 1 is the request, not an ObjectMeta.
pub fn admission_review(uid: &str) -> Vec<u8> {
    use k8s_pb::api::admission::v1::{AdmissionRequest, AdmissionReview};
    use k8s_pb::api::authentication::v1::UserInfo;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{GroupVersionKind, GroupVersionResource};
    use k8s_pb::apimachinery::pkg::runtime::RawExtension;
    let gvk = GroupVersionKind {
        group: Some("apps".into()),
        version: Some("v1".into()),
        kind: Some("Deployment".into()),
    };
    let gvr = GroupVersionResource {
        group: Some("apps".into()),
        version: Some("v1".into()),
        resource: Some("deployments".into()),
    };
    let object = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"replicas": 3}
    });
    let review = AdmissionReview {
        request: Some(AdmissionRequest {
            uid: Some(uid.into()),
            kind: Some(gvk.clone()),
            resource: Some(gvr.clone()),
            request_kind: Some(gvk),
            request_resource: Some(gvr),
            name: Some("web".into()),
            namespace: Some("prod".into()),
            operation: Some("CREATE".into()),
            user_info: Some(UserInfo {
                username: Some("kubernetes-admin".into()),
                groups: vec!["system:masters".into(), "system:authenticated".into()],
                ..UserInfo::default()
            }),
            object: Some(RawExtension {
                raw: Some(serde_json::to_vec(&object).unwrap()),
            }),
            dry_run: Some(false),
            ..AdmissionRequest::default()
        }),
        response: None,
    };
    stored_protobuf("admission.k8s.io/v1", "AdmissionReview", review.encode_to_vec())
}
