//! Output formats for lists, chosen in one place.

use crate::cli::ListFormat;
use anyhow::Result;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde::Serialize;
use std::io::Write;

/// Prints `items` as a JSON array, or as a table with `header` and one row
/// per item from `row`.
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
            let mut table = Table::new();
            table
                .load_preset(UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_header(header);
            for item in items {
                table.add_row(row(item));
            }
            writeln!(out, "{table}")?;
        }
    }
    out.flush()?;
    Ok(())
}

/// `-` for a missing value.
pub fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}
