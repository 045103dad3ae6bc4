//! A JSON array written one item at a time, laid out as `serde_json`'s
//! pretty printer lays out the whole array: what every command that
//! streams JSON (`findings`, `report -o json`, `diff`) writes with.

use serde::Serialize;
use std::io::{self, Write};

/// An open array at some depth of a pretty-printed document.
pub struct JsonArray<'w> {
    out: &'w mut dyn Write,
    /// The indentation of the line the array opens on.
    indent: String,
    empty: bool,
}

impl<'w> JsonArray<'w> {
    /// Writes `[` (the caller has written what precedes it on its line);
    /// items are indented one level deeper than `indent`.
    pub fn open(out: &'w mut dyn Write, indent: &str) -> io::Result<JsonArray<'w>> {
        out.write_all(b"[")?;
        Ok(JsonArray {
            out,
            indent: indent.to_string(),
            empty: true,
        })
    }

    pub fn push(&mut self, item: &impl Serialize) -> io::Result<()> {
        let text = serde_json::to_string_pretty(item).map_err(io::Error::other)?;
        self.out.write_all(if self.empty { b"\n" } else { b",\n" })?;
        self.empty = false;
        // Pretty JSON holds no newline inside a string: each line nests.
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                self.out.write_all(b"\n")?;
            }
            write!(self.out, "{}  {line}", self.indent)?;
        }
        Ok(())
    }

    /// Writes `]`.
    pub fn close(self) -> io::Result<()> {
        if self.empty {
            self.out.write_all(b"]")
        } else {
            write!(self.out, "\n{}]", self.indent)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn streamed(items: &[serde_json::Value], indent: &str) -> String {
        let mut out = Vec::new();
        let mut array = JsonArray::open(&mut out, indent).unwrap();
        for item in items {
            array.push(item).unwrap();
        }
        array.close().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lays_out_as_the_pretty_printer_does() {
        for items in [
            vec![],
            vec![json!(1)],
            vec![json!({"a": [1, {"b": "x\ny"}], "c": {}}), json!("s"), json!([])],
        ] {
            assert_eq!(
                streamed(&items, ""),
                serde_json::to_string_pretty(&items).unwrap()
            );
            let doc = json!({"k": items});
            let nested = format!("{{\n  \"k\": {}\n}}", streamed(&items, "  "));
            assert_eq!(nested, serde_json::to_string_pretty(&doc).unwrap());
        }
    }
}
