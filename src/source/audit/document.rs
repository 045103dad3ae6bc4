//! A file that is one JSON document rather than JSON lines: a
//! pretty-printed `EventList`, a JSON array of GKE LogEntries or CloudWatch
//! events, or the `aws logs filter-log-events` output `{"events": [...]}`.
//!
//! [`split`] finds the byte range of each item with a structural scan
//! (strings, escapes and nesting only), so that each item is then parsed by
//! the same code as a line, and has the line it starts on as its origin.
//! The scan does not validate the items; their own parse does.

use std::ops::Range;

/// Where a document stopped making sense: the byte offset and why.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Broken {
    pub offset: usize,
    pub reason: &'static str,
}

/// The items of the document `buf`: the elements of a top-level array, of a
/// top-level object's `items` or `events` array, or else the object itself.
/// Items found before a break are returned with it.
pub(super) fn split(buf: &[u8]) -> (Vec<Range<usize>>, Option<Broken>) {
    let mut items = Vec::new();
    let broken = scan(buf, &mut items).err();
    (items, broken)
}

fn scan(b: &[u8], items: &mut Vec<Range<usize>>) -> Result<(), Broken> {
    let start = ws(b, 0);
    let end = match b.get(start) {
        Some(b'[') => elements(b, start, items)?,
        Some(b'{') => {
            let mut i = ws(b, start + 1);
            let mut lists = 0;
            if b.get(i) == Some(&b'}') {
                i += 1;
            } else {
                loop {
                    let key_end = string(b, i)?;
                    let key = &b[i..key_end];
                    i = ws(b, key_end);
                    if b.get(i) != Some(&b':') {
                        return Err(Broken {
                            offset: i,
                            reason: "expected ':' after a key",
                        });
                    }
                    i = ws(b, i + 1);
                    if matches!(key, b"\"items\"" | b"\"events\"") && b.get(i) == Some(&b'[') {
                        lists += 1;
                        i = elements(b, i, items)?;
                    } else {
                        i = value(b, i)?;
                    }
                    i = ws(b, i);
                    match b.get(i) {
                        Some(b',') => i = ws(b, i + 1),
                        Some(b'}') => break i += 1,
                        _ => {
                            return Err(Broken {
                                offset: i,
                                reason: "expected ',' or '}' in the document's object",
                            })
                        }
                    }
                }
            }
            if lists == 0 {
                items.push(start..i);
            }
            i
        }
        None => return Ok(()),
        Some(_) => {
            return Err(Broken {
                offset: start,
                reason: "not a JSON object or array",
            })
        }
    };
    let rest = ws(b, end);
    if rest < b.len() {
        return Err(Broken {
            offset: rest,
            reason: "data after the end of the document",
        });
    }
    Ok(())
}

/// The array at `b[i] == '['`: pushes each element's range, returns the
/// offset after `]`.
fn elements(b: &[u8], i: usize, items: &mut Vec<Range<usize>>) -> Result<usize, Broken> {
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Ok(i + 1);
    }
    loop {
        let end = value(b, i)?;
        items.push(i..end);
        i = ws(b, end);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b']') => return Ok(i + 1),
            _ => {
                return Err(Broken {
                    offset: i,
                    reason: "expected ',' or ']' in an array",
                })
            }
        }
    }
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// The string at `b[i] == '"'`: returns the offset after its closing quote.
fn string(b: &[u8], i: usize) -> Result<usize, Broken> {
    if b.get(i) != Some(&b'"') {
        return Err(Broken {
            offset: i,
            reason: "expected a string",
        });
    }
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Ok(j + 1),
            _ => j += 1,
        }
    }
    Err(Broken {
        offset: b.len(),
        reason: "truncated: the document ends inside a string",
    })
}

/// Any value at `i`: returns the offset after it.
fn value(b: &[u8], i: usize) -> Result<usize, Broken> {
    match b.get(i) {
        Some(b'"') => string(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Err(Broken {
                offset: b.len(),
                reason: "truncated: the document ends inside a value",
            })
        }
        None => Err(Broken {
            offset: i,
            reason: "truncated: the document ends where a value was expected",
        }),
        Some(_) => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b' ' | b'\t' | b'\r' | b'\n' | b',' | b']' | b'}') {
                j += 1;
            }
            if j == i {
                return Err(Broken {
                    offset: i,
                    reason: "expected a value",
                });
            }
            Ok(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{split, Broken};

    fn texts(doc: &str) -> (Vec<&str>, Option<Broken>) {
        let (items, broken) = split(doc.as_bytes());
        (items.into_iter().map(|r| &doc[r]).collect(), broken)
    }

    #[test]
    fn items_of_arrays_lists_and_single_objects() {
        assert_eq!(
            texts(" [ {\"a\":\"]}\\\"\"}, {\"b\":[1,{}]} ]\n").0,
            [r#"{"a":"]}\""}"#, r#"{"b":[1,{}]}"#]
        );
        let list =
            "{\"kind\":\"EventList\",\"metadata\":{},\n \"items\":[\n  {\"x\":1},\n  {\"y\":2}\n ]\n}\n";
        assert_eq!(texts(list), (vec![r#"{"x":1}"#, r#"{"y":2}"#], None));
        assert_eq!(
            texts("{\"events\":[{\"message\":\"m\"}],\"searchedLogStreams\":[]}").0,
            [r#"{"message":"m"}"#]
        );
        assert_eq!(
            texts("{\n \"auditID\": \"a\"\n}\n"),
            (vec!["{\n \"auditID\": \"a\"\n}"], None)
        );
        assert_eq!(texts("[]").0, Vec::<&str>::new());
    }

    #[test]
    fn a_cut_document_keeps_the_items_before_the_cut() {
        let (items, broken) = texts("[{\"a\":1},\n{\"b\":\"cut");
        assert_eq!(items, [r#"{"a":1}"#]);
        assert_eq!(
            broken.unwrap().reason,
            "truncated: the document ends inside a string"
        );
        assert!(texts("[{}] x").1.is_some());
        assert!(texts("x").1.is_some());
    }
}
