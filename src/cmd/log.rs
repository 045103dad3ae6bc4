//! Log lines on standard error, as `--log-format` asks: plain text
//! (`warning: ...`, as the tool always printed them) or one JSON object a
//! line for a log collector. The library logs through `tracing`; a progress
//! bar on the terminal is cleared for each line.

use crate::cli::LogFormat;
use std::fmt;
use std::io::{self, Write};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// Standard error, with the progress bar out of the way.
struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        crate::lifecycle::suspended(|| io::stderr().lock().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        crate::lifecycle::suspended(|| io::stderr().lock().write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = Stderr;

    fn make_writer(&'a self) -> Stderr {
        Stderr
    }
}

/// The text form: the level as a word before the message (none for
/// notices), then any other fields as `name=value`.
struct Text;

/// An event's message and its other fields.
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use std::fmt::Write as _;
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            name => {
                let _ = write!(self.rest, " {name}={value:?}");
            }
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            _ => self.record_debug(field, &value),
        }
    }
}

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let prefix = match *event.metadata().level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            _ => "",
        };
        writeln!(w, "{prefix}{}{}", fields.message, fields.rest)
    }
}

/// Sends the library's log lines to standard error in `format`; notices
/// and warnings are shown, debugging detail is not.
pub fn init(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(Stderr)
        .with_max_level(Level::INFO);
    // A second call (tests calling `dispatch` twice) keeps the first.
    let _ = match format {
        LogFormat::Text => builder.event_format(Text).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}
