//! `foreign-writes`: revisions under the storage prefix that kube-apiserver
//! would not have written, so someone wrote them straight into etcd
//! (`etcdctl put`, a restore tool, a script): no admission, no RBAC check,
//! no audit event. One finding per such revision, naming the key, the
//! revision and the evidence. High for what grants or checks access or
//! runs code (RBAC objects, Secrets, ServiceAccounts, admission webhook and
//! policy configurations, CRDs and Nodes), medium otherwise.
//!
//! The evidence each value gives on its own is read when it is stored (see
//! [`crate::ingest::foreign`], which cites the apiserver code behind each
//! signal): a `metadata.resourceVersion` kept, a kind or group its key's
//! resource does not hold, a name or namespace that is not its key's, a
//! create without `uid` or `creationTimestamp`, JSON not as the apiserver's
//! encoder writes it. Two more signals are judged here, against the rest
//! of the cluster:
//!
//! - `encoding`: a built-in resource (one the schema lists, other than CRDs
//!   and APIServices) stored as JSON, YAML or CBOR while protobuf is the
//!   encoding of most of that resource's stored revisions (or, when the
//!   resource has none in protobuf, of most of the cluster's built-in
//!   revisions). kube-apiserver stores every built-in resource as protobuf
//!   by default (`--storage-media-type`, reference §2.3); an operator may
//!   choose JSON or YAML, but for every resource at once, so the
//!   comparison is with the cluster's own majority rather than a fixed
//!   rule. Right after such a change of media type, the first writes in the
//!   new one are a minority and are reported until they are not.
//!
//! - `unaudited`: a create no request in the audit logs `attribute` read
//!   explains, in a span of revisions a log covers (see
//!   [`crate::store::unaudited`]).
//!
//! What it cannot prove: a write through a modified or impersonated
//! apiserver, or an `etcdctl put` of bytes copied from what the apiserver
//! wrote (a replayed protobuf value with its `resourceVersion` cleared),
//! looks like the apiserver's own, unless it is a create an audit log
//! covers.

use super::detector::{Detector, Findings, KeyInput, Make, Reads, Registration};
use crate::source::Revision;
use crate::decode::key::stored_kinds;
use crate::decode::names::CRDS;
use crate::ingest::foreign::Evidence;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::unaudited::UnauditedCreate;
use crate::store::{ObjectFilter, Scope, StoreError};
use serde_json::json;
use std::collections::BTreeMap;

pub const NAME: &str = "foreign-writes";

/// Reads each key's history, with the encodings of every resource.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::High,
    topic: None,
    make: Make::With(|setup| {
        let scope = Scope {
            objects: ObjectFilter {
                cluster: Some(setup.cluster),
                ..ObjectFilter::default()
            },
            ..Scope::default()
        };
        let mut encodings = Encodings::default();
        for r in setup.store.resource_usage(&scope)? {
            encodings.add(&r.group, &r.resource, &r.encodings);
        }
        let mut unaudited = Unaudited::default();
        setup
            .store
            .unaudited_creates(setup.cluster, &mut |c| unaudited.add(c))?;
        Ok(Box::new(ForeignWrites { encodings, unaudited }))
    }),
};

/// What the detector reads besides each key's history.
struct ForeignWrites {
    encodings: Encodings,
    unaudited: Unaudited,
}

/// The creates no audited request explains, kept small: one per finding
/// they will make, each naming its log by index.
#[derive(Default)]
struct Unaudited {
    /// Key → (revision, index in `logs`, the log's span).
    by_key: BTreeMap<String, Vec<(Revision, usize, Revision, Revision)>>,
    logs: Vec<String>,
}

impl Unaudited {
    fn add(&mut self, c: UnauditedCreate) {
        let log = match self.logs.iter().position(|l| *l == c.log) {
            Some(i) => i,
            None => {
                self.logs.push(c.log);
                self.logs.len() - 1
            }
        };
        self.by_key
            .entry(c.key)
            .or_default()
            .push((c.revision, log, c.from, c.to));
    }

    /// The `unaudited` evidence of `key` at `revision`, if it has it.
    fn evidence(&self, key: &str, revision: Revision) -> Option<Evidence> {
        let creates = self.by_key.get(key)?;
        let &(_, log, from, to) = creates.iter().find(|c| c.0 == revision)?;
        Some(Evidence {
            signal: "unaudited".into(),
            detail: format!(
                "no request in audit log {} created it, though that log recorded the writes around it (revisions \
                 {from} to {to}) and creates of its resource",
                self.logs[log]
            ),
        })
    }
}

/// Resources whose writes grant or check access, or run code, as
/// (group, resource): what a write around the apiserver is most likely
/// for.
const HIGH: &[(&str, &str)] = &[
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("", "secrets"),
    ("", "serviceaccounts"),
    ("", "nodes"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
    CRDS,
];

/// The severity of a foreign write to `group`/`resource`.
pub fn severity(group: &str, resource: &str) -> Severity {
    match HIGH.contains(&(group, resource)) {
        true => Severity::High,
        false => Severity::Medium,
    }
}

/// Stored revisions per encoding of each built-in resource, and of all of
/// them.
#[derive(Default)]
struct Encodings {
    /// (group, resource) → (protobuf, other plain encodings).
    resources: BTreeMap<(String, String), (i64, i64)>,
    all: (i64, i64),
}

/// Encodings a value can be stored in other than protobuf.
const OTHER: &[&str] = &["json", "yaml", "cbor"];

impl Encodings {
    fn add(&mut self, group: &str, resource: &str, encodings: &BTreeMap<String, i64>) {
        if !built_in(group, resource) {
            return;
        }
        let protobuf = encodings.get("protobuf").copied().unwrap_or(0);
        let other: i64 = OTHER.iter().filter_map(|e| encodings.get(*e)).sum();
        let counts = self
            .resources
            .entry((group.to_string(), resource.to_string()))
            .or_default();
        counts.0 += protobuf;
        counts.1 += other;
        self.all.0 += protobuf;
        self.all.1 += other;
    }

    /// Whether protobuf is what `group`/`resource` is mostly stored in.
    fn protobuf_expected(&self, group: &str, resource: &str) -> bool {
        let (protobuf, other) = self
            .resources
            .get(&(group.to_string(), resource.to_string()))
            .copied()
            .unwrap_or_default();
        match protobuf {
            0 => self.all.0 > self.all.1,
            _ => protobuf > other,
        }
    }

    /// The `encoding` evidence of `r`, if it has it.
    fn evidence(&self, r: &ObjectRevision) -> Option<Evidence> {
        let (group, resource) = (r.group.as_deref()?, r.resource.as_deref()?);
        let encoding = r.encoding.as_deref().filter(|e| OTHER.contains(e))?;
        (built_in(group, resource) && self.protobuf_expected(group, resource)).then(|| Evidence {
            signal: "encoding".into(),
            detail: format!(
                "stored as {encoding} among {} stored as protobuf; kube-apiserver stores built-in resources in one media type",
                crate::decode::key::qualified(resource, group)
            ),
        })
    }
}

/// Whether kube-apiserver stores `group`/`resource` with the built-in
/// media type (protobuf by default): a resource the schema lists, other
/// than CRDs and APIServices, which are always JSON.
fn built_in(group: &str, resource: &str) -> bool {
    !matches!(group, "apiextensions.k8s.io" | "apiregistration.k8s.io")
        && !stored_kinds(group, resource).is_empty()
}

impl Detector for ForeignWrites {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        let judged = |r: &ObjectRevision| {
            let mut more: Vec<Evidence> = self.encodings.evidence(r).into_iter().collect();
            more.extend(self.unaudited.evidence(&r.key, r.mod_revision));
            more
        };
        let found = detect(input.history, judged).map_err(|what| input.damaged(what))?;
        out.extend(found);
        Ok(())
    }
}

/// The findings of one key's history (oldest first): one per revision with
/// evidence, whose stored evidence `more` completes (the signals judged
/// against the rest of the cluster); what is wrong with stored evidence
/// that does not read (a damaged database).
pub fn detect(
    history: &[ObjectRevision],
    more: impl Fn(&ObjectRevision) -> Vec<Evidence>,
) -> Result<Vec<Finding>, String> {
    let mut found = Vec::new();
    for r in history.iter().filter(|r| !r.deleted) {
        let mut evidence: Vec<Evidence> = match r.facts.foreign.as_deref() {
            Some(text) => serde_json::from_str(text).map_err(|e| {
                format!(
                    "revisions.foreign_evidence of {} at revision {}: {e}",
                    r.key, r.mod_revision
                )
            })?,
            None => Vec::new(),
        };
        evidence.extend(more(r));
        if evidence.is_empty() {
            continue;
        }
        let (group, resource) = (
            r.group.as_deref().unwrap_or_default(),
            r.resource.as_deref().unwrap_or_default(),
        );
        let signals: Vec<&str> = evidence.iter().map(|e| e.signal.as_str()).collect();
        found.push(Finding {
            detector: NAME,
            severity: severity(group, resource),
            keys: vec![r.key.clone()],
            revisions: vec![r.mod_revision],
            summary: format!(
                "{} at revision {} was not written by kube-apiserver ({}): {}",
                r.object(),
                r.mod_revision,
                signals.join(", "),
                evidence[0].detail
            ),
            details: json!({
                "object": r.object(),
                "revision": r.mod_revision,
                "create": r.is_create(),
                "encoding": r.encoding,
                "api_version": r.api_version,
                "evidence": evidence,
            }),
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(key: &str, group: &str, resource: &str, rev: i64, encoding: &str) -> ObjectRevision {
        ObjectRevision {
            key: key.into(),
            group: Some(group.into()),
            resource: Some(resource.into()),
            mod_revision: Revision(rev),
            create_revision: Revision(1),
            encoding: Some(encoding.into()),
            kind: Some("RoleBinding".into()),
            namespace: Some("ns".into()),
            name: Some("rb".into()),
            ..ObjectRevision::default()
        }
    }

    /// A resource's stored revisions per encoding: (group, resource, counts).
    type Row<'a> = (&'a str, &'a str, &'a [(&'a str, i64)]);

    fn counts(rows: &[Row<'_>]) -> Encodings {
        let mut e = Encodings::default();
        for (g, r, encodings) in rows {
            let map = encodings.iter().map(|(k, n)| (k.to_string(), *n)).collect();
            e.add(g, r, &map);
        }
        e
    }

    #[test]
    fn stored_evidence_is_one_finding_per_revision() {
        let mut first = revision("/registry/rolebindings/ns/rb", "rbac.authorization.k8s.io", "rolebindings", 1, "json");
        first.facts.foreign = Some(
            json!([{"signal": "resource-version", "detail": "the value holds metadata.resourceVersion \"7\""}]).to_string(),
        );
        let second = revision("/registry/rolebindings/ns/rb", "rbac.authorization.k8s.io", "rolebindings", 2, "protobuf");
        let found = detect(&[first, second], |_| Vec::new()).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::High);
        assert_eq!(found[0].revisions, vec![Revision(1)]);
        assert_eq!(
            found[0].summary,
            "RoleBinding ns/rb at revision 1 was not written by kube-apiserver (resource-version): the value holds metadata.resourceVersion \"7\""
        );
        assert_eq!(found[0].details["evidence"][0]["signal"], "resource-version");
        assert_eq!(severity("", "pods"), Severity::Medium);
        assert_eq!(severity("", "secrets"), Severity::High);
        let mut damaged = revision("/registry/pods/ns/p", "", "pods", 3, "protobuf");
        damaged.facts.foreign = Some("not json".into());
        let err = detect(&[damaged], |_| Vec::new()).unwrap_err();
        assert!(err.starts_with("revisions.foreign_evidence of /registry/pods/ns/p at revision 3: "), "{err}");
    }

    #[test]
    fn json_among_protobuf_is_evidence() {
        let e = counts(&[
            ("rbac.authorization.k8s.io", "rolebindings", &[("protobuf", 54), ("json", 1)]),
            ("", "pods", &[("protobuf", 10)]),
            ("apiextensions.k8s.io", "customresourcedefinitions", &[("json", 3)]),
            ("example.com", "widgets", &[("json", 4)]),
        ]);
        let rb = revision("/registry/rolebindings/ns/rb", "rbac.authorization.k8s.io", "rolebindings", 5, "json");
        let found = e.evidence(&rb).unwrap();
        assert_eq!(found.signal, "encoding");
        assert!(found.detail.starts_with("stored as json among rolebindings.rbac.authorization.k8s.io"));
        // A resource with no protobuf revision is judged by the cluster's built-ins.
        let secret = revision("/registry/secrets/ns/s", "", "secrets", 6, "json");
        assert!(e.evidence(&secret).is_some());
        // CRDs and custom resources are JSON; protobuf is never evidence.
        let crd = revision("/registry/apiextensions.k8s.io/customresourcedefinitions/w", "apiextensions.k8s.io", "customresourcedefinitions", 7, "json");
        assert!(e.evidence(&crd).is_none());
        let cr = revision("/registry/example.com/widgets/ns/w", "example.com", "widgets", 8, "json");
        assert!(e.evidence(&cr).is_none());
        assert!(e.evidence(&revision("/registry/pods/ns/p", "", "pods", 9, "protobuf")).is_none());
        // A cluster that stores built-ins as JSON.
        let json_cluster = counts(&[("", "pods", &[("json", 10)]), ("rbac.authorization.k8s.io", "rolebindings", &[("json", 3)])]);
        assert!(json_cluster.evidence(&rb).is_none());
        assert!(json_cluster.evidence(&secret).is_none());
    }
}
