//! Reading input files and reporting what is wrong with them. The only module that reads files
//! (besides `output`, which writes them) and renders diagnostics.

use crate::Exit;
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};
use sim::diag::{did_you_mean, Severity};
use sim::{Config, Diagnostic, LoadError};
use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The most bytes any input may have unless `--max-input-bytes` says otherwise: 256 MiB, far
/// above any program, config or CSV written by hand or generated (the largest shipped input is
/// a few KiB; a 10^6-row sweep results file is about 100 MiB), yet small enough that a wrong
/// file (`/dev/zero`, a disk image) is refused before it costs much memory.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 << 20;

/// The `--max-input-bytes` of this run; set once by `main` before anything is read.
static MAX_INPUT_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_MAX_INPUT_BYTES);

/// Sets the most bytes an input may have (`--max-input-bytes`).
pub fn set_max_input_bytes(limit: u64) {
    MAX_INPUT_BYTES.store(limit, Ordering::Relaxed);
}

/// The name messages give the input at `path`: `<stdin>` for `-`, else the path.
pub fn name(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether `path` is `-`, the standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The text of one input and the name diagnostics use for it.
#[derive(Clone)]
pub struct Source {
    pub name: String,
    pub text: String,
}

impl Source {
    /// The file it was read from: `None` for a built-in config (`<built-in NAME>`).
    pub fn file(&self) -> Option<&Path> {
        (!self.name.starts_with("<built-in ")).then_some(Path::new(&self.name))
    }
}

/// Why an input could not be used. The text form prints it on stderr ([`Rejected::report`]);
/// `check --format json` lists it ([`Rejected::diagnostics`]).
pub enum Rejected {
    /// One problem: a file that cannot be read, an unknown config name. `text` is the line
    /// printed after `error: `, `diagnostic` the same problem with its file and place.
    Line {
        text: String,
        diagnostic: Box<Diagnostic>,
    },
    /// A file that does not load: every problem in it.
    Load { error: LoadError, source: Source },
}

impl Rejected {
    /// Prints the problem (or every problem of the file) on stderr and gives exit code 2.
    pub fn report(&self) -> Exit {
        match self {
            Rejected::Line { text, .. } => Exit::input(text),
            Rejected::Load { error, source } => report_load_error(error, &[source]),
        }
    }

    /// Every problem, in the order the text form prints them.
    pub fn diagnostics(self) -> Vec<Diagnostic> {
        match self {
            Rejected::Line { diagnostic, .. } => vec![*diagnostic],
            Rejected::Load { error, .. } => error.diagnostics,
        }
    }
}

/// Reads a file named on the command line.
pub fn read(path: &Path, what: &str) -> Result<Source, Rejected> {
    let name = name(path);
    match read_text(path) {
        Ok(text) => Ok(Source { name, text }),
        Err(e) => Err(Rejected::Line {
            text: e.describe(&name, what),
            diagnostic: Box::new(e.diagnostic(&name, what)),
        }),
    }
}

/// Why a file could not be read as text: the system's error, or where it stops being UTF-8.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    /// More than `limit` bytes (`--max-input-bytes`): only `limit + 1` were read.
    TooLarge {
        limit: u64,
    },
    NotUtf8 {
        line: usize,
        column: usize,
        byte: u8,
        offset: usize,
    },
    /// The file starts with a UTF-8 byte-order mark, which npusim refuses (docs/decisions.md).
    ByteOrderMark,
}

/// How a byte-order mark is refused: the message and its hint.
const BOM: (&str, &str) = (
    "starts with a byte-order mark (bytes EF BB BF), which npusim does not accept",
    "save it as UTF-8 without a BOM (the editor's \"UTF-8\", not \"UTF-8 with BOM\")",
);

impl ReadError {
    /// The message for the `what` file `name`: where it stops being UTF-8, or why it could not
    /// be read.
    pub fn describe(&self, name: &str, what: &str) -> String {
        match self {
            ReadError::Io(e) => format!("cannot read {what} file {name}: {e}"),
            ReadError::TooLarge { limit } => format!(
                "{name}: the {what} file is larger than {limit} bytes (--max-input-bytes); {}",
                too_large_hint()
            ),
            ReadError::NotUtf8 {
                line,
                column,
                byte,
                offset,
            } => format!(
                "{name}:{line}:{column}: the {what} file is not UTF-8 text (byte {byte:#04x} at offset {offset}); save it as UTF-8"
            ),
            ReadError::ByteOrderMark => format!("{name}:1:1: the {what} file {}; {}", BOM.0, BOM.1),
        }
    }

    /// The same problem as a diagnostic of the file `name`, at its line and column if known.
    pub fn diagnostic(&self, name: &str, what: &str) -> Diagnostic {
        match self {
            ReadError::Io(e) => {
                Diagnostic::error(name, "", format!("cannot read {what} file {name}: {e}"))
            }
            ReadError::TooLarge { limit } => Diagnostic::error(
                name,
                "",
                format!("the {what} file is larger than {limit} bytes (--max-input-bytes)"),
            )
            .with_hint(too_large_hint()),
            ReadError::NotUtf8 {
                line,
                column,
                byte,
                offset,
            } => {
                let mut d = Diagnostic::error(
                    name,
                    "",
                    format!(
                        "the {what} file is not UTF-8 text (byte {byte:#04x} at offset {offset})"
                    ),
                )
                .with_hint("save it as UTF-8");
                d.line = u32::try_from(*line).ok();
                d.column = u32::try_from(*column).ok();
                d
            }
            ReadError::ByteOrderMark => {
                let mut d = Diagnostic::error(name, "", format!("the {what} file {}", BOM.0))
                    .with_hint(BOM.1);
                (d.line, d.column) = (Some(1), Some(1));
                d
            }
        }
    }
}

/// What to do about an input above `--max-input-bytes`.
fn too_large_hint() -> String {
    format!(
        "check that it is the file you meant; a larger one needs --max-input-bytes N (default {DEFAULT_MAX_INPUT_BYTES}, 256 MiB)"
    )
}

/// Everything `from` gives if that is at most `limit` bytes, else `None` once it gave one byte
/// more. Reads in 64 KiB pieces into a buffer that grows by doubling but never past
/// `limit + 1` bytes, so neither the memory nor the bytes read depend on how long the stream
/// goes on.
fn read_capped(mut from: impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let mut out: Vec<u8> = Vec::new();
    let mut piece = vec![0u8; 1 << 16];
    loop {
        let n = match from.read(&mut piece) {
            Ok(0) => return Ok(Some(out)),
            Ok(n) => n.min(cap - out.len()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if out.capacity() - out.len() < n {
            out.reserve_exact(out.capacity().max(n).min(cap - out.len()));
        }
        out.extend_from_slice(&piece[..n]);
        if out.len() as u64 > limit {
            return Ok(None);
        }
    }
}

/// The text of the file at `path` (`-`: the standard input): every input npusim reads goes
/// through here. At most `--max-input-bytes` + 1 bytes are read, so an endless stream
/// (`/dev/zero`, a pipe that never ends) is refused
/// after that many, and a larger regular file before anything is read.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let limit = MAX_INPUT_BYTES.load(Ordering::Relaxed);
    let read = if is_stdin(path) {
        read_capped(std::io::stdin().lock(), limit)
    } else {
        let file = std::fs::File::open(path).map_err(ReadError::Io)?;
        match file.metadata() {
            // a regular file says its size: refused without reading it
            Ok(meta) if meta.is_file() && meta.len() > limit => Ok(None),
            _ => read_capped(file, limit),
        }
    };
    let bytes = read
        .map_err(ReadError::Io)?
        .ok_or(ReadError::TooLarge { limit })?;
    if bytes.starts_with(b"\xef\xbb\xbf") {
        return Err(ReadError::ByteOrderMark);
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let valid = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
        let line = valid.matches('\n').count() + 1;
        let column = valid.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ReadError::NotUtf8 {
            line,
            column,
            byte: bytes[offset],
            offset,
        }
    })
}

/// Resolves `--config`: a built-in name, else a file.
pub fn config_source(arg: &str) -> Result<Source, Rejected> {
    config_source_in(arg, Path::new(""))
}

/// [`config_source`] with a file's path relative to `dir` (a sweep file's directory).
pub fn config_source_in(arg: &str, dir: &Path) -> Result<Source, Rejected> {
    if let Some(text) = sim::builtin::builtin(arg) {
        return Ok(Source {
            name: format!("<built-in {arg}>"),
            text: text.to_string(),
        });
    }
    if arg == "-" {
        return read(Path::new("-"), "config");
    }
    let path = dir.join(arg);
    let path = path.as_path();
    let looks_like_path =
        arg.contains(['/', '\\']) || arg.ends_with(".yaml") || arg.ends_with(".yml");
    if path.exists() || looks_like_path {
        return read(path, "config");
    }
    let names: Vec<&str> = sim::builtin::BUILTIN.iter().map(|(n, _)| *n).collect();
    let message = format!(
        "unknown config `{arg}`: not a built-in config ({}) and no such file",
        names.join(", ")
    );
    let mut text = message.clone();
    // a problem with an argument, not in a file: no file name
    let mut diagnostic = Diagnostic::error("", "", message);
    if let Some(close) = did_you_mean(arg, names.iter().copied()) {
        text.push_str(&format!(" (hint: did you mean `{close}`?)"));
        diagnostic.hint = Some(format!("did you mean `{close}`?"));
    }
    Err(Rejected::Line {
        text,
        diagnostic: Box::new(diagnostic),
    })
}

/// Loads and validates the config named by `--config`.
pub fn load_config(arg: &str) -> Result<Config, Rejected> {
    let source = config_source(arg)?;
    sim::load_config(&source.text, &source.name).map_err(|error| Rejected::Load { error, source })
}

/// Reads and loads a kernel: a single-type program, or a mixed kernel's parts.
pub fn load_kernel(
    path: &Path,
    config: &Config,
    params: &[(String, i64)],
    blocks: Option<u32>,
) -> Result<(sim::Kernel, Source), Rejected> {
    let source = read(path, "program")?;
    match sim::load::load_kernel(&source.text, &source.name, config, params, blocks) {
        Ok(k) => Ok((k, source)),
        Err(error) => Err(Rejected::Load { error, source }),
    }
}

/// Prints every problem of a rejected input (a summary line, then each problem once: its
/// message, where it is with a source snippet, and its hint) and returns exit code 2.
pub fn report_load_error(e: &LoadError, sources: &[&Source]) -> Exit {
    let errors = e
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let mut files: Vec<&str> = Vec::new();
    for d in &e.diagnostics {
        if !files.contains(&d.file.as_str()) {
            files.push(&d.file);
        }
    }
    let n = e.diagnostics.len();
    err_line!(
        "error: {} rejected: {n} problem{}{}",
        if files.is_empty() {
            "input".to_string()
        } else {
            files.join(", ")
        },
        if n == 1 { "" } else { "s" },
        if errors < n {
            format!(" ({errors} error{})", if errors == 1 { "" } else { "s" })
        } else {
            String::new()
        }
    );
    for d in &e.diagnostics {
        let src = sources.iter().find(|s| s.name == d.file).copied();
        err_text!("\n{}", render(d, src));
    }
    Exit(2)
}

/// Lines longer than this are not shown in a snippet (a minified or generated file): the
/// location and the message say where.
const MAX_SNIPPET_LINE: usize = 400;

/// One diagnostic, once: miette's report of its message with a snippet of the source at its
/// location (labelled with the YAML path) and its hint. Without a known location or source
/// line, the message starts with `file:line:column: path:` instead.
///
/// Every piece of input text it shows (the source lines of the snippet, comments included, the
/// message, the path, the hint) goes through [`sim::text::shown`] first: a control or
/// bidirectional character in the input is drawn as `\u{1b}`, not sent to the terminal.
pub fn render(d: &Diagnostic, src: Option<&Source>) -> String {
    let severity = match d.severity {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
    };
    let span = src.and_then(|s| {
        let (line, column) = (d.line?, d.column.unwrap_or(1));
        let (start, text) = line_text(&s.text, line)?;
        if text.chars().count() > MAX_SNIPPET_LINE {
            return None;
        }
        let offset = byte_offset(&s.text, line, column)?;
        debug_assert!(offset >= start);
        Some((s, offset, token_len(&s.text[offset..])))
    });
    let shown = |t: &str| sim::text::shown(t).into_owned();
    let message = match span {
        Some(_) => shown(&d.message),
        None if d.path.is_empty() => shown(&format!("{}: {}", d.location(), d.message)),
        None => shown(&format!("{}: {}: {}", d.location(), d.path, d.message)),
    };
    let mut md = MietteDiagnostic::new(message).with_severity(severity);
    if let Some(h) = &d.hint {
        md = md.with_help(shown(h));
    }
    let report = match span {
        Some((s, offset, len)) => {
            let label = if d.path.is_empty() {
                "here".to_string()
            } else {
                shown(&d.path)
            };
            // the snippet is drawn from the escaped text; the span moves with it
            let (text, start, end) = escaped_span(&s.text, offset, offset + len);
            md = md.with_label(LabeledSpan::at(start..end, label));
            let source = Snippet {
                text,
                column: d.column.unwrap_or(1).max(1) as usize - 1,
            };
            miette::Report::new(md).with_source_code(NamedSource::new(shown(&s.name), source))
        }
        None => miette::Report::new(md),
    };
    let theme = if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    if handler.render_report(&mut out, report.as_ref()).is_err() || out.is_empty() {
        // miette could not draw it: the plain form still says everything
        out = format!("{}\n", shown(&d.to_string()));
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The source text a snippet is drawn from (escaped), which tells miette the column of the
/// problem as the loader counts it: in characters of the input. miette would count bytes of
/// the text it is given, which differ after a non-ASCII or an escaped character.
struct Snippet {
    text: String,
    /// 0-based, in characters of the input line.
    column: usize,
}

impl miette::SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let read = self.text.read_span(span, before, after)?;
        if before > 0 || after > 0 {
            return Ok(read);
        }
        // without context lines: the read whose line and column head the report
        Ok(Box::new(miette::MietteSpanContents::new(
            read.data(),
            *read.span(),
            read.line(),
            self.column,
            read.line_count(),
        )))
    }
}

/// `text` through [`sim::text::shown`], with the byte range `[start, end)` of `text` moved to
/// where the same characters are in the result. Only when a character is escaped does the
/// text change (and get copied).
fn escaped_span(text: &str, start: usize, end: usize) -> (String, usize, usize) {
    if !text.chars().any(sim::text::is_hidden) {
        return (text.to_string(), start, end);
    }
    // the escaped length of what precedes `at` (a CR cut from its LF would be counted escaped)
    let moved = |at: usize| {
        let cut_crlf = text[..at].ends_with('\r') && text[at..].starts_with('\n');
        sim::text::shown(&text[..at]).len() - if cut_crlf { "\\u{d}".len() - 1 } else { 0 }
    };
    (
        sim::text::shown(text).into_owned(),
        moved(start),
        moved(end),
    )
}

/// The byte offset where 1-based `line` starts, and its text.
fn line_text(text: &str, line: u32) -> Option<(usize, &str)> {
    let start = if line <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(line as usize - 2)
            .map(|(i, _)| i + 1)?
    };
    let rest = &text[start..];
    Some((start, &rest[..rest.find('\n').unwrap_or(rest.len())]))
}

/// Fills the line and column of a diagnostic raised after loading (a run error), whose path is
/// in the logical form diagnostics use (`body[0].for.body[2]`), the way the loader locates its own.
pub fn locate(text: &str, d: &mut Diagnostic) {
    sim::load::locate(text, std::slice::from_mut(d));
}

/// The byte offset of 1-based `line` and `column` (in characters) in `text`.
pub fn byte_offset(text: &str, line: u32, column: u32) -> Option<usize> {
    let (line_start, line_text) = line_text(text, line)?;
    let col = column.max(1) as usize - 1;
    let within = line_text
        .char_indices()
        .nth(col)
        .map_or(line_text.len(), |(i, _)| i);
    Some(line_start + within)
}

/// The length of the YAML token at the start of `s`: a quoted string, or a plain scalar up to
/// the next `,`, `]`, `}`, `#` or the end of the line; at least one byte where possible.
fn token_len(s: &str) -> usize {
    let line = &s[..s.find('\n').unwrap_or(s.len())];
    let len = if let Some(q @ ('"' | '\'')) = line.chars().next() {
        line[1..].find(q).map_or(line.len(), |i| i + 2)
    } else if line.starts_with(['{', '[']) {
        // a flow collection: up to its matching bracket on this line
        let mut depth = 0usize;
        let mut end = 1;
        for (i, c) in line.char_indices() {
            match c {
                '{' | '[' => depth += 1,
                '}' | ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth == 0 {
                end = i + 1;
                break;
            }
        }
        end
    } else {
        let end = line.find([',', ']', '}', '#']).unwrap_or(line.len());
        line[..end].trim_end().len()
    };
    if len == 0 {
        line.chars().next().map_or(0, char::len_utf8)
    } else {
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_lines_and_columns() {
        let text = "kernel: x\nbody:\n  - vadd: {ins: [a, b], out: zbb}\n";
        assert_eq!(byte_offset(text, 1, 9), Some(8));
        let o = byte_offset(text, 3, 30).unwrap();
        assert_eq!(&text[o..o + token_len(&text[o..])], "zbb");
        assert_eq!(byte_offset(text, 9, 1), None);
    }

    #[test]
    fn tokens() {
        assert_eq!(token_len("\"x[t]\", dst: xb }"), 6);
        assert_eq!(token_len("zb   # c\n"), 2);
        assert_eq!(token_len("\n"), 0);
        assert_eq!(token_len(", x"), 1);
        assert_eq!(token_len("{ ins: [zb], out: zb }   # c"), 22);
        assert_eq!(token_len("[a, [b]] x"), 8);
        assert_eq!(token_len("{ open"), 1);
    }

    #[test]
    fn a_diagnostic_on_a_very_long_line_renders_without_a_snippet() {
        let text = format!("kernel: x\nbody: [{}{{nosuchop: 1}}]\n", " ".repeat(70_000));
        let src = Source {
            name: "wide.yaml".into(),
            text,
        };
        let mut d = Diagnostic::error("wide.yaml", "body[0].nosuchop", "unknown op \"nosuchop\"");
        d.line = Some(2);
        d.column = Some(70_008);
        let out = render(&d, Some(&src));
        assert!(
            out.contains("wide.yaml:2:70008: body[0].nosuchop: unknown op \"nosuchop\""),
            "{out}"
        );
        assert_eq!(out.matches("unknown op").count(), 1);
    }

    #[test]
    fn render_says_each_thing_once_with_a_snippet() {
        let src = Source {
            name: "p.yaml".into(),
            text: "kernel: x\nbody:\n  - vadd: {ins: [a, b], out: zbb}\n".into(),
        };
        let mut d = Diagnostic::error("p.yaml", "body[0].vadd.out", "unknown buffer \"zbb\"")
            .with_hint("did you mean \"zb\"?");
        d.line = Some(3);
        d.column = Some(30);
        let text = render(&d, Some(&src));
        assert_eq!(text.matches("unknown buffer").count(), 1, "{text}");
        assert_eq!(text.matches("did you mean").count(), 1, "{text}");
        assert!(text.contains("[p.yaml:3:30]"), "{text}");
        assert!(text.contains("body[0].vadd.out"), "{text}");
    }

    #[test]
    fn render_shows_input_text_escaped_at_the_loaders_place() {
        // an ESC in a comment on the line above, and a bidi override and an ESC before the problem on its
        // own line: column 9 counts characters of the input (`  - ` 4, `a`, U+202E, `b`, ESC,
        // then `z` at 9)
        let src = Source {
            name: "p.yaml".into(),
            text: "body:\r\n# \u{1b}[31mred\r\n  - a\u{202e}b\u{1b}zz: {}\r\n".into(),
        };
        let mut d = Diagnostic::error("p.yaml", "body[0].a\u{202e}b\u{1b}zz", "unknown op");
        d.line = Some(3);
        d.column = Some(9);
        let text = render(&d, Some(&src));
        assert!(text.contains("[p.yaml:3:9]"), "{text}");
        assert!(!text.contains(['\u{1b}', '\u{202e}']), "{text}");
        assert!(text.contains("# \\u{1b}[31mred"), "{text}");
        assert!(text.contains("a\\u{202e}b\\u{1b}zz: {}"), "{text}");
        // the CRLF line ends stay line ends, not escapes
        assert!(!text.contains("\\u{d}"), "{text}");
        // the label under the escaped text starts under `zz`: the span moved with the escapes
        let line = text.lines().find(|l| l.contains("zz: {}")).unwrap();
        let under = text
            .lines()
            .skip_while(|l| !l.contains("zz: {}"))
            .nth(1)
            .unwrap();
        let at = |s: &str, c: char| s.chars().position(|x| x == c).unwrap();
        assert_eq!(at(under, '─').min(at(under, '┬')), at(line, 'z'), "{text}");
    }
}
