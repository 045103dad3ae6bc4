//! The read loop: lines (or a whole-file document) to decoded events, with
//! the counts of [`ReadSummary`].

use super::document;
use super::event::{AuditEvent, Origin};
use super::files::decompressed;
use super::wire::{decode, Decoded, Value};
use super::{AuditError, ReadSummary, MALFORMED_QUOTED};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// A UTF-8 byte order mark, which some exports write at the start.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Read buffer of a file (before decompression).
const BUFFER: usize = 256 * 1024;

pub(super) struct Reader<F> {
    on_event: F,
    summary: ReadSummary,
    /// The line being read, reused.
    line: Vec<u8>,
    /// The events of the line being decoded, reused.
    decoded: Decoded,
}

impl<F: FnMut(AuditEvent) -> anyhow::Result<()>> Reader<F> {
    pub(super) fn new(on_event: F) -> Self {
        Reader {
            on_event,
            summary: ReadSummary::default(),
            line: Vec::with_capacity(64 * 1024),
            decoded: Vec::new(),
        }
    }

    pub(super) fn finish(self) -> ReadSummary {
        self.summary
    }

    pub(super) fn file(&mut self, path: &Path) -> anyhow::Result<()> {
        let file = std::fs::File::open(path).map_err(|source| AuditError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        self.stream(&path.display().to_string(), Box::new(file))
    }

    /// Reads one input, `name` being its path or `-`.
    pub(super) fn stream(&mut self, name: &str, raw: Box<dyn Read + '_>) -> anyhow::Result<()> {
        let io = |source| AuditError::Io {
            path: name.into(),
            source,
        };
        let mut input = decompressed(BufReader::with_capacity(BUFFER, raw)).map_err(io)?;
        self.summary.files += 1;
        let mut origin = Origin {
            input: name.to_string(),
            line: 0,
        };
        let mut line = std::mem::take(&mut self.line);
        let mut first = true;
        let result = loop {
            line.clear();
            if input.read_until(b'\n', &mut line).map_err(io)? == 0 {
                break Ok(());
            }
            origin.line += 1;
            self.summary.lines += 1;
            if origin.line == 1 && line.starts_with(BOM) {
                line.drain(..BOM.len());
            }
            let text = line.trim_ascii();
            if text.is_empty() {
                self.summary.skipped += 1;
                continue;
            }
            let parsed = serde_json::from_slice::<Value<'_>>(text);
            if std::mem::take(&mut first) {
                // A file that is one JSON document: its first line is an
                // array's start or an object that the next lines complete.
                let open = match &parsed {
                    Err(e) => text[0] == b'[' || (e.is_eof() && !input.fill_buf().map_err(io)?.is_empty()),
                    Ok(_) => false,
                };
                if open {
                    let mut doc = line.split_off(0);
                    input.read_to_end(&mut doc).map_err(io)?;
                    break self.document(&doc, &mut origin);
                }
            }
            match parsed {
                Ok(value) => {
                    if let Err(e) = self.value(value, &origin) {
                        break Err(e);
                    }
                }
                Err(e) => self.malformed(&origin, json_error(&e, None)),
            }
        };
        self.line = line;
        result
    }

    /// A whole-file document whose first line is `origin.line`.
    fn document(&mut self, doc: &[u8], origin: &mut Origin) -> anyhow::Result<()> {
        // Lines of the document after the first, already counted.
        let newlines = memchr_count(doc);
        let last_open = !doc.ends_with(b"\n") as u64;
        self.summary.lines += (newlines + last_open).saturating_sub(1);
        let first = origin.line;
        let (items, broken) = document::split(doc);
        let mut at = 0;
        let mut line = first;
        let mut line_of = |offset: usize| {
            line += memchr_count(&doc[at..offset]);
            at = offset;
            line
        };
        for range in items {
            origin.line = line_of(range.start);
            match serde_json::from_slice::<Value<'_>>(&doc[range]) {
                Ok(value) => self.value(value, origin)?,
                Err(e) => self.malformed(origin, json_error(&e, Some(origin.line))),
            }
        }
        if let Some(b) = broken {
            origin.line = line_of(b.offset.min(doc.len()));
            self.malformed(origin, b.reason.to_string());
        }
        Ok(())
    }

    fn value(&mut self, value: Value<'_>, origin: &Origin) -> anyhow::Result<()> {
        let mut decoded = std::mem::take(&mut self.decoded);
        decode(value, origin, &mut decoded);
        let mut result = Ok(());
        for item in decoded.drain(..) {
            match item {
                Ok(event) if result.is_ok() => {
                    self.summary.events += 1;
                    self.summary.by_stage[event.stage.index()] += 1;
                    result = (self.on_event)(event);
                }
                Ok(_) => {}
                Err(reason) => self.malformed(origin, reason),
            }
        }
        self.decoded = decoded;
        result
    }

    fn malformed(&mut self, origin: &Origin, reason: String) {
        self.summary.malformed += 1;
        if self.summary.first_malformed.len() < MALFORMED_QUOTED {
            self.summary.first_malformed.push(format!("{origin}: {reason}"));
        }
    }
}

/// A parse error without serde_json's position in the parsed slice, which
/// for a line is always line 1; a document item's line is given as `item`.
fn json_error(e: &serde_json::Error, item: Option<u64>) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    let at = match item {
        Some(first) if e.line() > 1 => format!("line {} column {}", first + e.line() as u64 - 1, e.column()),
        _ => format!("column {}", e.column()),
    };
    if e.is_eof() {
        format!("truncated JSON ({message} at {at})")
    } else {
        format!("not an audit event: {message} at {at}")
    }
}

fn memchr_count(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}
