//! Escaping for every output format, in one place: whatever a tenant wrote
//! into the cluster (values, names, keys, field managers) and whatever the
//! store holds (error texts) is data, never markup or terminal control.
//!
//! - [`terminal`]: text for a terminal; control characters become visible
//!   escapes (`\x1b`, `\u{9b}`, `\n`).
//! - [`markdown_code`], [`markdown_code_cell`], [`markdown_text`]: a value as
//!   inline code (outside or inside a table cell) and prose (finding
//!   summaries, names) as plain text in a table cell.
//! - [`html`], [`html_script_json`]: text and attribute values, and JSON
//!   embedded in a `<script>` element.
//! - [`prometheus_label`]: a label value of the Prometheus text format.
//!
//! JSON output needs none of these: serde escapes it.
//!
//! Plain text with nothing special in it comes out unchanged (bar the
//! backtick fence around code).

use std::borrow::Cow;

/// Bidirectional embedding, override and isolate controls: invisible, and
/// they reorder what follows on the line ("Trojan Source").
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` is shown as a visible escape rather than itself: C0 (all of
/// it, newline and tab included), DEL, C1 and the bidi controls.
fn needs_escape(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// Appends the visible escape of `c` (one of [`needs_escape`]).
fn push_escape(out: &mut String, c: char) {
    use std::fmt::Write;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32).unwrap(),
        c => write!(out, "\\u{{{:x}}}", c as u32).unwrap(),
    }
}

/// `s` for a terminal: control characters (C0 including newline and tab,
/// DEL, C1 such as `\u{9b}` CSI, ESC) and bidi controls as visible escapes
/// like `\x1b`, `\n`, `\u{9b}`; everything else, backslashes included, as
/// is. Borrowed when nothing needed escaping.
///
/// For a table cell of comfy-table (which splits cells on `\n` and passes
/// every other byte through to the terminal), escape each line and join the
/// lines with `\n`.
pub fn terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Inline code showing `s` literally; `in_table` escapes `|`, which would
/// otherwise end a GFM table cell even inside a code span.
fn code_span(s: &str, in_table: bool) -> String {
    let mut body = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        match c {
            c if needs_escape(c) => push_escape(&mut body, c),
            '|' if in_table => body.push_str("\\|"),
            c => body.push(c),
        }
    }
    if body.is_empty() {
        // A code span cannot be empty; one of only spaces keeps them.
        return "` `".into();
    }
    // A fence longer than any run of backticks inside.
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // Pad when the content starts or ends with a backtick (it would join
    // the fence), or starts and ends with a space (a renderer strips one
    // from each side unless the content is all spaces).
    let pad = body.starts_with('`')
        || body.ends_with('`')
        || (body.starts_with(' ') && body.ends_with(' ') && body.bytes().any(|b| b != b' '));
    if pad {
        format!("{fence} {body} {fence}")
    } else {
        format!("{fence}{body}{fence}")
    }
}

/// `s` as Markdown inline code, outside a table: shown literally by any
/// CommonMark renderer (no HTML, emphasis or links); control characters,
/// newlines included, as visible escapes.
pub fn markdown_code(s: &str) -> String {
    code_span(s, false)
}

/// [`markdown_code`] for a GFM table cell: `|` escaped as `\|`, which the
/// table takes out again before rendering the code span.
pub fn markdown_code_cell(s: &str) -> String {
    code_span(s, true)
}

/// `s` as plain text in a GFM table cell: `<`, `>`, `&` as entities (so no
/// renderer, Markdown or HTML wiki, sees a tag), the characters of inline
/// Markdown (`\`, `` ` ``, `*`, `_`, `[`, `]`, `~`, `$`) and the cell's `|`
/// backslash-escaped, control characters as visible escapes.
pub fn markdown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if needs_escape(c) => push_escape(&mut out, c),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' | '$' | '|' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as HTML text or a quoted attribute value.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Serialized JSON made safe to embed in a `<script>` element: `<`, `>` and
/// `&` (which JSON holds only inside strings) as `\u` escapes, so no
/// `</script>` or `<!--` can end or bend the element. Still the same JSON.
pub fn html_script_json(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A label value of the Prometheus text exposition format.
pub fn prometheus_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a CommonMark renderer shows for a code span `span` (fence,
    /// optional padding), or `None` when it is not one well-formed span.
    fn code_content(span: &str) -> Option<String> {
        let n = span.bytes().take_while(|&b| b == b'`').count();
        if n == 0 || span.len() < 2 * n {
            return None;
        }
        let fence = &span[..n];
        let inner = span[n..].strip_suffix(fence)?;
        // The closing fence is exactly n backticks, and no run of exactly n
        // backticks inside closes the span early.
        if inner.ends_with('`') {
            return None;
        }
        let runs_of_n = inner.split(|c| c != '`').any(|run| run.len() == n);
        if runs_of_n {
            return None;
        }
        let stripped = if inner.len() >= 2
            && inner.starts_with(' ')
            && inner.ends_with(' ')
            && inner.bytes().any(|b| b != b' ')
        {
            &inner[1..inner.len() - 1]
        } else {
            inner
        };
        Some(stripped.to_string())
    }

    /// Unescaped `|` (cell separators) in a GFM table row.
    fn unescaped_pipes(row: &str) -> usize {
        let b = row.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
            .count()
    }

    #[test]
    fn terminal_leaves_plain_text_alone() {
        for s in ["", "plain", "ünïcødé → 日本語 🚀", "C:\\path\\x1b", "a|b`c<d>"] {
            assert!(matches!(terminal(s), Cow::Borrowed(_)), "{s:?}");
            assert_eq!(terminal(s), s);
        }
    }

    #[test]
    fn terminal_escapes_every_control_character() {
        assert_eq!(terminal("\x1b]0;owned\x07\x1b[2J"), "\\x1b]0;owned\\x07\\x1b[2J");
        assert_eq!(terminal("a\nb\tc\rd"), "a\\nb\\tc\\rd");
        assert_eq!(terminal("\u{9b}31m\u{7f}\0"), "\\u{9b}31m\\x7f\\x00");
        assert_eq!(terminal("abc\u{202e}def"), "abc\\u{202e}def");
        for c in (0u32..0x20)
            .chain(0x7f..0xa0)
            .chain(0x202a..0x202f)
            .chain(0x2066..0x206a)
        {
            let c = char::from_u32(c).unwrap();
            let out = terminal(&c.to_string()).into_owned();
            assert!(out.starts_with('\\') && out.len() > 1, "{c:?} → {out:?}");
            assert!(!out.chars().any(needs_escape), "{c:?} → {out:?}");
        }
        // Escaping what is already escaped changes nothing.
        let once = terminal("x\x1by\u{9b}").into_owned();
        assert_eq!(terminal(&once), once);
    }

    #[test]
    fn markdown_code_shows_any_value_literally() {
        let cases = [
            ("", " "),
            ("plain", "plain"),
            ("`", "`"),
            ("``", "``"),
            ("```", "```"),
            ("`lead", "`lead"),
            ("trail`", "trail`"),
            ("a ``` b", "a ``` b"),
            ("```code```", "```code```"),
            (" both ", " both "),
            ("   ", "   "),
            (" lead", " lead"),
            (
                "<img src=x onerror=\"alert(1)\">",
                "<img src=x onerror=\"alert(1)\">",
            ),
            ("<script>alert(1)</script>", "<script>alert(1)</script>"),
            ("日本語 🚀 ü", "日本語 🚀 ü"),
            ("a\\", "a\\"),
            ("line1\nline2", "line1\\nline2"),
            ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),
            ("\u{9b}2J", "\\u{9b}2J"),
        ];
        for (value, shown) in cases {
            let span = markdown_code(value);
            assert_eq!(code_content(&span).as_deref(), Some(shown), "{value:?} → {span}");
            assert!(!span.contains('\n') && !span.contains('\x1b'), "{span}");
        }
        assert_eq!(markdown_code("plain"), "`plain`");
        assert_eq!(markdown_code("a`b"), "``a`b``");
        assert_eq!(markdown_code("`"), "`` ` ``");
    }

    #[test]
    fn markdown_code_cell_keeps_the_row_shape() {
        for value in ["a|b", "|", "||", "`|`", "\\|", "x\n|y", "", "```"] {
            let span = markdown_code_cell(value);
            let row = format!("| {span} | next |");
            assert_eq!(unescaped_pipes(&row), 3, "{value:?} → {row}");
            // The table takes `\|` back to `|` before the span is rendered.
            let shown = code_content(&span.replace("\\|", "|")).unwrap();
            assert_eq!(
                shown.replace("\\n", "\n"),
                if value.is_empty() { " " } else { value }
            );
        }
        assert_eq!(markdown_code_cell("a|b"), "`a\\|b`");
    }

    #[test]
    fn markdown_text_escapes_markup() {
        assert_eq!(
            markdown_text("Deployment shop/api: status.observedGeneration went 3 → 2"),
            "Deployment shop/api: status.observedGeneration went 3 → 2"
        );
        assert_eq!(
            markdown_text("<img src=x onerror=\"alert(1)\">"),
            "&lt;img src=x onerror=\"alert(1)\"&gt;"
        );
        assert_eq!(
            markdown_text("a|b`c*d_e[f](g)~h\\i"),
            "a\\|b\\`c\\*d\\_e\\[f\\](g)\\~h\\\\i"
        );
        assert_eq!(markdown_text("x\ny\x1b[2J&amp;"), "x\\ny\\x1b\\[2J&amp;amp;");
        assert_eq!(markdown_text(""), "");
        for value in ["|", "a||b", "\\|", "`|`"] {
            let row = format!("| {} | next |", markdown_text(value));
            assert_eq!(unescaped_pipes(&row), 3, "{value:?} → {row}");
        }
    }

    #[test]
    fn html_escapes_text_and_attributes() {
        assert_eq!(
            html("<img src=x onerror=\"alert('1')\">&"),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
        assert_eq!(html("plain ü"), "plain ü");
        let json = serde_json::to_string(&serde_json::json!({"v": "</script><!--<script>&"})).unwrap();
        let safe = html_script_json(&json);
        assert!(
            !safe.contains('<') && !safe.contains('>') && !safe.contains('&'),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["v"], "</script><!--<script>&");
    }

    /// Strings from the characters that matter to some format.
    fn awkward() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let chars = vec![
            '`', '`', ' ', 'a', '|', '\\', '\n', '\r', '\t', '\x1b', '\x07', '\u{9b}', '\u{7f}', '<', '>',
            '&', '*', '_', '[', 'ü', '日', '🚀', '\u{202e}',
        ];
        proptest::collection::vec(proptest::sample::select(chars), 0..16)
            .prop_map(|v| v.into_iter().collect())
    }

    proptest::proptest! {
        #[test]
        fn any_value_survives_every_format(s in awkward()) {
            let shown = if s.is_empty() { " ".to_string() } else { terminal(&s).into_owned() };
            let plain = markdown_code(&s);
            proptest::prop_assert_eq!(code_content(&plain), Some(shown.clone()), "{}", plain);
            let cell = markdown_code_cell(&s);
            proptest::prop_assert_eq!(unescaped_pipes(&format!("| {cell} | x |")), 3, "{}", cell);
            proptest::prop_assert_eq!(code_content(&cell.replace("\\|", "|")), Some(shown), "{}", cell);
            let text = markdown_text(&s);
            proptest::prop_assert_eq!(unescaped_pipes(&format!("| {text} | x |")), 3, "{}", text);
            proptest::prop_assert!(!text.contains('<') && !text.contains('>'), "{}", text);
            for out in [terminal(&s).into_owned(), plain, cell, text] {
                proptest::prop_assert!(!out.chars().any(needs_escape), "{:?}", out);
            }
        }
    }

    #[test]
    fn prometheus_label_escapes() {
        assert_eq!(prometheus_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
