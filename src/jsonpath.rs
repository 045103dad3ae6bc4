//! `-o jsonpath=TEMPLATE` as kubectl takes it: literal text, `{EXPR}`,
//! `{"text"}` (JSON string escapes: `{"\n"}`), and `{range EXPR}...{end}`,
//! which repeats its body for each value EXPR finds (`{range [*]}`: each
//! element of an array). An expression is kubectl's JSONPath (`.items[*].name`,
//! `..name`, `.data.app\.properties`, `[0]`, `[-1:]`, `[?(@.x=="y")]`)
//! relative to the current value (the document, or the value a `range` is
//! at), evaluated as RFC 9535 JSONPath. Values found by one expression are
//! joined with a space; a string is written as it is, anything else as
//! JSON; a path that finds nothing writes nothing (as `kubectl get` does).
//!
//! Invariant: a parsed [`Template`] has every `{range}` closed and every
//! expression valid, so writing it fails only on output.

use serde_json::Value;
use serde_json_path::JsonPath;
use std::io::Write;

/// A parsed template; [`Template::write`] applies it to a document.
#[derive(Clone, Debug)]
pub struct Template {
    source: String,
    parts: Vec<Part>,
}

/// One piece of a template.
#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Value(Query),
    Range(Query, Vec<Part>),
}

/// An expression: its RFC 9535 form, and when it starts by taking each
/// element of an array (`[*]`), what it takes from each element.
#[derive(Clone, Debug)]
struct Query {
    path: JsonPath,
    source: String,
    each: Option<JsonPath>,
}

impl PartialEq for Template {
    fn eq(&self, other: &Template) -> bool {
        self.source == other.source
    }
}

impl std::fmt::Display for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for Template {
    type Err = String;

    /// Parses `text`; the error names the fault and where it is.
    fn from_str(text: &str) -> Result<Template, String> {
        // Each open `range` with the parts before it.
        let mut open: Vec<(Query, Vec<Part>)> = Vec::new();
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let Some(start) = rest.find('{') else {
                parts.push(Part::Text(rest.to_string()));
                break;
            };
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            let len = action_len(&rest[start + 1..])
                .ok_or_else(|| format!("unclosed {{ at {:?}", &rest[start..]))?;
            let action = rest[start + 1..start + 1 + len].trim();
            rest = &rest[start + len + 2..];
            if action.starts_with('"') {
                let literal: String = serde_json::from_str(action)
                    .map_err(|_| format!("{{{action}}} is not a quoted string"))?;
                parts.push(Part::Text(literal));
            } else if action == "end" {
                let (path, before) = open.pop().ok_or("{end} without a {range}")?;
                let body = std::mem::replace(&mut parts, before);
                parts.push(Part::Range(path, body));
            } else if let Some(expr) = action.strip_prefix("range ") {
                open.push((expression(expr.trim())?, std::mem::take(&mut parts)));
            } else {
                parts.push(Part::Value(expression(action)?));
            }
        }
        if !open.is_empty() {
            return Err("{range} without an {end}".into());
        }
        Ok(Template {
            source: text.to_string(),
            parts,
        })
    }
}

impl Template {
    /// Writes the template applied to `document`.
    pub fn write(&self, document: &Value, out: &mut impl Write) -> std::io::Result<()> {
        write_parts(&self.parts, document, out)
    }
}

fn write_parts(parts: &[Part], current: &Value, out: &mut impl Write) -> std::io::Result<()> {
    for part in parts {
        match part {
            Part::Text(text) => out.write_all(text.as_bytes())?,
            Part::Value(query) => {
                for (i, value) in query.path.query(current).iter().enumerate() {
                    if i > 0 {
                        out.write_all(b" ")?;
                    }
                    write_value(value, out)?;
                }
            }
            Part::Range(query, body) => {
                for value in query.path.query(current).iter() {
                    write_parts(body, value, out)?;
                }
            }
        }
    }
    Ok(())
}

/// A value found: a string as it is, anything else as JSON.
fn write_value(value: &Value, out: &mut impl Write) -> std::io::Result<()> {
    match value {
        Value::String(s) => out.write_all(s.as_bytes()),
        other => Ok(serde_json::to_writer(&mut *out, other)?),
    }
}

/// A template applied to an array one element at a time, so a long list
/// need not be held: [`Template::items`] says when that gives the same text.
pub struct Items<'t> {
    before: &'t [Part],
    each: Each<'t>,
    after: &'t [Part],
    /// Whether a value is written yet (values are joined with a space).
    written: bool,
}

/// What a [`Items`] template writes for each element.
enum Each<'t> {
    /// The values an expression finds in it.
    Values(&'t JsonPath),
    /// A `{range [*]}`'s body, applied to it.
    Body(&'t [Part]),
}

impl Template {
    /// The template as [`Items`], when its only expression goes through an
    /// array's elements (`{[*].name}`, `{range [*]}...{end}`) amid text.
    pub fn items(&self) -> Option<Items<'_>> {
        let text = |p: &Part| matches!(p, Part::Text(_));
        let at = self.parts.iter().position(|p| !text(p))?;
        let (before, rest) = self.parts.split_at(at);
        let (one, after) = rest.split_first()?;
        if !after.iter().all(text) {
            return None;
        }
        let each = match one {
            Part::Value(query) => Each::Values(query.each.as_ref()?),
            Part::Range(query, body) if query.source == "$[*]" => Each::Body(body),
            _ => return None,
        };
        Some(Items {
            before,
            each,
            after,
            written: false,
        })
    }
}

impl Items<'_> {
    /// Writes what comes before the first element.
    pub fn begin(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        write_parts(self.before, &Value::Null, out)
    }

    /// Writes what the template gives for one element.
    pub fn item(&mut self, element: &Value, out: &mut impl Write) -> std::io::Result<()> {
        match self.each {
            Each::Values(path) => {
                for value in path.query(element).iter() {
                    if std::mem::replace(&mut self.written, true) {
                        out.write_all(b" ")?;
                    }
                    write_value(value, out)?;
                }
                Ok(())
            }
            Each::Body(body) => write_parts(body, element, out),
        }
    }

    /// Writes what comes after the last element.
    pub fn end(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        write_parts(self.after, &Value::Null, out)
    }
}

/// The first answer `f` gives for a character of `text` outside quotes
/// (`'...'` or `"..."`, with `\\` escapes), given its byte offset.
fn outside_quotes<T>(text: &str, mut f: impl FnMut(usize, char) -> Option<T>) -> Option<T> {
    let (mut quote, mut escaped) = (None, false);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, c) => {
                if let Some(answer) = f(i, c) {
                    return Some(answer);
                }
            }
        }
    }
    None
}

/// The length of the action after a `{`, up to its `}`: braces and brackets
/// inside quotes (`[?(@.x=="}")]`) do not end it.
fn action_len(text: &str) -> Option<usize> {
    outside_quotes(text, |i, c| (c == '}').then_some(i))
}

/// A kubectl expression as an RFC 9535 query on the current value: `$` and
/// `@` at its start are the current value, `.name` is `['name']` (a `\.`
/// in it a dot of the name, so `.data.app\.properties` works), `..name` a
/// descendant, and brackets pass as they are.
fn expression(text: &str) -> Result<Query, String> {
    let mut query = String::from("$");
    let mut rest = text.strip_prefix(['$', '@']).unwrap_or(text);
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("..") {
            query.push_str("..");
            rest = after;
            if rest.starts_with('[') {
                continue;
            }
        } else if let Some(after) = rest.strip_prefix('.') {
            rest = after;
        } else if rest.starts_with('[') {
            let len = bracket_len(rest).ok_or_else(|| format!("{{{text}}}: unclosed ["))?;
            query.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        } else {
            return Err(format!("{{{text}}}: expected . or [ at {rest:?}"));
        }
        let (name, after) = field(rest);
        if name.is_empty() {
            return Err(format!("{{{text}}}: a field name must follow ."));
        }
        match name.as_str() {
            "*" => query.push_str("[*]"),
            _ => {
                let quoted = name.replace('\\', "\\\\").replace('\'', "\\'");
                query.push_str(&format!("['{quoted}']"));
            }
        }
        rest = after;
    }
    let parse = |query: &str| JsonPath::parse(query).map_err(|e| format!("{{{text}}}: {e}"));
    let each = match query.strip_prefix("$[*]") {
        Some(rest) => Some(parse(&format!("${rest}"))?),
        None => None,
    };
    Ok(Query {
        path: parse(&query)?,
        source: query,
        each,
    })
}

/// A field name up to the next unescaped `.` or `[`, with `\.` read as a
/// dot, and the text after it.
fn field(text: &str) -> (String, &str) {
    let mut name = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some((_, '.'))) => {
                name.push('.');
                chars.next();
            }
            '.' | '[' => return (name, &text[i..]),
            c => name.push(c),
        }
    }
    (name, "")
}

/// The length of the bracket `text` starts with, through its matching `]`
/// (nested brackets and quoted text included).
fn bracket_len(text: &str) -> Option<usize> {
    let mut depth = 0;
    outside_quotes(text, |i, c| {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => return None,
        }
        (depth == 0).then_some(i + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(template: &str, document: &Value) -> String {
        let template: Template = template.parse().unwrap();
        let mut out = Vec::new();
        template.write(document, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn runs() -> Value {
        json!([
            {"id": 1, "status": "complete", "gaps": [], "labels": {"app.kubernetes.io/name": "a"}},
            {"id": 2, "status": "failed", "error": "no \"etcd\"", "gaps": [[3, 4]]},
        ])
    }

    #[test]
    fn writes_values_as_kubectl_does() {
        let d = runs();
        assert_eq!(apply("{[*].id}", &d), "1 2");
        assert_eq!(apply("{$[*].status}", &d), "complete failed");
        assert_eq!(apply("ids: {[*].id}{\"\\n\"}", &d), "ids: 1 2\n");
        assert_eq!(apply("{[1].gaps}", &d), "[[3,4]]");
        assert_eq!(apply("{[1].error}", &d), "no \"etcd\"");
        assert_eq!(apply("{[-1].id}", &d), "2");
        assert_eq!(apply("{..error}", &d), "no \"etcd\"");
        assert_eq!(apply("{[0].labels.app\\.kubernetes\\.io/name}", &d), "a");
        assert_eq!(apply("{[0].missing}", &d), "");
        assert_eq!(apply("{[?(@.status==\"failed\")].id}", &d), "2");
        assert_eq!(apply("{[?(@.status==\"}\")].id}", &d), "");
    }

    #[test]
    fn a_range_repeats_its_body_for_each_value() {
        let d = runs();
        let lines = "{range [*]}{.id}{\"\\t\"}{@.status}{\"\\n\"}{end}";
        assert_eq!(apply(lines, &d), "1\tcomplete\n2\tfailed\n");
        // A range goes through the values found, not into an array found.
        assert_eq!(apply("{range @}[{[*].id}]{end}", &d), "[1 2]");
        assert_eq!(
            apply("{range [*]}{.id}:{range .gaps[*]}{@[0]}-{@[1]}{end};{end}", &d),
            "1:;2:3-4;"
        );
    }

    #[test]
    fn a_template_over_each_element_writes_the_same_an_element_at_a_time() {
        let d = runs();
        for template in [
            "{[*].id}",
            "ids: {$[*].status}{\"\\n\"}",
            "{range [*]}{.id}{\"\\t\"}{@.status}{\"\\n\"}{end}",
            "{[*]..name}",
            "{[*].gaps[*]}",
            "{[*].missing}",
        ] {
            let parsed: Template = template.parse().unwrap();
            let mut items = parsed
                .items()
                .unwrap_or_else(|| panic!("{template} goes element by element"));
            let mut out = Vec::new();
            items.begin(&mut out).unwrap();
            for element in d.as_array().unwrap() {
                items.item(element, &mut out).unwrap();
            }
            items.end(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), apply(template, &d), "{template}");
        }
        for whole in [
            "{[0].id}",
            "{[*].id} {[*].status}",
            "{range @}{end}",
            "{..id}",
            "{[?(@.id==1)].id}",
        ] {
            assert!(
                whole.parse::<Template>().unwrap().items().is_none(),
                "{whole} needs the whole array"
            );
        }
    }

    #[test]
    fn a_bad_template_says_what_is_wrong() {
        let err = |t: &str| t.parse::<Template>().unwrap_err();
        assert!(err("{.id").contains("unclosed {"), "{}", err("{.id"));
        assert_eq!(err("{range [*]}{.id}"), "{range} without an {end}");
        assert_eq!(err("{.id}{end}"), "{end} without a {range}");
        assert!(err("{id}").contains("expected . or ["), "{}", err("{id}"));
        assert!(err("{.a[}").contains("unclosed ["), "{}", err("{.a[}"));
        assert!(err("{[?(@.x===1)]}").starts_with("{[?(@.x===1)]}: "));
        assert!(err("{\"\\q\"}").contains("not a quoted string"));
    }
}
