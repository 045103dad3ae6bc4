//! The facts' view of an object: the part of it that the facts
//! ([`super::facts`]), repeated list entries ([`super::duplicates`]) and the
//! stored columns (name, namespace, uid, generation, whether it is a Secret)
//! read, built as the object is sent (see [`crate::json_sink`]) while its
//! canonical JSON is written, so the whole tree is never built.
//!
//! The view holds the decoded values (not their canonical form: a `0` or an
//! empty string still counts there), every item of a list it reaches (so
//! positions stay), every scalar at a path it reaches, objects with only
//! the members it reaches, and `metadata.managedFields` whole. Whatever
//! those readers take from an object must be reachable here: their tests
//! compare facts read from the view with facts read from the whole object.

use crate::json_sink::{JsonSink, Order};
use serde_json::{Map, Number, Value};

/// A place in an object the view reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Root,
    Metadata,
    OwnerReference,
    /// Scalars only (and lists of them).
    Leaf,
    /// Everything below.
    Whole,
    /// A Pod's spec, or a workload's, a pod template's, a Namespace's or a Lease's.
    Spec,
    Affinity,
    NodeAffinity,
    Required,
    Term,
    MatchField,
    Container,
    /// A list entry read by its name.
    Named,
    Template,
    Status,
    Subject,
    /// An Event's series.
    Series,
}

impl Place {
    /// What member `key` of an object at this place is, if it is reached.
    fn child(self, key: &str) -> Option<Place> {
        use Place::*;
        Some(match (self, key) {
            (Whole, _) => Whole,
            (Root, "apiVersion" | "kind" | "lastTimestamp" | "eventTime" | "deprecatedLastTimestamp") => Leaf,
            (Root, "series") => Series,
            (Series, "lastObservedTime") => Leaf,
            (Root, "metadata") => Metadata,
            (Root, "spec") => Spec,
            (Root, "status") => Status,
            (Root, "subjects") => Subject,
            (
                Metadata,
                "name" | "namespace" | "uid" | "generation" | "generateName" | "creationTimestamp"
                | "deletionTimestamp" | "finalizers" | "resourceVersion",
            ) => Leaf,
            (Metadata, "ownerReferences") => OwnerReference,
            (Metadata, "managedFields") => Whole,
            (OwnerReference, "apiVersion" | "kind" | "name" | "uid" | "controller") => Leaf,
            (Spec, "nodeName" | "replicas" | "parallelism" | "finalizers" | "renewTime") => Leaf,
            (Spec, "affinity") => Affinity,
            (Spec, "containers" | "initContainers" | "ephemeralContainers") => Container,
            (Spec, "volumes") => Named,
            (Spec, "template" | "jobTemplate") => Template,
            (Template, "spec") => Spec,
            (Affinity, "nodeAffinity") => NodeAffinity,
            (NodeAffinity, "requiredDuringSchedulingIgnoredDuringExecution") => Required,
            (Required, "nodeSelectorTerms") => Term,
            (Term, "matchFields") => MatchField,
            (MatchField, "key" | "values") => Leaf,
            (Container, "name") => Leaf,
            (Container, "env" | "ports") => Named,
            (Named, "name") => Leaf,
            (Status, "phase" | "observedGeneration") => Leaf,
            (Subject, "kind" | "namespace" | "name") => Leaf,
            _ => return None,
        })
    }
}

/// `v` reduced to what the view reaches from `node`.
fn prune(v: Value, node: Place) -> Value {
    match (v, node) {
        (v, Place::Whole) => v,
        (Value::Object(map), node) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| Some((node.child(&k)?, k, v)))
                .map(|(child, k, v)| (k, prune(v, child)))
                .collect(),
        ),
        (Value::Array(items), node) => Value::Array(items.into_iter().map(|v| prune(v, node)).collect()),
        (v, _) => v,
    }
}

/// Builds the view of the object sent into it.
#[derive(Default)]
pub struct ViewBuilder {
    open: Vec<Open>,
    /// Nesting within a value the view does not reach (1 for its own
    /// object or array).
    skip: usize,
    /// The next value is not reached.
    skip_next: bool,
    done: Option<Value>,
}

enum Open {
    /// An object, where it is, and its next member's key and place.
    Object(Map<String, Value>, Place, Option<(String, Place)>),
    Array(Vec<Value>, Place),
}

impl ViewBuilder {
    /// The view; `Null` when nothing was sent.
    pub fn finish(self) -> Value {
        self.done.unwrap_or(Value::Null)
    }

    /// The view of the top-level member `key` sent last, while the object
    /// is being sent.
    pub fn top_member(&self, key: &str) -> Option<&Value> {
        match (self.open.len(), self.open.first()) {
            (1, Some(Open::Object(map, ..))) => map.get(key),
            _ => None,
        }
    }

    /// Where the next value sits, or `None` when the view does not reach it.
    fn next_place(&mut self) -> Option<Place> {
        if self.skip > 0 {
            return None;
        }
        if std::mem::take(&mut self.skip_next) {
            return None;
        }
        Some(match self.open.last() {
            None => Place::Root,
            Some(Open::Array(_, node)) => *node,
            Some(Open::Object(_, _, pending)) => pending.as_ref().map_or(Place::Leaf, |(_, n)| *n),
        })
    }

    fn put(&mut self, v: Value) {
        match self.open.last_mut() {
            None => self.done = Some(v),
            Some(Open::Array(items, _)) => items.push(v),
            Some(Open::Object(map, _, pending)) => {
                if let Some((key, _)) = pending.take() {
                    map.insert(key, v);
                }
            }
        }
    }

    fn scalar(&mut self, v: impl FnOnce() -> Value) {
        if self.next_place().is_some() {
            self.put(v());
        }
    }

    fn begin(&mut self, open: impl FnOnce(Place) -> Open) {
        match self.next_place() {
            Some(node) => self.open.push(open(node)),
            None => self.skip += 1,
        }
    }

    /// Ends an object or array; the one ended, unless skipped.
    fn end(&mut self) -> Option<Open> {
        if self.skip > 0 {
            self.skip -= 1;
            return None;
        }
        self.open.pop()
    }
}

impl JsonSink for ViewBuilder {
    fn order(&self) -> Order {
        Order::Stored
    }

    fn null(&mut self) {
        self.scalar(|| Value::Null);
    }

    fn bool(&mut self, b: bool) {
        self.scalar(|| Value::Bool(b));
    }

    fn number(&mut self, n: Number) {
        self.scalar(|| Value::Number(n));
    }

    fn str(&mut self, s: &str) {
        self.scalar(|| Value::String(s.to_string()));
    }

    fn begin_object(&mut self) {
        self.begin(|node| Open::Object(Map::new(), node, None));
    }

    fn key(&mut self, key: &str) {
        if self.skip > 0 {
            return;
        }
        if let Some(Open::Object(_, node, pending)) = self.open.last_mut() {
            match node.child(key) {
                Some(child) => *pending = Some((key.to_string(), child)),
                None => self.skip_next = true,
            }
        }
    }

    fn end_object(&mut self) {
        if let Some(Open::Object(map, ..)) = self.end() {
            self.put(Value::Object(map));
        }
    }

    fn begin_array(&mut self) {
        self.begin(|node| Open::Array(Vec::new(), node));
    }

    fn end_array(&mut self) {
        if let Some(Open::Array(items, _)) = self.end() {
            self.put(Value::Array(items));
        }
    }

    fn tree(&mut self, v: Value) {
        if let Some(node) = self.next_place() {
            self.put(prune(v, node));
        }
    }

    fn clear(&mut self) {
        *self = ViewBuilder::default();
    }
}
