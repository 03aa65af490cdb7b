//! The tokens of MLIR's textual form, lexed on demand so the type parser can re-lex a dimension
//! list (`16x16xf16` is one identifier-like run to a naive lexer) from the middle of a token.
//!
//! Positions are tracked while advancing (line, column in characters, byte offset), so finding
//! a token's place never rescans the line: reading stays linear on a single 10 MB line.

use super::ast::Pos;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Tok {
    /// `%name`, `%name#2`, `%c-1_i64` (the text includes the `%`).
    Value,
    /// `^bb0`.
    Caret,
    /// `@sym`, `@"quoted"`.
    At,
    /// `#alias`, `#hivm.pipe` (the `<...>` body is separate tokens).
    Hash,
    /// `!dialect.type`.
    Bang,
    /// A bare or dotted identifier: `func.func`, `ins`, `f16`, `x16xf16`.
    Ident,
    /// `12`, `0x1F` (no sign: `-` is punctuation).
    Int,
    /// `1.5`, `2.0e-3`.
    Float,
    /// `"text"` with its quotes and escapes as written.
    Str,
    Arrow,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Less,
    Greater,
    Comma,
    Colon,
    Equal,
    Question,
    Star,
    Plus,
    Minus,
    Slash,
    Pipe,
    Eof,
    /// A lexing error; its text says what (see [`Lexer::error`]).
    Error,
}

#[derive(Clone, Copy, Debug)]
pub struct Token {
    pub kind: Tok,
    pub start: Pos,
    pub end: u32,
}

/// What went wrong lexing a token (kept out of [`Token`] to keep it small).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LexError {
    UnterminatedString,
    BadEscape,
    UnexpectedChar,
    EmptyName,
}

pub struct Lexer<'a> {
    pub src: &'a str,
    bytes: &'a [u8],
    /// Where lexing stops (the end of the chunk).
    limit: usize,
    /// The current position (the next unread character).
    at: Pos,
    pub error: Option<LexError>,
}

/// Characters that may continue a `%name`, `^label`, `@sym`, `#alias`: MLIR's suffix-id set.
fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

impl<'a> Lexer<'a> {
    /// A lexer over `src[start.offset..limit]`; `start` gives the line and column there.
    pub fn new(src: &'a str, start: Pos, limit: usize) -> Lexer<'a> {
        Lexer {
            src,
            bytes: src.as_bytes(),
            limit: limit.min(src.len()),
            at: start,
            error: None,
        }
    }

    pub fn pos(&self) -> Pos {
        self.at
    }

    /// Go back (or forward) to a position got from [`Lexer::pos`] or a token's start.
    pub fn reset(&mut self, to: Pos) {
        self.at = to;
    }

    fn peek_byte(&self) -> Option<u8> {
        let o = self.at.offset as usize;
        (o < self.limit).then(|| self.bytes[o])
    }

    fn byte_at(&self, rel: usize) -> Option<u8> {
        let o = self.at.offset as usize + rel;
        (o < self.limit).then(|| self.bytes[o])
    }

    /// Advance over one character (a whole UTF-8 sequence), keeping line and column.
    fn bump(&mut self) {
        let o = self.at.offset as usize;
        let Some(&b) = self.bytes.get(o) else { return };
        let len = if b < 0x80 {
            1
        } else if b >= 0xF0 {
            4
        } else if b >= 0xE0 {
            3
        } else {
            2
        };
        let len = len.min(self.limit - o).max(1);
        self.at.offset += len as u32;
        if b == b'\n' {
            self.at.line += 1;
            self.at.column = 1;
        } else {
            self.at.column += 1;
        }
    }

    /// Advance over ASCII bytes known to contain no newline.
    fn bump_ascii(&mut self, n: usize) {
        self.at.offset += n as u32;
        self.at.column += n as u32;
    }

    fn skip_while(&mut self, f: impl Fn(u8) -> bool) {
        while let Some(b) = self.peek_byte() {
            if !f(b) {
                break;
            }
            self.bump_ascii(1);
        }
    }

    /// Skip spaces, newlines and `//` comments.
    pub fn skip_trivia(&mut self) {
        while let Some(b) = self.peek_byte() {
            if b == b'/' && self.byte_at(1) == Some(b'/') {
                while let Some(b) = self.peek_byte() {
                    if b == b'\n' {
                        break;
                    }
                    self.bump();
                }
            } else if b.is_ascii_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    /// The next non-space byte, without consuming anything but trivia.
    pub fn peek_raw(&mut self) -> Option<u8> {
        self.skip_trivia();
        self.peek_byte()
    }

    /// Consume `n` ASCII bytes (used by the dimension-list scanner).
    pub fn take_ascii(&mut self, n: usize) {
        self.bump_ascii(n);
    }

    /// Read a run of decimal digits at the current position (no trivia skipped).
    pub fn take_digits(&mut self) -> &'a str {
        let s = self.at.offset as usize;
        self.skip_while(|b| b.is_ascii_digit());
        &self.src[s..self.at.offset as usize]
    }

    pub fn byte(&self, rel: usize) -> Option<u8> {
        self.byte_at(rel)
    }

    pub fn next(&mut self) -> Token {
        self.skip_trivia();
        let start = self.at;
        let tok = |kind, lx: &Lexer| Token {
            kind,
            start,
            end: lx.at.offset,
        };
        let Some(b) = self.peek_byte() else {
            return tok(Tok::Eof, self);
        };
        let kind = match b {
            b'%' | b'^' | b'#' | b'!' => {
                self.bump_ascii(1);
                let kind = match b {
                    b'%' => Tok::Value,
                    b'^' => Tok::Caret,
                    b'#' => Tok::Hash,
                    _ => Tok::Bang,
                };
                let s = self.at.offset;
                if kind == Tok::Hash || kind == Tok::Bang {
                    self.skip_while(is_ident_char);
                } else {
                    self.skip_while(is_name_char);
                }
                if self.at.offset == s {
                    self.error = Some(LexError::EmptyName);
                    return tok(Tok::Error, self);
                }
                // `%r#1`: result 1 of the group `%r`.
                if kind == Tok::Value
                    && self.peek_byte() == Some(b'#')
                    && self.byte_at(1).is_some_and(|c| c.is_ascii_digit())
                {
                    self.bump_ascii(1);
                    self.skip_while(|c| c.is_ascii_digit());
                }
                kind
            }
            b'@' => {
                self.bump_ascii(1);
                if self.peek_byte() == Some(b'"') {
                    if let Err(e) = self.string() {
                        self.error = Some(e);
                        return tok(Tok::Error, self);
                    }
                } else {
                    let s = self.at.offset;
                    self.skip_while(is_name_char);
                    if self.at.offset == s {
                        self.error = Some(LexError::EmptyName);
                        return tok(Tok::Error, self);
                    }
                }
                Tok::At
            }
            b'"' => {
                if let Err(e) = self.string() {
                    self.error = Some(e);
                    return tok(Tok::Error, self);
                }
                Tok::Str
            }
            b'0'..=b'9' => self.number(),
            b if is_ident_start(b) => {
                self.skip_while(is_ident_char);
                Tok::Ident
            }
            b'-' if self.byte_at(1) == Some(b'>') => {
                self.bump_ascii(2);
                Tok::Arrow
            }
            _ => {
                let k = match b {
                    b'(' => Tok::LParen,
                    b')' => Tok::RParen,
                    b'[' => Tok::LBracket,
                    b']' => Tok::RBracket,
                    b'{' => Tok::LBrace,
                    b'}' => Tok::RBrace,
                    b'<' => Tok::Less,
                    b'>' => Tok::Greater,
                    b',' => Tok::Comma,
                    b':' => Tok::Colon,
                    b'=' => Tok::Equal,
                    b'?' => Tok::Question,
                    b'*' => Tok::Star,
                    b'+' => Tok::Plus,
                    b'-' => Tok::Minus,
                    b'/' => Tok::Slash,
                    b'|' => Tok::Pipe,
                    _ => {
                        self.bump();
                        self.error = Some(LexError::UnexpectedChar);
                        return tok(Tok::Error, self);
                    }
                };
                self.bump_ascii(1);
                k
            }
        };
        tok(kind, self)
    }

    fn number(&mut self) -> Tok {
        if self.peek_byte() == Some(b'0')
            && self.byte_at(1) == Some(b'x')
            && self.byte_at(2).is_some_and(|c| c.is_ascii_hexdigit())
        {
            self.bump_ascii(2);
            self.skip_while(|c| c.is_ascii_hexdigit());
            return Tok::Int;
        }
        self.skip_while(|c| c.is_ascii_digit());
        if self.peek_byte() == Some(b'.') {
            self.bump_ascii(1);
            self.skip_while(|c| c.is_ascii_digit());
            if matches!(self.peek_byte(), Some(b'e' | b'E')) {
                let sign = matches!(self.byte_at(1), Some(b'+' | b'-')) as usize;
                if self.byte_at(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                    self.bump_ascii(1 + sign);
                    self.skip_while(|c| c.is_ascii_digit());
                }
            }
            return Tok::Float;
        }
        Tok::Int
    }

    /// A `"..."` string at the current position; escapes `\"`, `\\`, `\n`, `\t` and `\XX` hex.
    fn string(&mut self) -> Result<(), LexError> {
        self.bump_ascii(1);
        loop {
            match self.peek_byte() {
                None | Some(b'\n') => return Err(LexError::UnterminatedString),
                Some(b'"') => {
                    self.bump_ascii(1);
                    return Ok(());
                }
                Some(b'\\') => match self.byte_at(1) {
                    Some(b'"' | b'\\' | b'n' | b't') => self.bump_ascii(2),
                    Some(a)
                        if a.is_ascii_hexdigit()
                            && self.byte_at(2).is_some_and(|c| c.is_ascii_hexdigit()) =>
                    {
                        self.bump_ascii(3)
                    }
                    _ => {
                        self.bump_ascii(1);
                        return Err(LexError::BadEscape);
                    }
                },
                Some(_) => self.bump(),
            }
        }
    }
}

/// The value of a string token's text (quotes removed, escapes decoded).
pub fn unescape(text: &str) -> String {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    let mut out = Vec::with_capacity(inner.len());
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                _ if i + 2 < b.len() => {
                    let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                    match u8::from_str_radix(hex, 16) {
                        Ok(v) => {
                            out.push(v);
                            i += 3;
                            continue;
                        }
                        Err(_) => out.push(b[i + 1]),
                    }
                }
                c => out.push(c),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How a token kind reads in an error message.
pub fn describe(kind: Tok, text: &str) -> String {
    match kind {
        Tok::Eof => "end of input".to_string(),
        Tok::Error => format!("`{text}`"),
        _ => {
            let t: String = text.chars().take(40).collect();
            format!("`{t}`")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Tok, &str)> {
        let mut lx = Lexer::new(
            src,
            Pos {
                line: 1,
                column: 1,
                offset: 0,
            },
            src.len(),
        );
        let mut out = Vec::new();
        loop {
            let t = lx.next();
            if t.kind == Tok::Eof {
                break;
            }
            out.push((t.kind, &src[t.start.offset as usize..t.end as usize]));
            if t.kind == Tok::Error {
                break;
            }
        }
        out
    }

    #[test]
    fn lexes_every_token_family() {
        use Tok::*;
        assert_eq!(
            kinds(
                "%c-1_i64 %r#1 %a.b$c ^bb0 @f @\"q x\" #map #hivm.pipe !hivm.t func.func x16xf16"
            ),
            vec![
                (Value, "%c-1_i64"),
                (Value, "%r#1"),
                (Value, "%a.b$c"),
                (Caret, "^bb0"),
                (At, "@f"),
                (At, "@\"q x\""),
                (Hash, "#map"),
                (Hash, "#hivm.pipe"),
                (Bang, "!hivm.t"),
                (Ident, "func.func"),
                (Ident, "x16xf16"),
            ]
        );
        assert_eq!(
            kinds("12 0x1F 1.5 2.0e-3 \"a\\\"b\" -> - ( ) [ ] { } < > , : = ? * + / |"),
            vec![
                (Int, "12"),
                (Int, "0x1F"),
                (Float, "1.5"),
                (Float, "2.0e-3"),
                (Str, "\"a\\\"b\""),
                (Arrow, "->"),
                (Minus, "-"),
                (LParen, "("),
                (RParen, ")"),
                (LBracket, "["),
                (RBracket, "]"),
                (LBrace, "{"),
                (RBrace, "}"),
                (Less, "<"),
                (Greater, ">"),
                (Comma, ","),
                (Colon, ":"),
                (Equal, "="),
                (Question, "?"),
                (Star, "*"),
                (Plus, "+"),
                (Slash, "/"),
                (Pipe, "|"),
            ]
        );
    }

    #[test]
    fn comments_are_skipped_and_positions_count_characters() {
        let src = "// CHECK: x\n  é %a // tail\n%b";
        let mut lx = Lexer::new(
            src,
            Pos {
                line: 1,
                column: 1,
                offset: 0,
            },
            src.len(),
        );
        assert_eq!(lx.next().kind, Tok::Error); // `é` is not a token
        let a = lx.next();
        assert_eq!((a.kind, a.start.line, a.start.column), (Tok::Value, 2, 5));
        let b = lx.next();
        assert_eq!((b.start.line, b.start.column, b.start.offset), (3, 1, 28));
        assert_eq!(lx.next().kind, Tok::Eof);
    }

    #[test]
    fn strings_unescape_and_unterminated_is_an_error() {
        assert_eq!(unescape("\"a\\\"b\\n\\41\""), "a\"b\nA");
        let src = "\"abc\n";
        let mut lx = Lexer::new(
            src,
            Pos {
                line: 1,
                column: 1,
                offset: 0,
            },
            src.len(),
        );
        assert_eq!(lx.next().kind, Tok::Error);
        assert_eq!(lx.error, Some(LexError::UnterminatedString));
    }
}
