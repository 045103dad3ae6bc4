//! Field paths: where a value sits in an object, as segments (an object
//! member, a list item by index, by merge key or by value), never as a string
//! split on `.`: ConfigMap keys, labels and annotations hold dots and slashes
//! (`app.properties`, `app.kubernetes.io/name`).
//!
//! One printed form, kubectl's JSONPath with escaped dots, is the path's text
//! everywhere (tables, JSON, stored columns):
//! - an object member is its name after a `.`, with `.`, `[`, `]` and `\`
//!   escaped by `\`: `data.app\.properties`,
//!   `metadata.labels.app\.kubernetes\.io/name`; an empty name is `[""]`;
//! - a list item by index is `[0]`, by merge key `[name=web]` (several keys
//!   sorted and joined by `,`: `[containerPort=80,protocol=TCP]`), a member
//!   of a set of values `[=kubernetes.io/pvc-protection]`; inside brackets
//!   `\`, `[`, `]`, `,` and `=` are escaped by `\`.
//!
//! [`FieldPath::parse`] reads that form and kubectl's others: a leading `.`,
//! `{...}` around the path, and quoted members in brackets
//! (`data["app.properties"]`, `data['app.properties']`).
//!
//! A path is held as its printed form, so comparing, ordering, hashing and
//! interning a path cost what they cost for a string; the printed form is
//! canonical (one text per path), so equal text is equal segments.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// One step of a [`FieldPath`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// An object member: a field (`spec`) or a map key (`app.properties`).
    /// JSON and managedFields' `f:` entries do not tell the two apart.
    Field(String),
    /// A list item by position (managedFields' `i:`).
    Index(usize),
    /// A list item by its merge keys, sorted by key (managedFields' `k:`);
    /// each value as its JSON scalar's text (`web`, `80`).
    Item(Vec<(String, String)>),
    /// A member of a list of values (managedFields' `v:`), as its JSON
    /// scalar's text.
    Value(String),
}

/// A path to a value inside an object; the empty path is the object itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldPath(String);

/// Why a path's text does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field path {text:?}: {why} at character {at}")]
pub struct PathError {
    pub text: String,
    pub at: usize,
    pub why: &'static str,
}

/// The printed path of `metadata.managedFields`, which changes with the
/// entries that changed rather than with the fields they own.
pub const MANAGED_FIELDS: &str = "metadata.managedFields";

const MEMBER_SPECIAL: [char; 4] = ['.', '[', ']', '\\'];
const BRACKET_SPECIAL: [char; 5] = ['[', ']', ',', '=', '\\'];

fn push_escaped(out: &mut String, text: &str, special: &[char]) {
    if !text.contains(special) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        if special.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
}

impl FieldPath {
    /// The empty path: the object itself.
    pub fn root() -> FieldPath {
        FieldPath::default()
    }

    /// A top-level field.
    pub fn field(name: &str) -> FieldPath {
        let mut p = FieldPath::root();
        p.push_field(name);
        p
    }

    /// A path of object members, outermost first.
    pub fn fields<'a>(names: impl IntoIterator<Item = &'a str>) -> FieldPath {
        let mut p = FieldPath::root();
        for name in names {
            p.push_field(name);
        }
        p
    }

    /// A path from its segments.
    pub fn from_segments<'a>(segments: impl IntoIterator<Item = &'a Segment>) -> FieldPath {
        let mut p = FieldPath::root();
        for s in segments {
            p.push(s);
        }
        p
    }

    /// This path with the member `name` below it.
    pub fn join_field(&self, name: &str) -> FieldPath {
        let mut p = self.clone();
        p.push_field(name);
        p
    }

    /// This path with `segment` below it.
    pub fn join(&self, segment: &Segment) -> FieldPath {
        let mut p = self.clone();
        p.push(segment);
        p
    }

    /// Appends the object member `name`.
    pub fn push_field(&mut self, name: &str) {
        if name.is_empty() {
            self.0.push_str("[\"\"]");
            return;
        }
        if !self.0.is_empty() {
            self.0.push('.');
        }
        push_escaped(&mut self.0, name, &MEMBER_SPECIAL);
    }

    /// Appends `segment`.
    pub fn push(&mut self, segment: &Segment) {
        match segment {
            Segment::Field(name) => self.push_field(name),
            Segment::Index(i) => {
                use fmt::Write;
                write!(self.0, "[{i}]").expect("writing to a String");
            }
            Segment::Item(keys) => {
                let mut keys: Vec<&(String, String)> = keys.iter().collect();
                keys.sort();
                self.0.push('[');
                for (n, (k, v)) in keys.into_iter().enumerate() {
                    if n > 0 {
                        self.0.push(',');
                    }
                    push_escaped(&mut self.0, k, &BRACKET_SPECIAL);
                    self.0.push('=');
                    push_escaped(&mut self.0, v, &BRACKET_SPECIAL);
                }
                self.0.push(']');
            }
            Segment::Value(v) => {
                self.0.push_str("[=");
                push_escaped(&mut self.0, v, &BRACKET_SPECIAL);
                self.0.push(']');
            }
        }
    }

    /// The printed form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the object itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> Vec<Segment> {
        Parser::new(&self.0)
            .segments()
            .expect("a FieldPath holds its canonical printed form")
    }

    /// The top-level field this path lies in (`spec` for `spec.replicas`).
    pub fn top(&self) -> Option<Cow<'_, str>> {
        let end = self.0.find(['.', '[', '\\']).unwrap_or(self.0.len());
        match self.0.as_bytes().get(end) {
            Some(b'\\') | Some(b'[') => match self.segments().into_iter().next() {
                Some(Segment::Field(name)) => Some(Cow::Owned(name)),
                _ => None,
            },
            _ if end == 0 => None,
            _ => Some(Cow::Borrowed(&self.0[..end])),
        }
    }

    /// Whether this path lies strictly under `parent` (`spec.replicas`
    /// under `spec`; everything under the root).
    pub fn is_under(&self, parent: &FieldPath) -> bool {
        if parent.is_root() {
            return !self.is_root();
        }
        // Canonical text: `parent`'s ends at a segment boundary, and a
        // segment of this path starts right after it only with `.` or `[`
        // (an escaped `\.` or `\[` starts with `\`).
        self.0.len() > parent.0.len()
            && self.0.starts_with(&parent.0)
            && matches!(self.0.as_bytes()[parent.0.len()], b'.' | b'[')
    }

    /// Whether this path is `other` or lies under it.
    pub fn is_within(&self, other: &FieldPath) -> bool {
        self == other || self.is_under(other)
    }

    /// The value at this path in `value`, if there is one.
    pub fn get<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        if self.is_root() {
            return Some(value);
        }
        self.segments().iter().try_fold(value, |at, s| step(at, s))
    }

    /// The value at this path in `value`, to be changed, if there is one.
    pub fn get_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        self.segments().iter().try_fold(value, |at, s| step_mut(at, s))
    }

    /// Reads a path in the printed form or kubectl's other forms (see the
    /// module's documentation).
    pub fn parse(text: &str) -> Result<FieldPath, PathError> {
        // Most paths are plain member names joined by dots, already in the
        // printed form: no need to split and print them again (stored paths
        // are read back for every revision analyze reads).
        let plain = !text.is_empty()
            && !text.starts_with(['.', '{'])
            && !text.ends_with('.')
            && !text.contains(['\\', '[', ']'])
            && !text.contains("..");
        if plain {
            return Ok(FieldPath(text.to_string()));
        }
        let inner = match text.strip_prefix('{') {
            Some(rest) => rest.strip_suffix('}').ok_or(PathError {
                text: text.to_string(),
                at: text.len(),
                why: "a `{` is not closed",
            })?,
            None => text,
        };
        let inner = inner.strip_prefix('.').unwrap_or(inner);
        let segments = Parser::new(inner).segments().map_err(|(at, why)| PathError {
            text: text.to_string(),
            at,
            why,
        })?;
        Ok(FieldPath::from_segments(&segments))
    }
}

/// One step down from `at`.
pub fn step<'v>(at: &'v Value, segment: &Segment) -> Option<&'v Value> {
    match (segment, at) {
        (Segment::Field(name), Value::Object(map)) => map.get(name),
        (_, Value::Array(items)) => items.get(position(items, segment)?),
        _ => None,
    }
}

/// [`step`], to a value that may be changed.
fn step_mut<'v>(at: &'v mut Value, segment: &Segment) -> Option<&'v mut Value> {
    match (segment, at) {
        (Segment::Field(name), Value::Object(map)) => map.get_mut(name),
        (_, Value::Array(items)) => {
            let i = position(items, segment)?;
            items.get_mut(i)
        }
        _ => None,
    }
}

/// Which of `items` a list segment picks.
fn position(items: &[Value], segment: &Segment) -> Option<usize> {
    match segment {
        Segment::Field(_) => None,
        Segment::Index(i) => (*i < items.len()).then_some(*i),
        Segment::Item(keys) => items.iter().position(|item| {
            keys.iter()
                .all(|(k, v)| item.get(k).and_then(scalar_text).as_deref() == Some(v))
        }),
        Segment::Value(v) => items
            .iter()
            .position(|item| scalar_text(item).as_deref() == Some(v)),
    }
}

/// A JSON scalar as a merge key or set member holds it: a string as itself,
/// a number or boolean as its JSON text.
pub fn scalar_text(v: &Value) -> Option<Cow<'_, str>> {
    match v {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(_) | Value::Bool(_) => Some(Cow::Owned(v.to_string())),
        _ => None,
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A path is its printed form: maps keyed by paths are looked up by text.
impl std::borrow::Borrow<str> for FieldPath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for FieldPath {
    fn eq(&self, text: &str) -> bool {
        self.0 == text
    }
}

impl PartialEq<&str> for FieldPath {
    fn eq(&self, text: &&str) -> bool {
        self.0 == *text
    }
}

impl AsRef<str> for FieldPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for FieldPath {
    type Err = PathError;
    fn from_str(s: &str) -> Result<FieldPath, PathError> {
        FieldPath::parse(s)
    }
}

impl Serialize for FieldPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for FieldPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FieldPath, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        FieldPath::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A reader of a path's text: (position, reason) on failure.
struct Parser<'t> {
    text: &'t str,
    pos: usize,
}

type Failure = (usize, &'static str);

impl<'t> Parser<'t> {
    fn new(text: &'t str) -> Parser<'t> {
        Parser { text, pos: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn segments(mut self) -> Result<Vec<Segment>, Failure> {
        let mut out = Vec::new();
        let mut first = true;
        while let Some(c) = self.peek() {
            match c {
                '[' => out.push(self.bracket()?),
                '.' if !first => {
                    self.bump();
                    if matches!(self.peek(), None | Some('.')) {
                        return Err((self.pos, "an empty member name (write [\"\"])"));
                    }
                    out.push(Segment::Field(self.member()?));
                }
                '.' => return Err((self.pos, "an empty member name (write [\"\"])")),
                ']' => return Err((self.pos, "a `]` without its `[`")),
                _ if first => out.push(Segment::Field(self.member()?)),
                _ => return Err((self.pos, "a `.` or `[` expected")),
            }
            first = false;
        }
        Ok(out)
    }

    /// A member name up to the next unescaped `.`, `[` or `]`.
    fn member(&mut self) -> Result<String, Failure> {
        self.unescaped_until(&['.', '[', ']'])
    }

    /// Text up to the next unescaped character of `stops`, with `\X` read
    /// as `X`.
    fn unescaped_until(&mut self, stops: &[char]) -> Result<String, Failure> {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if stops.contains(&c) {
                break;
            }
            self.bump();
            match c {
                '\\' => out.push(self.bump().ok_or((self.pos, "a `\\` at the end"))?),
                _ => out.push(c),
            }
        }
        Ok(out)
    }

    fn bracket(&mut self) -> Result<Segment, Failure> {
        let open = self.pos;
        self.bump();
        if self.peek().is_none() {
            return Err((open, "a `[` is not closed"));
        }
        let segment = match self.peek() {
            Some(q @ ('"' | '\'')) => Segment::Field(self.quoted(q)?),
            Some('=') => {
                self.bump();
                Segment::Value(self.bracket_text()?)
            }
            Some(c) if c.is_ascii_digit() => self.index()?,
            _ => self.item()?,
        };
        match self.bump() {
            Some(']') => Ok(segment),
            _ => Err((open, "a `[` is not closed")),
        }
    }

    fn index(&mut self) -> Result<Segment, Failure> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        if self.peek() == Some('=') {
            // A merge key named by digits.
            self.pos = start;
            return self.item();
        }
        self.text[start..self.pos]
            .parse()
            .map(Segment::Index)
            .map_err(|_| (start, "an index too large"))
    }

    fn item(&mut self) -> Result<Segment, Failure> {
        let mut keys = Vec::new();
        loop {
            let at = self.pos;
            let key = self.bracket_text()?;
            if key.is_empty() || self.bump() != Some('=') {
                return Err((
                    at,
                    "`[N]`, `[KEY=VALUE,...]`, `[=VALUE]` or `[\"NAME\"]` expected",
                ));
            }
            keys.push((key, self.bracket_text()?));
            if self.peek() != Some(',') {
                break;
            }
            self.bump();
        }
        keys.sort();
        Ok(Segment::Item(keys))
    }

    /// Text inside brackets up to an unescaped `]`, `,` or `=`.
    fn bracket_text(&mut self) -> Result<String, Failure> {
        self.unescaped_until(&[']', ',', '='])
    }

    /// A quoted member name: a JSON string in `"`, or `'...'` with `\'` and
    /// `\\` escapes.
    fn quoted(&mut self, quote: char) -> Result<String, Failure> {
        let start = self.pos;
        self.bump();
        let mut raw = String::new();
        loop {
            match self.bump() {
                None => return Err((start, "a quoted name is not closed")),
                Some(c) if c == quote => break,
                Some('\\') => {
                    let next = self.bump().ok_or((start, "a quoted name is not closed"))?;
                    if quote == '"' {
                        raw.push('\\');
                    }
                    raw.push(next);
                }
                Some(c) => raw.push(c),
            }
        }
        match quote {
            '"' => {
                serde_json::from_str(&format!("\"{raw}\"")).map_err(|_| (start, "a malformed JSON string"))
            }
            _ => Ok(raw),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(text: &str) -> FieldPath {
        FieldPath::parse(text).unwrap()
    }

    #[test]
    fn prints_dotted_keys_escaped() {
        assert_eq!(
            FieldPath::fields(["data", "app.properties"]).as_str(),
            r"data.app\.properties"
        );
        assert_eq!(
            FieldPath::fields(["metadata", "labels", "app.kubernetes.io/name"]).as_str(),
            r"metadata.labels.app\.kubernetes\.io/name"
        );
        assert_eq!(
            FieldPath::fields(["data", r#"a[0]"b\c"#]).as_str(),
            r#"data.a\[0\]"b\\c"#
        );
        assert_eq!(FieldPath::fields(["data", ""]).as_str(), r#"data[""]"#);
        assert_eq!(FieldPath::fields(["spec", "replicas"]).as_str(), "spec.replicas");
    }

    #[test]
    fn list_items_by_index_merge_key_and_value() {
        let path = FieldPath::field("spec")
            .join_field("containers")
            .join(&Segment::Item(vec![("name".into(), "web".into())]))
            .join_field("ports")
            .join(&Segment::Item(vec![
                ("protocol".into(), "TCP".into()),
                ("containerPort".into(), "80".into()),
            ]));
        assert_eq!(
            path.as_str(),
            "spec.containers[name=web].ports[containerPort=80,protocol=TCP]"
        );
        assert_eq!(p(path.as_str()), path);
        assert_eq!(
            p("metadata.finalizers[=kubernetes.io/pvc-protection]").segments()[2],
            Segment::Value("kubernetes.io/pvc-protection".into())
        );
        assert_eq!(p("spec.ports[3]").segments()[2], Segment::Index(3));
        assert_eq!(
            p("x[12=a]").segments()[1],
            Segment::Item(vec![("12".into(), "a".into())])
        );
        assert_eq!(
            p(r"x[name=a\]\,b]").segments()[1],
            Segment::Item(vec![("name".into(), "a],b".into())])
        );
    }

    #[test]
    fn parses_kubectl_forms_to_one_path() {
        let want = FieldPath::fields(["data", "app.properties"]);
        for text in [
            r"data.app\.properties",
            r#"data["app.properties"]"#,
            "data['app.properties']",
            r"{.data.app\.properties}",
            r".data.app\.properties",
        ] {
            assert_eq!(p(text), want, "{text}");
        }
        assert_eq!(p(r#"data["a\"b\\c"]"#), FieldPath::fields(["data", "a\"b\\c"]));
        assert_eq!(p(r"data['it\'s']"), FieldPath::fields(["data", "it's"]));
    }

    #[test]
    fn rejects_malformed_text_with_its_position() {
        for (text, at) in [
            ("data..x", 5),
            ("data[", 4),
            ("data[x]", 5),
            ("a]", 1),
            ("data.x\\", 7),
            ("{.a", 3),
        ] {
            let e = FieldPath::parse(text).unwrap_err();
            assert_eq!(e.at, at, "{text}: {e}");
            assert!(e.to_string().contains(text), "{e}");
        }
    }

    #[test]
    fn under_and_top_respect_escapes() {
        let data = p("data");
        assert!(p(r"data.app\.properties").is_under(&data));
        assert!(!p(r"data\.x").is_under(&data));
        assert!(!p("database").is_under(&data));
        assert!(!data.is_under(&data));
        assert!(data.is_within(&data));
        assert!(p("spec.containers[name=web]").is_under(&p("spec.containers")));
        assert!(p(r"a\\.b").is_under(&p(r"a\\")));
        assert_eq!(p(r"data.app\.properties").top().as_deref(), Some("data"));
        assert_eq!(p(r"a\.b.c").top().as_deref(), Some("a.b"));
        assert_eq!(p(r#"[""].c"#).top().as_deref(), Some(""));
        assert_eq!(FieldPath::root().top(), None);
    }

    #[test]
    fn looks_up_values_through_every_segment() {
        let v = json!({"data": {"app.properties": "a=1"}, "spec": {"containers": [{"name": "web", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]},
            "metadata": {"finalizers": ["a", "b"]}});
        assert_eq!(p(r"data.app\.properties").get(&v), Some(&json!("a=1")));
        assert_eq!(p("data.app").get(&v), None);
        assert_eq!(
            p("spec.containers[name=web].ports[containerPort=80,protocol=TCP].protocol").get(&v),
            Some(&json!("TCP"))
        );
        assert_eq!(p("spec.containers[0].name").get(&v), Some(&json!("web")));
        assert_eq!(p("metadata.finalizers[=b]").get(&v), Some(&json!("b")));
        assert_eq!(FieldPath::root().get(&v), Some(&v));
    }

    #[test]
    fn serializes_as_its_printed_form() {
        let path = FieldPath::fields(["data", "app.properties"]);
        let text = serde_json::to_string(&path).unwrap();
        assert_eq!(text, r#""data.app\\.properties""#);
        assert_eq!(serde_json::from_str::<FieldPath>(&text).unwrap(), path);
        assert!(serde_json::from_str::<FieldPath>(r#""data..x""#).is_err());
    }

    fn arb_segment() -> impl proptest::strategy::Strategy<Value = Segment> {
        use proptest::prelude::*;
        let text = "[a-c.\\[\\]\"\\\\,=/' é]{0,5}";
        prop_oneof![
            text.prop_map(Segment::Field),
            (0usize..1000).prop_map(Segment::Index),
            prop::collection::btree_map("[a-c.\\[\\]\\\\,=]{1,3}", text, 1..3)
                .prop_map(|m| Segment::Item(m.into_iter().collect())),
            text.prop_map(Segment::Value),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, failure_persistence: None, ..Default::default() })]
        #[test]
        fn printed_form_round_trips(first in "[a-z.\\[\\]\"\\\\]{0,4}", rest in proptest::collection::vec(arb_segment(), 0..5)) {
            let mut segments = vec![Segment::Field(first)];
            segments.extend(rest);
            let path = FieldPath::from_segments(&segments);
            proptest::prop_assert_eq!(path.segments(), segments.clone());
            proptest::prop_assert_eq!(FieldPath::parse(path.as_str()).unwrap(), path.clone());
            // Being under is being a prefix in segments.
            for n in 0..segments.len() {
                let parent = FieldPath::from_segments(&segments[..n]);
                proptest::prop_assert!(path.is_under(&parent), "{} under {}", path, parent);
            }
        }
    }
}
