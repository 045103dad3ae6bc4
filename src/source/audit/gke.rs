//! GKE's Cloud Logging export: a `LogEntry` whose `protoPayload` is a
//! `google.cloud.audit.AuditLog`, one per request.
//!
//! GKE writes one entry per request, so an entry is a `ResponseComplete`
//! event (`operation.last: false` marks a long-running request's first
//! entry: `ResponseStarted`). What the entry lacks, the event lacks too: no
//! groups, no impersonation; the precondition is read from the request body's
//! `metadata.resourceVersion` on create and update, as the apiserver itself
//! fills `objectRef.resourceVersion`.

use super::event::{AuditEvent, Level, ObjectRef, Origin, Stage};
use super::wire::{non_empty, parse_time, Revisioned};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

const AUDIT_LOG_TYPE: &str = "type.googleapis.com/google.cloud.audit.AuditLog";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Payload<'a> {
    #[serde(rename = "@type", borrow)]
    type_url: Option<Cow<'a, str>>,
    authentication_info: Option<AuthenticationInfo>,
    request_metadata: Option<RequestMetadata>,
    #[serde(borrow)]
    method_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    resource_name: Option<Cow<'a, str>>,
    status: Option<RpcStatus>,
    #[serde(borrow)]
    request: Option<Revisioned<'a>>,
    #[serde(borrow)]
    response: Option<Revisioned<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthenticationInfo {
    principal_email: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestMetadata {
    caller_ip: Option<String>,
    caller_supplied_user_agent: Option<String>,
}

#[derive(Deserialize)]
struct RpcStatus {
    code: Option<i64>,
}

#[derive(Deserialize)]
pub(super) struct Operation {
    id: Option<String>,
    last: Option<bool>,
}

/// A `timestamp` field: GKE writes a string, CloudWatch a number of
/// milliseconds.
pub(super) enum Stamp<'a> {
    Text(Cow<'a, str>),
    Number,
}

impl<'de: 'a, 'a> Deserialize<'de> for Stamp<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Stamp<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a time as a string or a number")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Stamp::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Stamp::Text(Cow::Owned(s.to_string())))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Stamp::Number)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Stamp::Number)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Stamp::Number)
            }
        }
        d.deserialize_any(V)
    }
}

/// A LogEntry's fields this reader uses.
pub(super) struct Entry<'a> {
    pub payload: Payload<'a>,
    pub insert_id: Option<String>,
    pub timestamp: Option<Stamp<'a>>,
    pub operation: Option<Operation>,
}

impl Entry<'_> {
    pub(super) fn into_event(self, origin: &Origin) -> Result<AuditEvent, String> {
        let p = self.payload;
        match p.type_url.as_deref() {
            Some(AUDIT_LOG_TYPE) => {}
            Some(other) => return Err(format!("unknown protoPayload @type {other:?}")),
            None => return Err("protoPayload without an @type".to_string()),
        }
        let (operation_id, last) = match self.operation {
            Some(op) => (op.id, op.last),
            None => (None, None),
        };
        let audit_id = non_empty(operation_id)
            .or(non_empty(self.insert_id))
            .ok_or("a LogEntry without operation.id or insertId")?;
        let stage = match last {
            Some(false) => Stage::ResponseStarted,
            Some(true) | None => Stage::ResponseComplete,
        };
        let method = p.method_name.as_deref().ok_or("a LogEntry without methodName")?;
        let verb = method_verb(method)?;
        let object = p.resource_name.as_deref().map(resource_name).transpose()?;
        let stage_timestamp = match self.timestamp {
            Some(Stamp::Text(t)) => t.into_owned(),
            Some(Stamp::Number) => return Err("a LogEntry whose timestamp is a number".to_string()),
            None => return Err("a LogEntry without timestamp".to_string()),
        };
        let time = parse_time(&stage_timestamp)?;
        let code = p.status.map(|s| http_code(s.code.unwrap_or(0)));
        let response_revision = match &p.response {
            Some(body) => body.revision("response.metadata.resourceVersion")?,
            None => None,
        };
        let precondition_revision = match (&p.request, verb.as_str()) {
            (Some(body), "create" | "update") => body.revision("request.metadata.resourceVersion")?,
            _ => None,
        };
        let (user_agent, source_ips) = match p.request_metadata {
            Some(m) => (m.caller_supplied_user_agent, m.caller_ip.into_iter().collect()),
            None => (None, Vec::new()),
        };
        Ok(AuditEvent {
            audit_id,
            stage,
            level: if p.response.is_some() {
                Level::RequestResponse
            } else {
                Level::Metadata
            },
            verb,
            user: p
                .authentication_info
                .and_then(|a| a.principal_email)
                .unwrap_or_default(),
            groups: Vec::new(),
            impersonated_user: None,
            user_agent,
            source_ips,
            object,
            code,
            response_revision,
            precondition_revision,
            stage_timestamp,
            time,
            origin: origin.clone(),
        })
    }
}

/// The verb of a methodName such as `io.k8s.apps.v1.deployments.update`:
/// its last segment.
fn method_verb(method: &str) -> Result<String, String> {
    match method.rsplit_once('.') {
        Some((_, verb)) if !verb.is_empty() => Ok(verb.to_string()),
        _ => Err(format!("methodName {method:?} has no verb")),
    }
}

/// A resourceName such as `apps/v1/namespaces/NS/deployments/NAME` or
/// `core/v1/namespaces/NS/pods/NAME/status`, read as the apiserver reads a
/// request path: a namespace's own `status` and `finalize` are subresources
/// of the namespace, and a namespace's objectRef names itself as namespace.
fn resource_name(name: &str) -> Result<ObjectRef, String> {
    let bad = |why: &str| format!("resourceName {name:?}: {why}");
    let parts: Vec<&str> = name.split('/').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(bad("an empty segment"));
    }
    let [group, version, rest @ ..] = parts.as_slice() else {
        return Err(bad("not GROUP/VERSION/..."));
    };
    let mut rest = rest;
    let mut namespace = None;
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = Some(rest[1].to_string());
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    let (resource, object_name, subresource) = match rest {
        [resource] => (*resource, None, None),
        [resource, n] => (*resource, Some(n.to_string()), None),
        [resource, n, sub] => (*resource, Some(n.to_string()), Some(sub.to_string())),
        [] => return Err(bad("no resource")),
        _ => return Err(bad("more segments than RESOURCE/NAME/SUBRESOURCE")),
    };
    Ok(ObjectRef {
        api_group: if *group == "core" {
            String::new()
        } else {
            group.to_string()
        },
        api_version: version.to_string(),
        resource: resource.to_string(),
        namespace,
        name: object_name,
        subresource,
    })
}

/// The HTTP status of a google.rpc code, as far as a Kubernetes write needs.
fn http_code(rpc: i64) -> u16 {
    match rpc {
        0 => 200,
        5 => 404,
        6 | 10 => 409,
        7 => 403,
        _ => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::resource_name;

    #[test]
    fn resource_names_read_like_request_paths() {
        let r = resource_name("core/v1/namespaces/team/pods/app/status").unwrap();
        assert_eq!(
            (r.api_group.as_str(), r.api_version.as_str(), r.resource.as_str()),
            ("", "v1", "pods")
        );
        assert_eq!(r.namespace.as_deref(), Some("team"));
        assert_eq!(r.name.as_deref(), Some("app"));
        assert_eq!(r.subresource.as_deref(), Some("status"));

        let ns = resource_name("core/v1/namespaces/team").unwrap();
        assert_eq!(
            (ns.resource.as_str(), ns.name.as_deref(), ns.namespace.as_deref()),
            ("namespaces", Some("team"), Some("team"))
        );
        let fin = resource_name("core/v1/namespaces/team/finalize").unwrap();
        assert_eq!(
            (fin.resource.as_str(), fin.subresource.as_deref()),
            ("namespaces", Some("finalize"))
        );

        let crb = resource_name("rbac.authorization.k8s.io/v1/clusterrolebindings/admin").unwrap();
        assert_eq!(
            (crb.api_group.as_str(), crb.namespace, crb.name.as_deref()),
            ("rbac.authorization.k8s.io", None, Some("admin"))
        );

        assert!(resource_name("core/v1").is_err());
        assert!(resource_name("core//pods").is_err());
        assert!(resource_name("apps/v1/namespaces/a/deployments/b/scale/extra").is_err());
    }
}
