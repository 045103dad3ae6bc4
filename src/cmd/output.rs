//! Output formats for lists, chosen in one place.

use super::UsageError;
use crate::cli::ListFormat;
use crate::report::escape::terminal;
use crate::report::json_array::JsonArray;
use anyhow::Result;
use comfy_table::{presets::NOTHING, ContentArrangement, Table};
use serde::Serialize;
use std::io::Write;

/// Rows of one table when a list is printed as it is read: a table's
/// column widths need all its rows, so a long list is several tables.
const TABLE_ROWS: usize = 1000;

/// Where a column of a list's table is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// Always.
    Always,
    /// With `-o wide`.
    Wide,
    /// When the list spans more than one cluster, and with `-o wide`.
    Clusters,
}

/// A column of a list's table: its header and when it is shown.
#[derive(Clone, Copy, Debug)]
pub struct Column(pub &'static str, pub Shown);

/// How a list is printed: its format, whether a table has its header line,
/// and how many clusters the list can span.
#[derive(Clone, Copy, Debug)]
pub struct Layout<'a> {
    pub format: &'a ListFormat,
    pub headers: bool,
    pub clusters: usize,
}

impl Layout<'_> {
    /// Which of `columns` the table shows.
    fn shows(&self, columns: &[Column]) -> Vec<bool> {
        let wide = *self.format == ListFormat::Wide;
        columns
            .iter()
            .map(|Column(_, shown)| match shown {
                Shown::Always => true,
                Shown::Wide => wide,
                Shown::Clusters => wide || self.clusters > 1,
            })
            .collect()
    }
}

/// Prints `items` as a JSON array, or as a table of `columns` with one row
/// per item from `row` (a cell for every column). A cell's lines (see
/// [`lines`]) are joined with commas; control characters are escaped.
/// `-o name` prints the names `name` gives each item, one a line.
pub fn print_list<T: Serialize>(
    items: &[T],
    layout: &Layout,
    columns: &[Column],
    row: impl Fn(&T) -> Vec<String>,
    name: impl Fn(&T) -> Vec<String>,
) -> Result<()> {
    print_stream(
        items.iter().map(Ok::<_, std::convert::Infallible>),
        layout,
        columns,
        |t| row(t),
        |t| name(t),
    )
}

/// [`print_list`] for items as they are read: the JSON array is written an
/// item at a time (the same text `serde_json` writes for the whole list),
/// the YAML sequence an entry at a time, names a line at a time, and a
/// table every [`TABLE_ROWS`] rows, so memory does not grow with the list.
/// A JSONPath template over each element (`{[*].id}`, `{range [*]}…{end}`)
/// is applied an element at a time; any other needs the whole array, built
/// in memory (as `serde_json::Value`s) and only then applied. An item that fails to read
/// ends the output with its error.
pub fn print_stream<T: Serialize, E: Into<anyhow::Error>>(
    items: impl Iterator<Item = std::result::Result<T, E>>,
    layout: &Layout,
    columns: &[Column],
    row: impl Fn(&T) -> Vec<String>,
    name: impl Fn(&T) -> Vec<String>,
) -> Result<()> {
    match layout.format {
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
        ListFormat::JsonPath(template) => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            match template.items() {
                // Element by element: memory does not grow with the list.
                Some(mut each) => {
                    each.begin(&mut out)?;
                    for item in items {
                        each.item(&serde_json::to_value(item.map_err(Into::into)?)?, &mut out)?;
                    }
                    each.end(&mut out)?;
                }
                None => {
                    let mut array = Vec::new();
                    for item in items {
                        array.push(serde_json::to_value(item.map_err(Into::into)?)?);
                    }
                    template.write(&serde_json::Value::Array(array), &mut out)?;
                }
            }
            out.flush()?;
        }
        ListFormat::Name => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for item in items {
                for line in name(&item.map_err(Into::into)?) {
                    writeln!(out, "{}", terminal(&line))?;
                }
            }
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
        ListFormat::Table | ListFormat::Wide => {
            let shows = layout.shows(columns);
            let pick = |cells: Vec<String>| -> Vec<String> {
                debug_assert_eq!(cells.len(), shows.len(), "a cell for every column");
                cells
                    .into_iter()
                    .zip(&shows)
                    .filter(|(_, s)| **s)
                    .map(|(c, _)| c)
                    .collect()
            };
            let header: Vec<&str> = columns
                .iter()
                .zip(&shows)
                .filter(|(_, s)| **s)
                .map(|(c, _)| c.0)
                .collect();
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let (mut rows, mut printed) = (Vec::new(), false);
            for item in items {
                rows.push(pick(row(&item.map_err(Into::into)?)));
                if rows.len() == TABLE_ROWS {
                    write_table(&mut out, &header, layout.headers && !printed, rows.drain(..))?;
                    printed = true;
                }
            }
            // An empty list is a table of its header alone.
            if !rows.is_empty() || !printed {
                write_table(&mut out, &header, layout.headers && !printed, rows.into_iter())?;
            }
            out.flush()?;
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

/// A listing command's one document in `format`: [`print_document`], or a
/// JSONPath template applied to the JSON (tables and names are the
/// caller's: see [`no_names`]).
pub fn print_document_as<T: Serialize + ?Sized>(value: &T, format: &ListFormat) -> Result<()> {
    match format {
        ListFormat::JsonPath(template) => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            template.write(&serde_json::to_value(value)?, &mut out)?;
            out.flush()?;
            Ok(())
        }
        _ => print_document(value, *format == ListFormat::Yaml),
    }
}

/// `-o name` for `command`, whose output is one document that lists
/// nothing with a name: a usage error, before anything runs.
pub fn no_names(format: &ListFormat, command: &str) -> Result<(), UsageError> {
    match format {
        ListFormat::Name => Err(UsageError(format!(
            "{command} prints no list of named items: -o name is not one of its formats (use -o json, yaml or jsonpath=TEMPLATE)"
        ))),
        _ => Ok(()),
    }
}

/// Prints a table with `header` and `rows`, as [`print_list`] does.
pub fn print_table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    write_table(&mut out, header, true, rows)?;
    out.flush()?;
    Ok(())
}

/// Space between columns.
const GUTTER: usize = 3;

/// Writes rows as kubectl does: left-aligned columns three spaces apart,
/// an upper-case header line of the column `names` (when `header`), no
/// borders and no wrapping, so that every row is one line for `grep`, `awk`
/// and `cut`. On a terminal the widest cells of free text are cut (ending
/// in `…`) so that a row fits its width; piped, nothing is cut.
fn write_table(
    out: &mut impl Write,
    names: &[&str],
    header: bool,
    rows: impl Iterator<Item = Vec<String>>,
) -> Result<()> {
    let mut rows: Vec<Vec<String>> = rows
        .map(|row| row.iter().map(|cell| table_cell(cell)).collect())
        .collect();
    if let Some(width) = terminal_width() {
        fit(names, header, &mut rows, width);
    }
    let mut table = Table::new();
    table
        .load_preset(NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    if header {
        table.set_header(names.iter().map(|h| h.to_uppercase()));
    }
    for row in rows {
        table.add_row(row);
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, GUTTER as u16));
    }
    for line in table.lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The width of the terminal standard output is, when it is one.
fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(&stdout).map(|(w, _)| usize::from(w.0))
}

/// The narrowest a cut column gets: a header stays whole up to this.
const NARROWEST: usize = 8;

/// The columns of free text whose cells are cut to fit a terminal; the
/// others (times, revisions, names) are never cut.
const CUT: &[&str] = &[
    "change",
    "changed fields",
    "error",
    "gaps",
    "member",
    "source",
    "summary",
    "written by",
];

/// Cuts the cells of the widest columns of free text (see [`CUT`]), one
/// character at a time, until a row of `rows` (and the header of column
/// `names`, when printed: a column is never cut below its name or
/// [`NARROWEST`]) fits `width`; a cut cell ends in `…`. Rows that cannot fit
/// even so are left as wide as the columns allow.
fn fit(names: &[&str], header: bool, rows: &mut [Vec<String>], width: usize) {
    let chars = |s: &str| s.chars().count();
    let columns = names.len();
    let mut widths: Vec<usize> = names.iter().map(|n| if header { chars(n) } else { 0 }).collect();
    for row in rows.iter() {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(chars(cell));
        }
    }
    let floor: Vec<usize> = (0..columns)
        .map(|i| match CUT.contains(&names[i]) {
            true => chars(names[i]).max(NARROWEST).min(widths[i]),
            false => widths[i],
        })
        .collect();
    let total = |widths: &[usize]| widths.iter().sum::<usize>() + GUTTER * columns.saturating_sub(1);
    while total(&widths) > width {
        let Some(widest) = (0..columns)
            .filter(|&i| widths[i] > floor[i])
            .max_by_key(|&i| widths[i])
        else {
            break;
        };
        widths[widest] -= 1;
    }
    for row in rows.iter_mut() {
        for (cell, &w) in row.iter_mut().zip(&widths) {
            if chars(cell) > w {
                *cell = cell.chars().take(w.saturating_sub(1)).chain(['…']).collect();
            }
        }
    }
}

/// A table cell on one line: a cell's lines joined with commas, each with
/// its control characters escaped (comfy-table writes them as they are, so
/// a `\r`, ESC or CSI would reach the terminal).
fn table_cell(cell: &str) -> String {
    cell.split('\n').map(terminal).collect::<Vec<_>>().join(",")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(row: &[&str]) -> Vec<String> {
        row.iter().map(|c| c.to_string()).collect()
    }

    fn width(row: &[String]) -> usize {
        row.iter().map(|c| c.chars().count()).sum::<usize>() + GUTTER * (row.len() - 1)
    }

    #[test]
    fn the_widest_cells_of_free_text_are_cut_until_a_row_fits() {
        let names = ["mod rev", "changed fields", "written by", "written at"];
        let mut rows = vec![
            cells(&[
                "42",
                "metadata.annotations,metadata.labels,spec.replicas",
                "kubectl-client-side-apply",
                "~2026-11-29T08:02:01Z ± 1 s",
            ]),
            cells(&[
                "43",
                "status",
                "kube-controller-manager",
                "~2026-11-29T08:03:01Z ± 1 s",
            ]),
        ];
        fit(&names, true, &mut rows, 80);
        assert!(rows.iter().all(|r| width(r) <= 80), "{rows:?}");
        assert_eq!(rows[0][0], "42");
        assert_eq!(rows[0][3], "~2026-11-29T08:02:01Z ± 1 s", "times are never cut");
        assert!(
            rows[0][1].starts_with("metadata.annot") && rows[0][1].ends_with('…'),
            "{rows:?}"
        );
        assert_eq!(rows[1][1], "status");
    }

    #[test]
    fn a_table_that_fits_is_left_alone_and_headers_are_never_cut() {
        let names = ["source", "summary"];
        let mut rows = vec![cells(&["http://10.0.0.1:2379", "deployments.apps"])];
        let before = rows.clone();
        fit(&names, true, &mut rows, 80);
        assert_eq!(rows, before);
        // Too narrow for anything: columns stop at their name's width (at
        // least 8).
        fit(&names, true, &mut rows, 5);
        assert_eq!(rows, [cells(&["http://…", "deploym…"])]);
        // Columns that are not free text are never cut.
        let mut rows = vec![cells(&["2026-11-29T08:02:01Z", "x"])];
        fit(&["started", "summary"], true, &mut rows, 5);
        assert_eq!(rows[0][0], "2026-11-29T08:02:01Z");
    }
}
