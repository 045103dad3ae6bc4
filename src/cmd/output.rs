//! Output formats for lists, chosen in one place.

use crate::cli::ListFormat;
use crate::report::escape::terminal;
use anyhow::Result;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde::Serialize;
use std::io::Write;

/// Prints `items` as a JSON array, or as a table with `header` and one row
/// per item from `row`. A cell's lines are split on `\n` (see [`lines`]);
/// each line is shown with control characters escaped.
pub fn print_list<T: Serialize>(
    items: &[T],
    format: ListFormat,
    header: &[&str],
    row: impl Fn(&T) -> Vec<String>,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        ListFormat::Json => {
            serde_json::to_writer_pretty(&mut out, items)?;
            writeln!(out)?;
        }
        ListFormat::Table => {
            drop(out);
            return print_table(header, items.iter().map(row));
        }
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
