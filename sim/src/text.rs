//! Text from an input file that npusim shows or writes again, made safe for whoever reads it
//! (RELIABILITY.md, "Outputs that cannot be turned against their reader"):
//!
//! - [`shown`]: the one escaper of text bound for a terminal: a control character (ESC, NUL,
//!   CR, DEL, ...) or a bidirectional formatting character from an input is shown as
//!   `\u{1b}`, never sent raw, so an input cannot move the cursor, recolour or clear the
//!   screen, or reorder what a line seems to say;
//! - [`name_problem`]: why a user-chosen name is refused at load (the same characters);
//! - [`csv_cell`] and [`csv_cell_read`]: a text cell of a CSV npusim writes, neutralised as
//!   OWASP's CSV-injection guidance says so that a spreadsheet does not run it as a formula,
//!   and read back unchanged.

use std::borrow::Cow;

/// A bidirectional formatting character: the embeddings and overrides U+202A..U+202E, the
/// isolates U+2066..U+2069 and the marks U+200E, U+200F. They reorder how the text around
/// them is displayed ("Trojan Source"), so a name holding one can show as another.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// A character that must not reach a terminal raw: a control character other than newline and
/// tab (C0, DEL, C1: `char::is_control`), or a bidirectional formatting character.
pub fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi(c)
}

/// `s` with every [`is_hidden`] character written as Rust's escape, `\u{1b}`: what a terminal,
/// a log or a text report shows of input text. Newlines and tabs stay, and so does a CR before
/// a newline (a CRLF line end); a CR alone is escaped.
pub fn shown(s: &str) -> Cow<'_, str> {
    let bare_cr = |i: usize| s.as_bytes().get(i + 1) != Some(&b'\n');
    let escaped = |(i, c): (usize, char)| is_hidden(c) && (c != '\r' || bare_cr(i));
    if !s.char_indices().any(escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, c) in s.char_indices() {
        if escaped((i, c)) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The usual name of a character [`name_problem`] refuses, for its message.
fn char_name(c: char) -> &'static str {
    match c {
        '\0' => "NUL",
        '\t' => "a tab",
        '\n' => "a newline",
        '\r' => "a carriage return",
        '\u{1b}' => "ESC",
        '\u{7f}' => "DEL",
        '\u{202a}'..='\u{202e}' => "a bidirectional embedding or override",
        '\u{2066}'..='\u{2069}' => "a bidirectional isolate",
        '\u{200e}' | '\u{200f}' => "a bidirectional mark",
        _ => "a control character",
    }
}

/// Why `name` (a kernel, buffer, tensor, param, core, case or buffer-id name: anything the
/// user chose and npusim prints) is refused, or `None`: it holds a control character (tab and
/// newline included: a name is one line) or a bidirectional formatting character. The message
/// names the first such character by code point, the name shown escaped ([`shown`]).
pub fn name_problem(name: &str) -> Option<String> {
    let (at, c) = name
        .chars()
        .enumerate()
        .find(|&(_, c)| c.is_control() || is_bidi(c))?;
    Some(format!(
        "the name \"{}\" holds U+{:04X} ({}) at character {}; a name is printable text",
        shown(name),
        c as u32,
        char_name(c),
        at + 1
    ))
}

/// The fix [`name_problem`]'s message comes with.
pub const NAME_FIX: &str =
    "remove the character from the name: a terminal would act on it, and a reader cannot see it";

/// The first characters OWASP's CSV-injection guidance names: a spreadsheet opening a cell that
/// starts with one of them may read it as a formula (`=HYPERLINK(...)`, `@SUM(...)`, `+cmd|`).
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether a text cell needs [`csv_cell`]'s quote: it starts with a formula character after
/// any number of `'`. Counting the quotes already there keeps the mapping one-to-one, so
/// [`csv_cell_read`] can undo it: `=1` is written `'=1`, and `'=1` is written `''=1`.
fn needs_quote(cell: &str) -> bool {
    cell.trim_start_matches('\'').starts_with(FORMULA_START)
}

/// A text cell as a CSV npusim writes it: one that a spreadsheet would read as a formula gets
/// a leading `'`, which spreadsheets take as "text", as OWASP recommends. Only text columns
/// go through this: a number column's `-5` stays a number. (The CSV writer then quotes the
/// cell where its characters need it; a tab or CR always does.)
pub fn csv_cell(cell: &str) -> Cow<'_, str> {
    if needs_quote(cell) {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

/// A text cell of a CSV npusim wrote, as it was before [`csv_cell`]: the inverse of it.
pub fn csv_cell_read(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if needs_quote(rest) => rest,
        _ => cell,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shown_escapes_what_a_terminal_would_act_on() {
        assert_eq!(shown("plain text, tab\there\n"), "plain text, tab\there\n");
        assert!(matches!(shown("plain"), Cow::Borrowed(_)));
        // ESC [ 3 1 m would turn the terminal red; CR would return to the line's start
        assert_eq!(shown("a\u{1b}[31mb\rc\0"), "a\\u{1b}[31mb\\u{d}c\\u{0}");
        // a CRLF line end is a line end
        assert_eq!(shown("a\r\nb\r"), "a\r\nb\\u{d}");
        // RIGHT-TO-LEFT OVERRIDE, an isolate and a mark; DEL and a C1 control
        assert_eq!(
            shown("x\u{202e}y\u{2066}z\u{200f}\u{7f}\u{9b}"),
            "x\\u{202e}y\\u{2066}z\\u{200f}\\u{7f}\\u{9b}"
        );
    }

    #[test]
    fn names_with_hidden_characters_are_refused_with_the_character_named() {
        assert_eq!(name_problem("vec_add"), None);
        assert_eq!(name_problem("vecteur_ü"), None);
        let m = name_problem("k\u{1b}[2J").unwrap();
        assert!(m.starts_with("the name \"k\\u{1b}[2J\" holds U+001B (ESC) at character 2"));
        assert!(!m.contains('\u{1b}'));
        let m = name_problem("ab\u{202e}c").unwrap();
        assert!(m.contains("U+202E (a bidirectional embedding or override) at character 3"));
        assert!(name_problem("a\tb").unwrap().contains("U+0009 (a tab)"));
        assert!(name_problem("\u{200e}")
            .unwrap()
            .contains("bidirectional mark"));
        assert!(name_problem("a\u{2069}").unwrap().contains("isolate"));
    }

    #[test]
    fn formula_cells_get_a_quote() {
        for (cell, written) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+1", "'+1"),
            ("-5", "'-5"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("'=1", "''=1"),
            ("a=b", "a=b"),
            ("'quoted'", "'quoted'"),
            ("", ""),
        ] {
            assert_eq!(csv_cell(cell), written, "{cell:?}");
            assert_eq!(csv_cell_read(written), cell, "{written:?}");
        }
    }

    proptest! {
        /// Writing then reading a cell gives it back, and no written cell starts with a
        /// formula character.
        #[test]
        fn csv_cells_round_trip(cell in "['=+@\\-\t\ra-z]{0,6}") {
            let written = csv_cell(&cell);
            prop_assert!(!written.starts_with(FORMULA_START));
            prop_assert_eq!(csv_cell_read(&written), cell.as_str());
        }
    }
}
