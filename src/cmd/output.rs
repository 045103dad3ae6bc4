//! Output formats for lists, chosen in one place.

use crate::cli::ListFormat;
use crate::report::escape::terminal;
use crate::report::json_array::JsonArray;
use anyhow::Result;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde::Serialize;
use std::io::Write;

/// Rows of one table when a list is printed as it is read: a table's
/// column widths need all its rows, so a long list is several tables.
const TABLE_ROWS: usize = 1000;

/// Prints `items` as a JSON array, or as a table with `header` and one row
/// per item from `row`. A cell's lines are split on `\n` (see [`lines`]);
/// each line is shown with control characters escaped.
pub fn print_list<T: Serialize>(
    items: &[T],
    format: ListFormat,
    header: &[&str],
    row: impl Fn(&T) -> Vec<String>,
) -> Result<()> {
    print_stream(
        items.iter().map(Ok::<_, std::convert::Infallible>),
        format,
        header,
        |t| row(t),
    )
}

/// [`print_list`] for items as they are read: the JSON array is written an
/// item at a time (the same text `serde_json` writes for the whole list),
/// the YAML sequence an entry at a time, and a table every [`TABLE_ROWS`]
/// rows, so memory does not grow with the list. An item that fails to read ends the output with its error.
pub fn print_stream<T: Serialize, E: Into<anyhow::Error>>(
    items: impl Iterator<Item = std::result::Result<T, E>>,
    format: ListFormat,
    header: &[&str],
    row: impl Fn(&T) -> Vec<String>,
) -> Result<()> {
    match format {
        ListFormat::Json => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let mut array = JsonArray::open(&mut out, "")?;
            for item in items {
                array.push(&item.map_err(Into::into)?)?;
            }
            array.close()?;
            writeln!(out)?;
            out.flush()?;
        }
        ListFormat::Yaml => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let mut empty = true;
            for item in items {
                // A one-entry sequence is `- ` and the entry: these written
                // one after another are the whole sequence.
                serde_yaml_ng::to_writer(&mut out, &[item.map_err(Into::into)?])?;
                empty = false;
            }
            if empty {
                writeln!(out, "[]")?;
            }
            out.flush()?;
        }
        ListFormat::Table => {
            let (mut rows, mut printed) = (Vec::new(), false);
            for item in items {
                rows.push(row(&item.map_err(Into::into)?));
                if rows.len() == TABLE_ROWS {
                    print_table(header, rows.drain(..))?;
                    printed = true;
                }
            }
            // An empty list is a table of its header alone.
            if !rows.is_empty() || !printed {
                print_table(header, rows.into_iter())?;
            }
        }
    }
    Ok(())
}

/// Prints one document: pretty JSON, or YAML as kubectl prints it.
pub fn print_document<T: Serialize + ?Sized>(value: &T, yaml: bool) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if yaml {
        serde_yaml_ng::to_writer(&mut out, value)?;
    } else {
        serde_json::to_writer_pretty(&mut out, value)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// Prints a table with `header` and `rows`, each cell escaped as
/// [`print_list`] says.
pub fn print_table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<()> {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    for row in rows {
        table.add_row(row.iter().map(|cell| table_cell(cell)));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{table}")?;
    out.flush()?;
    Ok(())
}

/// A table cell for a terminal. comfy-table splits a cell into lines on
/// `\n` and writes every other character as is (a `\r`, ESC or CSI would
/// reach the terminal), so each line is escaped.
fn table_cell(cell: &str) -> String {
    cell.split('\n').map(terminal).collect::<Vec<_>>().join("\n")
}

/// Several values in one table cell, one a line, each escaped (a value's
/// own newlines shown as `\n`, not as more lines).
pub fn lines<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items
        .into_iter()
        .map(|s| terminal(s.as_ref()).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// One stored value in a table cell, control characters (newlines
/// included) escaped.
pub fn text(s: &str) -> String {
    terminal(s).into_owned()
}

/// `-` for a missing value.
/// (Escaped: the value may be stored data.)
pub fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map(|v| text(&v.to_string())).unwrap_or_else(|| "-".into())
}
