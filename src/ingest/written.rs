//! The sink an object is sent into on its way to the store: its canonical
//! JSON and field spans ([`CanonicalWriter`]) and the facts' view of it
//! ([`ViewBuilder`]) are made together from one pass over the stored bytes.
//! `metadata.managedFields`, which is stored as the JSON the decoder gives
//! (in stored order), is the one part built whole first.

use super::recall;
use crate::canon::view::ViewBuilder;
use crate::canon::writer::{CanonicalWriter, Spans};
use crate::json_sink::{send_value, JsonSink, Order, TreeBuilder};
use serde_json::{Number, Value};

/// Writes an object's canonical JSON and builds its view.
pub struct ObjectWriter {
    depth: usize,
    writer: CanonicalWriter,
    view: ViewBuilder,
    /// `metadata.managedFields` being built, and how deep in it the
    /// current value is.
    managed: Option<(TreeBuilder, usize)>,
}

/// What [`ObjectWriter`] made of an object.
pub struct Written {
    /// The canonical JSON of its semantic form.
    pub canonical: Vec<u8>,
    pub spans: Spans,
    /// Its view (see [`crate::canon::view`]).
    pub view: Value,
}

impl ObjectWriter {
    /// A writer of field paths `depth` deep.
    pub fn new(depth: usize) -> Self {
        Self::for_value(depth, 0)
    }

    /// A writer of field paths `depth` deep for a stored value of `size`
    /// bytes: its canonical JSON gets room for what protobuf usually grows
    /// to as JSON (a fully filled Pod: 12.9 KB to 30 KB).
    pub fn for_value(depth: usize, size: usize) -> Self {
        ObjectWriter {
            depth,
            writer: CanonicalWriter::with_capacity(depth, (size * 5 / 2).max(4096)),
            view: ViewBuilder::default(),
            managed: None,
        }
    }

    pub fn finish(self) -> Written {
        let (canonical, spans) = self.writer.finish();
        Written {
            canonical,
            spans,
            view: self.view.finish(),
        }
    }

    /// Sends an event to both, or to the managedFields being built (`step`
    /// says how it nests: 1 begins, -1 ends, 0 neither).
    fn each(&mut self, step: isize, f: impl Fn(&mut dyn JsonSink)) {
        let Some((tree, depth)) = &mut self.managed else {
            f(&mut self.writer);
            f(&mut self.view);
            return;
        };
        f(tree);
        *depth = depth.saturating_add_signed(step);
        if *depth == 0 {
            let (tree, _) = self.managed.take().expect("being built");
            let managed = tree.finish();
            send_value(&managed, &mut self.writer);
            self.view.tree(managed);
        }
    }
}

impl JsonSink for ObjectWriter {
    fn order(&self) -> Order {
        match self.managed {
            Some(_) => Order::Stored,
            None => self.writer.order(),
        }
    }

    fn null(&mut self) {
        self.each(0, |s| s.null());
    }

    fn bool(&mut self, b: bool) {
        self.each(0, |s| s.bool(b));
    }

    fn number(&mut self, n: Number) {
        self.each(0, |s| s.number(n.clone()));
    }

    fn str(&mut self, v: &str) {
        self.each(0, |s| s.str(v));
    }

    fn begin_object(&mut self) {
        self.each(1, |s| s.begin_object());
    }

    fn key(&mut self, key: &str) {
        if let Some((tree, _)) = &mut self.managed {
            return tree.key(key);
        }
        if self.writer.at_top_metadata() && key == "managedFields" {
            self.managed = Some((TreeBuilder::default(), 0));
        }
        self.writer.key(key);
        self.view.key(key);
    }

    fn end_object(&mut self) {
        self.each(-1, |s| s.end_object());
    }

    fn begin_array(&mut self) {
        self.each(1, |s| s.begin_array());
    }

    fn end_array(&mut self) {
        self.each(-1, |s| s.end_array());
    }

    fn tree(&mut self, v: Value) {
        match &mut self.managed {
            Some(_) => self.each(0, |s| s.tree(v.clone())),
            None => {
                send_value(&v, &mut self.writer);
                self.view.tree(v);
            }
        }
    }

    fn clear(&mut self) {
        self.writer.clear();
        self.view.clear();
        self.managed = None;
    }

    fn recall(&mut self, message: (usize, u32), bytes: &[u8]) -> bool {
        let key = self.writer.top_member_key().map(str::to_string);
        let Some(key) = key.filter(|_| self.managed.is_none()) else {
            return false;
        };
        let (writer, view) = (&mut self.writer, &mut self.view);
        let hit = recall::with((&key, message, self.depth), bytes, |e| {
            writer.replay(&e.written);
            view.tree(e.view.clone().unwrap_or(Value::Null));
        });
        if !hit {
            self.writer.record();
        }
        hit
    }

    fn remember(&mut self, message: (usize, u32), bytes: &[u8], clean: bool) {
        let (Some(written), true) = (self.writer.take_recorded(), clean) else {
            return;
        };
        let key = written.key().to_string();
        let view = self.view.top_member(&key).cloned();
        recall::keep((&key, message, self.depth), bytes, written, view);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::duplicates::duplicate_entries;
    use crate::canon::facts::object_facts_with_spec_hash;
    use crate::canon::keyed_hash::ValueHasher;
    use crate::canon::path::FieldPath;
    use crate::canon::semantic::{hash_spans, into_semantic_form, Sensitivity, FIELD_HASH_LEN};
    use crate::canon::sensitive::{is_secret, Secrecy};
    use crate::decode::corpus_check::{fixtures, mutations};
    use crate::decode::{decode_into, decode_value, Outcome};
    use sha2::{Digest, Sha256};

    /// Every field path of a semantic form down to `depth` and the SHA-256
    /// of its value serialized alone, the slow way.
    fn fields_of(form: &Value, prefix: &FieldPath, depth: usize, out: &mut Vec<(FieldPath, Vec<u8>)>) {
        let (Value::Object(map), true) = (form, depth > 0) else {
            return;
        };
        for (k, v) in map {
            let path = prefix.join_field(k);
            let digest = Sha256::digest(serde_json::to_vec(v).unwrap());
            out.push((path.clone(), digest[..FIELD_HASH_LEN].to_vec()));
            fields_of(v, &path, depth - 1, out);
        }
    }

    /// What the store keeps of `value` streamed, against the same taken
    /// from the decoded tree the slow way; `false` when it does not decode.
    fn streamed_as_from_the_tree(name: &str, value: &[u8]) -> bool {
        let tree = match decode_value(value) {
            Ok(Outcome::Decoded(d)) => d.object,
            Ok(Outcome::Encrypted(_)) | Err(_) => {
                let mut w = ObjectWriter::new(2);
                assert!(
                    !matches!(decode_into(value, &mut w), Ok(Outcome::Decoded(_))),
                    "{name}: decodes only when streamed"
                );
                return false;
            }
        };
        let mut w = ObjectWriter::new(2);
        let Ok(Outcome::Decoded(_)) = decode_into(value, &mut w) else {
            panic!("{name}: decodes only as a tree")
        };
        let written = w.finish();
        let form = into_semantic_form(tree.clone());
        assert_eq!(
            String::from_utf8(written.canonical.clone()).unwrap(),
            serde_json::to_string(&form).unwrap(),
            "{name}: canonical JSON"
        );
        let hasher = ValueHasher::new([7; 32]);
        let hashes = hash_spans(
            &written.canonical,
            written.spans,
            Secrecy::Plain,
            &Sensitivity::default(),
            &hasher,
        );
        let hashes: Vec<(FieldPath, Vec<u8>)> = hashes.into_iter().map(|(p, h)| (p, h.to_vec())).collect();
        let mut want = Vec::new();
        fields_of(&form, &FieldPath::root(), 2, &mut want);
        assert_eq!(hashes, want, "{name}: field hashes");
        let view = &written.view;
        assert_eq!(
            object_facts_with_spec_hash(view, None),
            object_facts_with_spec_hash(&tree, None),
            "{name}: facts"
        );
        assert_eq!(
            duplicate_entries(view),
            duplicate_entries(&tree),
            "{name}: repeated entries"
        );
        assert_eq!(is_secret(view), is_secret(&tree), "{name}");
        let managed = |o: &Value| {
            o.pointer("/metadata/managedFields")
                .map(|m| serde_json::to_vec(m).unwrap())
        };
        assert_eq!(managed(view), managed(&tree), "{name}: managedFields JSON");
        for k in ["name", "namespace", "uid", "generation"] {
            assert_eq!(
                view["metadata"].get(k),
                tree["metadata"].get(k),
                "{name}: metadata.{k}"
            );
        }
        true
    }

    #[test]
    fn every_corpus_fixture_streams_to_what_its_tree_gives() {
        let Some(fixtures) = fixtures() else { return };
        let corpus = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
        let (mut decoded, mut twins, mut mutated) = (0, 0, 0);
        for (name, value) in &fixtures {
            assert!(streamed_as_from_the_tree(name, value), "{name} decodes");
            decoded += 1;
            let twin = corpus.join(name.replace(".pb", ".json"));
            if let Ok(json) = std::fs::read(&twin) {
                assert!(streamed_as_from_the_tree(&format!("{name} (JSON)"), &json));
                twins += 1;
            }
            for (i, m) in mutations(value).iter().enumerate() {
                mutated += usize::from(streamed_as_from_the_tree(&format!("{name} mutation {i}"), m));
            }
        }
        assert!(
            decoded > 60 && twins > 60 && mutated > 1000,
            "{decoded} {twins} {mutated}"
        );
    }

    #[test]
    fn a_recalled_spec_is_written_as_it_was() {
        let Some(fixtures) = fixtures() else { return };
        let written = |v: &[u8]| {
            let mut w = ObjectWriter::new(2);
            let decoded = matches!(decode_into(v, &mut w), Ok(Outcome::Decoded(_)));
            let w = w.finish();
            (decoded, w.canonical, w.spans, w.view)
        };
        for (name, value) in &fixtures {
            let first = written(value);
            assert!(
                first == written(value),
                "{name}: written again from what was kept"
            );
            // One byte changed near the end: the spec before it is recalled.
            let mut changed = value.clone();
            let at = changed.len() - 2;
            changed[at] ^= 1;
            if written(&changed).0 {
                streamed_as_from_the_tree(&format!("{name} changed"), &changed);
            }
        }
    }

    #[test]
    fn truncated_values_are_errors_both_ways() {
        let Some(fixtures) = fixtures() else { return };
        for (name, value) in &fixtures {
            for len in (0..value.len()).step_by(7) {
                streamed_as_from_the_tree(&format!("{name} cut at {len}"), &value[..len]);
            }
        }
    }

    #[test]
    fn the_view_keeps_what_the_facts_read() {
        let job = serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "", "generation": 0, "resourceVersion": "7",
                "finalizers": ["a", {"x": 1}, "a"], "ownerReferences": [{"kind": "CronJob", "name": "c", "uid": "u", "controller": true, "extra": 1}],
                "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:metadata": {"f:finalizers": {"v:\"a\"": {}}}}}]},
            "spec": {"parallelism": 0, "nodeName": "", "template": {"spec": {"containers": [{"name": "c", "env": [{"name": "A"}, {"name": "A"}]}, {"name": "c"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "values": [{"not": "text"}, "n1"]}]}]}}}}}},
            "status": {"phase": "Running", "observedGeneration": 3, "other": {"deep": 1}}});
        let value = serde_json::to_vec(&job).unwrap();
        assert!(streamed_as_from_the_tree("job", &value));
        let mut w = ObjectWriter::new(2);
        decode_into(&value, &mut w).unwrap();
        let view = w.finish().view;
        assert_eq!(
            view["status"],
            serde_json::json!({"phase": "Running", "observedGeneration": 3})
        );
        assert_eq!(
            view["metadata"]["finalizers"],
            serde_json::json!(["a", {}, "a"]),
            "items keep their places"
        );
        let lease = serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
            "spec": {"holderIdentity": "cp-1", "renewTime": "2026-11-29T09:00:00.250000Z"}});
        let value = serde_json::to_vec(&lease).unwrap();
        assert!(streamed_as_from_the_tree("lease", &value));
        let mut w = ObjectWriter::new(2);
        decode_into(&value, &mut w).unwrap();
        let facts = crate::canon::facts::object_facts(&w.finish().view);
        assert_eq!(facts.renew_time.as_deref(), Some("2026-11-29T09:00:00.250000Z"));
        let event = serde_json::json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.17a", "namespace": "shop"},
            "lastTimestamp": "2026-11-29T09:00:05Z", "eventTime": null,
            "series": {"count": 3, "lastObservedTime": "2026-11-29T09:00:07.500000Z"}});
        let value = serde_json::to_vec(&event).unwrap();
        assert!(streamed_as_from_the_tree("event", &value));
        let mut w = ObjectWriter::new(2);
        decode_into(&value, &mut w).unwrap();
        let facts = crate::canon::facts::object_facts(&w.finish().view);
        assert_eq!(facts.event_time.as_deref(), Some("2026-11-29T09:00:07.500000Z"));
    }
}
