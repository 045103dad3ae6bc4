//! The JSON shapes the readers accept, and their decoding into
//! [`AuditEvent`]s.
//!
//! One struct, [`Value`], takes any top-level JSON object of every accepted
//! format in a single pass: an audit `Event`, an `EventList`, a GKE
//! `LogEntry` (`protoPayload`), a CloudWatch log event (`message`) and the
//! `aws logs filter-log-events` output (`events`). Which fields are present
//! says which format it is ([`decode`]).
//!
//! Bodies are never materialised: `requestObject` is not a field (serde skips
//! it without building it), and of `responseObject` only
//! `metadata.resourceVersion` is a field. Strings are borrowed from the line
//! where they have no escapes.

use super::event::{AuditEvent, Level, ObjectRef, Origin, Stage};
use super::gke;
use crate::source::Revision;
use serde::Deserialize;
use std::borrow::Cow;

/// Any top-level JSON object of an accepted format.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Value<'a> {
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    api_version: Option<Cow<'a, str>>,
    // audit.k8s.io Event
    #[serde(borrow)]
    level: Option<Cow<'a, str>>,
    #[serde(rename = "auditID")]
    audit_id: Option<String>,
    #[serde(borrow)]
    stage: Option<Cow<'a, str>>,
    verb: Option<String>,
    user: Option<UserInfo>,
    impersonated_user: Option<UserInfo>,
    #[serde(rename = "sourceIPs")]
    source_ips: Option<Vec<String>>,
    user_agent: Option<String>,
    #[serde(borrow)]
    object_ref: Option<WireObjectRef<'a>>,
    response_status: Option<ResponseStatus>,
    #[serde(borrow)]
    response_object: Option<Revisioned<'a>>,
    #[serde(borrow)]
    stage_timestamp: Option<Cow<'a, str>>,
    // EventList
    #[serde(borrow)]
    items: Option<Vec<Value<'a>>>,
    // GKE LogEntry
    #[serde(borrow)]
    proto_payload: Option<gke::Payload<'a>>,
    insert_id: Option<String>,
    /// GKE: the entry's time (a string); CloudWatch: milliseconds (a
    /// number); audit.k8s.io/v1beta1: a deprecated copy of the time.
    #[serde(borrow)]
    timestamp: Option<gke::Stamp<'a>>,
    operation: Option<gke::Operation>,
    // CloudWatch log event, and `aws logs filter-log-events` output
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    events: Option<Vec<Value<'a>>>,
}

#[derive(Deserialize)]
struct UserInfo {
    username: Option<String>,
    groups: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireObjectRef<'a> {
    resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    api_group: Option<String>,
    api_version: Option<String>,
    #[serde(borrow)]
    resource_version: Option<Cow<'a, str>>,
    subresource: Option<String>,
}

#[derive(Deserialize)]
struct ResponseStatus {
    code: Option<i64>,
}

/// An object body of which only `metadata.resourceVersion` is read; every
/// other field is skipped by the parser without being built.
#[derive(Deserialize)]
pub(super) struct Revisioned<'a> {
    #[serde(borrow)]
    metadata: Option<Metadata<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata<'a> {
    #[serde(borrow)]
    resource_version: Option<Cow<'a, str>>,
}

impl Revisioned<'_> {
    /// `metadata.resourceVersion`, parsed; `None` when absent or empty.
    pub(super) fn revision(&self, what: &str) -> Result<Option<Revision>, String> {
        let rv = self.metadata.as_ref().and_then(|m| m.resource_version.as_deref());
        revision(what, rv)
    }
}

/// A resourceVersion as etcd's revision; `None` when absent or empty.
pub(super) fn revision(what: &str, rv: Option<&str>) -> Result<Option<Revision>, String> {
    match rv {
        None | Some("") => Ok(None),
        Some(s) => s
            .parse::<i64>()
            .map(|r| Some(Revision(r)))
            .map_err(|_| format!("{what} {s:?} is not a revision")),
    }
}

/// What a line or a document item decodes to: one result per event it
/// holds (an `EventList` holds many), each an event or why it is malformed.
pub(super) type Decoded = Vec<Result<AuditEvent, String>>;

/// Decodes one top-level value read at `origin` into `out`.
pub(super) fn decode(value: Value<'_>, origin: &Origin, out: &mut Decoded) {
    if let Some(payload) = value.proto_payload {
        let entry = gke::Entry {
            payload,
            insert_id: value.insert_id,
            timestamp: value.timestamp,
            operation: value.operation,
        };
        out.push(entry.into_event(origin));
    } else if let Some(message) = value.message {
        out.push(cloudwatch_message(&message, origin));
    } else if let Some(events) = value.events {
        // `aws logs filter-log-events` output: CloudWatch log events.
        for event in events {
            out.push(match event.message {
                Some(message) => cloudwatch_message(&message, origin),
                None => Err("an item of \"events\" without a \"message\"".to_string()),
            });
        }
    } else if value.items.is_some() || value.kind.as_deref() == Some("EventList") {
        if let Err(e) = check_type(value.api_version.as_deref(), value.kind.as_deref(), "EventList") {
            out.push(Err(e));
            return;
        }
        for item in value.items.into_iter().flatten() {
            out.push(item.into_event(origin));
        }
    } else {
        out.push(value.into_event(origin));
    }
}

/// A CloudWatch log event's `message`: one audit Event as a JSON string.
fn cloudwatch_message(message: &str, origin: &Origin) -> Result<AuditEvent, String> {
    let value: Value<'_> =
        serde_json::from_str(message).map_err(|e| format!("the CloudWatch message is not JSON: {e}"))?;
    value.into_event(origin)
}

fn check_type(api_version: Option<&str>, kind: Option<&str>, want: &str) -> Result<(), String> {
    match kind {
        None => {}
        Some(k) if k == want => {}
        Some(other) => return Err(format!("unknown kind {other:?} (expected {want})")),
    }
    match api_version {
        None | Some("audit.k8s.io/v1") | Some("audit.k8s.io/v1beta1") => Ok(()),
        Some(other) => Err(format!("unknown apiVersion {other:?}")),
    }
}

impl Value<'_> {
    /// This value as one audit.k8s.io `Event`.
    fn into_event(self, origin: &Origin) -> Result<AuditEvent, String> {
        if self.items.is_some() || self.proto_payload.is_some() || self.events.is_some() {
            return Err("a list or log entry where an Event was expected".to_string());
        }
        check_type(self.api_version.as_deref(), self.kind.as_deref(), "Event")?;
        let audit_id = self.audit_id.ok_or("not an audit event: no auditID")?;
        let stage: Stage = self
            .stage
            .as_deref()
            .ok_or("no stage")?
            .parse()
            .map_err(|e| format!("{e}"))?;
        let level: Level = self
            .level
            .as_deref()
            .ok_or("no level")?
            .parse()
            .map_err(|e| format!("{e}"))?;
        let verb = self.verb.ok_or("no verb")?;
        let stage_timestamp = self.stage_timestamp.ok_or("no stageTimestamp")?;
        let time = parse_time(&stage_timestamp)?;
        let (user, groups) = match self.user {
            Some(u) => (u.username.unwrap_or_default(), u.groups.unwrap_or_default()),
            None => (String::new(), Vec::new()),
        };
        let code = match self.response_status.and_then(|s| s.code) {
            None => None,
            Some(c) => {
                Some(u16::try_from(c).map_err(|_| format!("responseStatus.code {c} is not an HTTP status"))?)
            }
        };
        let response_revision = match &self.response_object {
            Some(body) => body.revision("responseObject.metadata.resourceVersion")?,
            None => None,
        };
        let (object, precondition_revision) = match self.object_ref {
            Some(o) => {
                let precondition = revision("objectRef.resourceVersion", o.resource_version.as_deref())?;
                let object = ObjectRef {
                    api_group: o.api_group.unwrap_or_default(),
                    api_version: o.api_version.unwrap_or_default(),
                    resource: o.resource.unwrap_or_default(),
                    namespace: non_empty(o.namespace),
                    name: non_empty(o.name),
                    subresource: non_empty(o.subresource),
                };
                (Some(object), precondition)
            }
            None => (None, None),
        };
        Ok(AuditEvent {
            audit_id,
            stage,
            level,
            verb,
            user,
            groups,
            impersonated_user: self.impersonated_user.and_then(|u| non_empty(u.username)),
            user_agent: self.user_agent,
            source_ips: self.source_ips.unwrap_or_default(),
            object,
            code,
            response_revision,
            precondition_revision,
            stage_timestamp: stage_timestamp.into_owned(),
            time,
            origin: origin.clone(),
        })
    }
}

pub(super) fn parse_time(s: &str) -> Result<jiff::Timestamp, String> {
    s.parse()
        .map_err(|e| format!("stageTimestamp {s:?} is not an RFC 3339 time: {e}"))
}

pub(super) fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}
