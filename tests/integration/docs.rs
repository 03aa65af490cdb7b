//! The docs say what the tool prints (docs/decisions.md, "Keeping docs true"). Every output
//! quoted in README.md and docs/*.md follows a marker comment naming the command that prints it;
//! this module finds every marker, runs the command through the built binary and compares the
//! quote with what it printed, so a doc cannot drift from the tool unnoticed. The markers:
//!
//! - `<!-- output: npusim ARGS[; OPTION]... -->`: the next fenced block is what the command
//!   prints. Options: `exit N` (default 0), `stdout` or `stderr` (default both, interleaved as a
//!   terminal shows them), `excerpt` (the block is a run of lines anywhere in the output), `at
//!   POINTER` (a JSON block: the value at that JSON pointer), `in SETUP` (run in the directory a
//!   named setup prepared, `Runner::setup`), `page FILE` (the text of the HTML page the command writes
//!   to FILE, tags removed).
//! - `<!-- output[; OPTION]... -->`: the next block is a transcript: each `$ npusim ...` line is a
//!   command, the lines after it what it prints; the options apply to every command.
//! - `<!-- problems[: npusim ARGS][; in DIR][; with FILE ARGS...]... -->`: every line of the next
//!   block, or the example (the last cell, in backticks) of every row of the next table, is one
//!   problem, `FILE:LINE:COLUMN: SEVERITY: PATH: MESSAGE (hint: HELP)`, one of those in the
//!   `--format json` document of the command (default `npusim check {} --format json`, `{}`
//!   standing for FILE, `with` adding arguments for one file), run in DIR (default the root).
//! - `<!-- file: PATH[; excerpt] -->`: the next block is the text of the repository's file PATH
//!   (for YAML, comments aside: a quoted input may explain itself).
//!
//! Text is compared line by line, trailing spaces aside: a line `...` stands for any number of
//! lines, `...` within a line for any text. A `json` block is compared as JSON: `...` stands for
//! any value, any run of array elements, or any other members of an object (key order counts),
//! and a block of members (`"key": value, ...`) is an excerpt of the document's object.
//!
//! Commands run from the repository root; an output file (`-o`, `--html`, `--trace`) goes to the
//! block's scratch directory, and that directory's path is removed from the output, so nothing
//! depends on where the clone lives. On a mismatch the failure shows the command, the quote and
//! the fresh output; `NPUSIM_UPDATE_DOCS=1` writes the fresh output into every text block that
//! has no `...` (review the diff). Figures the prose cites are computed by
//! `figures_in_the_prose_are_what_the_tool_computes`.

use crate::{root, scratch};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Options whose value is a file the command writes: redirected into the scratch directory.
const OUTPUT_OPTIONS: [&str; 4] = ["-o", "--output", "--html", "--trace"];

// ---------------------------------------------------------------------------------------------
// Finding markers and blocks

/// A markdown file of the docs: its path from the root and its lines.
struct Doc {
    path: String,
    lines: Vec<String>,
}

/// Every doc the markers may be in: README.md and docs/*.md, in name order.
fn docs() -> Vec<Doc> {
    let root = root();
    let mut paths = vec!["README.md".to_string()];
    let mut more: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    more.sort();
    paths.extend(more);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).unwrap();
            Doc {
                path,
                lines: text.lines().map(str::to_string).collect(),
            }
        })
        .collect()
}

/// A fenced code block: its info string, indentation, and body (indentation removed).
#[derive(Clone, Debug)]
struct Fence {
    info: String,
    indent: usize,
    /// 0-based index of the opening fence line.
    open: usize,
    body: Vec<String>,
}

/// Every fenced block of a doc.
fn fences(lines: &[String]) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            let indent = line.len() - trimmed.len();
            let mut body = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim() != "```" {
                let l = &lines[j];
                let strip = l.len() - l.trim_start().len();
                body.push(l[strip.min(indent)..].to_string());
                j += 1;
            }
            out.push(Fence {
                info: info.trim().to_string(),
                indent,
                open: i,
                body,
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Stream {
    Both,
    Stdout,
    Stderr,
}

#[derive(Clone, Debug)]
struct Opts {
    exit: i32,
    stream: Stream,
    excerpt: bool,
    at: Option<String>,
    setup: Option<String>,
    page: Option<String>,
}

#[derive(Clone, Debug)]
enum Marker {
    /// `command` is `None` for a transcript.
    Output {
        command: Option<Vec<String>>,
        opts: Opts,
    },
    Problems {
        template: Vec<String>,
        dir: String,
        with: Vec<(String, Vec<String>)>,
    },
    File {
        path: String,
        excerpt: bool,
    },
}

/// What a marker is about: a fenced block, or the examples of a table's rows.
#[derive(Clone, Debug)]
enum Target {
    Fence(Fence),
    /// (0-based line, example text) per row.
    Table(Vec<(usize, String)>),
}

/// A marker and what it is about, in a doc.
#[derive(Clone, Debug)]
struct Marked {
    doc: String,
    /// 0-based line of the marker.
    line: usize,
    marker: Marker,
    target: Target,
}

impl Marked {
    fn place(&self) -> String {
        format!("{}:{}", self.doc, self.line + 1)
    }
}

/// Splits a command into words: whitespace apart, '…' and "…" quoted, `#` starting a comment.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '#' if !in_word => break,
            '\'' | '"' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                    cur.push(d);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// The marker in an HTML comment line, if it is one of ours.
fn parse_marker(line: &str) -> Option<Result<Marker, String>> {
    let inner = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim();
    let mut parts = inner.split(';').map(str::trim);
    let head = parts.next()?;
    let (kind, arg) = match head.split_once(':') {
        Some((k, a)) => (k.trim(), Some(a.trim())),
        None => (head, None),
    };
    if !["output", "problems", "file"].contains(&kind) {
        return None;
    }
    let rest: Vec<&str> = parts.collect();
    Some(marker_of(kind, arg, &rest))
}

fn marker_of(kind: &str, arg: Option<&str>, options: &[&str]) -> Result<Marker, String> {
    let command = |a: &str| {
        let w = words(a);
        if w.first().map(String::as_str) != Some("npusim") {
            return Err(format!("the command `{a}` does not start with npusim"));
        }
        Ok(w)
    };
    match kind {
        "output" => {
            let mut opts = Opts {
                exit: 0,
                stream: Stream::Both,
                excerpt: false,
                at: None,
                setup: None,
                page: None,
            };
            for o in options {
                let (name, value) = o.split_once(' ').unwrap_or((o, ""));
                let value = value.trim();
                match name {
                    "exit" => opts.exit = value.parse().map_err(|_| format!("exit `{value}`"))?,
                    "stdout" => opts.stream = Stream::Stdout,
                    "stderr" => opts.stream = Stream::Stderr,
                    "excerpt" => opts.excerpt = true,
                    "at" => opts.at = Some(value.to_string()),
                    "in" => opts.setup = Some(value.to_string()),
                    "page" => opts.page = Some(value.to_string()),
                    _ => return Err(format!("unknown option `{o}`")),
                }
            }
            let command = arg.map(command).transpose()?;
            Ok(Marker::Output { command, opts })
        }
        "problems" => {
            let template = match arg {
                Some(a) => command(a)?,
                None => words("npusim check {} --format json"),
            };
            let mut dir = String::new();
            let mut with = Vec::new();
            for o in options {
                match o.split_once(' ') {
                    Some(("in", d)) => dir = d.trim().to_string(),
                    Some(("with", rest)) => {
                        let mut w = words(rest);
                        if w.is_empty() {
                            return Err(format!("`{o}` names no file"));
                        }
                        let file = w.remove(0);
                        with.push((file, w));
                    }
                    _ => return Err(format!("unknown option `{o}`")),
                }
            }
            Ok(Marker::Problems {
                template,
                dir,
                with,
            })
        }
        _ => {
            let path = arg.ok_or("file: names no path")?.to_string();
            let excerpt = match options {
                [] => false,
                ["excerpt"] => true,
                _ => return Err(format!("unknown options {options:?}")),
            };
            Ok(Marker::File { path, excerpt })
        }
    }
}

/// The examples of the table starting at line `start`: the last cell of each row after the
/// header and its separator, without its backticks.
fn table_examples(lines: &[String], start: usize) -> Result<Vec<(usize, String)>, String> {
    let mut out = Vec::new();
    let mut i = start + 2;
    while i < lines.len() && lines[i].trim_start().starts_with('|') {
        let row = lines[i].trim().replace("\\|", "\u{0}");
        let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
        let cell = cells.last().unwrap().trim().replace('\u{0}', "|");
        let example = cell
            .strip_prefix('`')
            .and_then(|c| c.strip_suffix('`'))
            .ok_or_else(|| format!("line {}: the example is not in backticks", i + 1))?;
        out.push((i, example.to_string()));
        i += 1;
    }
    Ok(out)
}

/// Every marker of a doc with what it is about, and the problems of those that are not well
/// formed or not followed by a block (or a table, for `problems`).
fn marked(doc: &Doc) -> (Vec<Marked>, Vec<String>) {
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    for (i, line) in doc.lines.iter().enumerate() {
        if let Some(m) = parse_marker(line) {
            let m = m.map_err(|e| format!("bad marker: {e}"));
            match m.and_then(|marker| marked_at(doc, i, marker)) {
                Ok(m) => out.push(m),
                Err(e) => errors.push(format!("{}:{}: {e}", doc.path, i + 1)),
            }
        }
    }
    (out, errors)
}

/// The marker on line `i` with what follows it.
fn marked_at(doc: &Doc, i: usize, marker: Marker) -> Result<Marked, String> {
    let next = (i + 1..doc.lines.len()).find(|&j| !doc.lines[j].trim().is_empty());
    let target = match next {
        Some(j) if doc.lines[j].trim_start().starts_with("```") => Target::Fence(
            fences(&doc.lines)
                .into_iter()
                .find(|f| f.open == j)
                .unwrap(),
        ),
        Some(j)
            if doc.lines[j].trim_start().starts_with('|')
                && matches!(marker, Marker::Problems { .. }) =>
        {
            Target::Table(table_examples(&doc.lines, j)?)
        }
        _ => return Err("the marker is not followed by a block".into()),
    };
    Ok(Marked {
        doc: doc.path.clone(),
        line: i,
        marker,
        target,
    })
}

// ---------------------------------------------------------------------------------------------
// Matching

/// Whether `text` matches `pattern`, in which `...` stands for any text.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the sequence `pats` matches `vals`, a `None` pattern standing for any run of values
/// (dynamic programming: quadratic, never exponential).
fn seq<P, V>(pats: &[Option<P>], vals: &[V], m: &impl Fn(&P, &V) -> bool) -> bool {
    let (np, nv) = (pats.len(), vals.len());
    // ok[i][j]: pats[i..] matches vals[j..]
    let mut ok = vec![vec![false; nv + 1]; np + 1];
    ok[np][nv] = true;
    for i in (0..np).rev() {
        for j in (0..=nv).rev() {
            ok[i][j] = match &pats[i] {
                None => ok[i + 1][j] || (j < nv && ok[i][j + 1]),
                Some(p) => j < nv && ok[i + 1][j + 1] && m(p, &vals[j]),
            };
        }
    }
    ok[0][0]
}

/// Whether the quoted lines match the output's, `...` lines standing for any run of lines.
fn lines_match(quote: &[String], output: &str, excerpt: bool) -> bool {
    let mut pats: Vec<Option<&str>> = quote
        .iter()
        .map(|l| (l.trim() != "...").then(|| l.trim_end()))
        .collect();
    if excerpt {
        pats.insert(0, None);
        pats.push(None);
    }
    let out: Vec<&str> = output.lines().map(str::trim_end).collect();
    seq(&pats, &out, &|p: &&str, v: &&str| glob(p, v))
}

/// A quoted JSON value with elisions.
#[derive(Debug)]
enum Pat {
    Any,
    Str(String),
    Scalar(Value),
    /// `None`: any run of elements.
    Arr(Vec<Option<Pat>>),
    /// `None`: any other members.
    Obj(Vec<Option<(String, Pat)>>),
}

#[derive(Debug, PartialEq)]
enum Tok {
    Punct(char),
    Str(String),
    Scalar(Value),
    Ellipsis,
}

fn tokens(text: &str) -> Result<Vec<Tok>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'{' | b'}' | b'[' | b']' | b':' | b',' => {
                out.push(Tok::Punct(b[i] as char));
                i += 1;
            }
            b'.' if text[i..].starts_with("...") => {
                out.push(Tok::Ellipsis);
                i += 3;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let raw = text.get(start..=i).ok_or("an unterminated string")?;
                let s: String = serde_json::from_str(raw).map_err(|e| format!("{raw}: {e}"))?;
                out.push(Tok::Str(s));
                i += 1;
            }
            _ => {
                let start = i;
                while i < b.len() && !b"{}[]:, \n\t\r".contains(&b[i]) {
                    i += 1;
                }
                let raw = &text[start..i];
                let v: Value = serde_json::from_str(raw).map_err(|e| format!("`{raw}`: {e}"))?;
                out.push(Tok::Scalar(v));
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn next(&mut self) -> Result<&Tok, String> {
        let t = self.toks.get(self.at).ok_or("the quote ends too early")?;
        self.at += 1;
        Ok(t)
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        match self.next()? {
            Tok::Punct(p) if *p == c => Ok(()),
            t => Err(format!("expected `{c}`, found {t:?}")),
        }
    }

    fn value(&mut self) -> Result<Pat, String> {
        Ok(match self.next()? {
            Tok::Ellipsis => Pat::Any,
            Tok::Str(s) => Pat::Str(s.clone()),
            Tok::Scalar(v) => Pat::Scalar(v.clone()),
            Tok::Punct('[') => {
                let mut items = Vec::new();
                while self.peek() != Some(&Tok::Punct(']')) {
                    if self.peek() == Some(&Tok::Ellipsis) {
                        self.at += 1;
                        items.push(None);
                    } else {
                        items.push(Some(self.value()?));
                    }
                    if self.peek() == Some(&Tok::Punct(',')) {
                        self.at += 1;
                    }
                }
                self.at += 1;
                Pat::Arr(items)
            }
            Tok::Punct('{') => {
                let members = self.members(Some('}'))?;
                self.at += 1;
                Pat::Obj(members)
            }
            t => return Err(format!("unexpected {t:?}")),
        })
    }

    /// Members up to `end` (not consumed), or to the end of the quote.
    fn members(&mut self, end: Option<char>) -> Result<Vec<Option<(String, Pat)>>, String> {
        let mut members = Vec::new();
        loop {
            match self.peek() {
                None if end.is_none() => break,
                Some(Tok::Punct(c)) if Some(*c) == end => break,
                Some(Tok::Ellipsis) => {
                    self.at += 1;
                    members.push(None);
                }
                _ => {
                    let key = match self.next()? {
                        Tok::Str(s) => s.clone(),
                        t => return Err(format!("expected a key, found {t:?}")),
                    };
                    self.expect(':')?;
                    members.push(Some((key, self.value()?)));
                }
            }
            if self.peek() == Some(&Tok::Punct(',')) {
                self.at += 1;
            }
        }
        Ok(members)
    }
}

/// Parses a quoted JSON block: one value, or members of an object (an excerpt of it).
fn json_pattern(text: &str) -> Result<Pat, String> {
    let toks = tokens(text)?;
    let fragment =
        matches!(toks.first(), Some(Tok::Str(_))) && toks.get(1) == Some(&Tok::Punct(':'));
    let mut p = Parser { toks, at: 0 };
    let pat = if fragment {
        let mut members = vec![None];
        members.extend(p.members(None)?);
        members.push(None);
        Pat::Obj(members)
    } else {
        p.value()?
    };
    if p.at != p.toks.len() {
        return Err(format!("unexpected {:?} after the value", p.toks[p.at]));
    }
    Ok(pat)
}

fn json_match(p: &Pat, v: &Value) -> bool {
    match (p, v) {
        (Pat::Any, _) => true,
        (Pat::Str(g), Value::String(s)) => glob(g, s),
        (Pat::Scalar(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Pat::Scalar(a), b) => a == b,
        (Pat::Arr(items), Value::Array(vals)) => seq(items, vals, &json_match),
        (Pat::Obj(members), Value::Object(map)) => {
            let entries: Vec<(&String, &Value)> = map.iter().collect();
            seq(
                members,
                &entries,
                &|(k, p): &(String, Pat), (key, val): &(&String, &Value)| {
                    k == *key && json_match(p, val)
                },
            )
        }
        _ => false,
    }
}

/// The parts of `v` a pattern names, for a failure message: a fragment's members, not the
/// whole document.
fn json_shown(p: &Pat, v: &Value) -> Value {
    match (p, v) {
        (Pat::Obj(members), Value::Object(map)) if matches!(members.first(), Some(None)) => {
            let mut out = serde_json::Map::new();
            for (k, _) in members.iter().flatten() {
                if let Some(x) = map.get(k) {
                    out.insert(k.clone(), x.clone());
                }
            }
            Value::Object(out)
        }
        _ => v.clone(),
    }
}

/// One problem of a check document on one line, as docs/programs.md writes them.
fn problem_line(p: &Value) -> String {
    let s = |k: &str| p[k].as_str().unwrap_or("").to_string();
    let mut at = s("file");
    if let Some(l) = p["line"].as_u64() {
        at.push_str(&format!(":{l}"));
        if let Some(c) = p["column"].as_u64() {
            at.push_str(&format!(":{c}"));
        }
    }
    let mut line = format!("{at}: {}: ", s("severity"));
    if !s("path").is_empty() {
        line.push_str(&format!("{}: ", s("path")));
    }
    line.push_str(&s("message"));
    if let Some(h) = p["help"].as_str() {
        line.push_str(&format!(" (hint: {h})"));
    }
    line
}

/// The lines of a YAML text without its comments (a `#` at the start or after a space, outside
/// quotes) and without the lines left empty.
fn without_comments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut quote = None;
        let mut end = line.len();
        let mut prev = ' ';
        for (i, c) in line.char_indices() {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '#') if prev == ' ' => {
                    end = i;
                    break;
                }
                _ => {}
            }
            prev = c;
        }
        let kept = line[..end].trim_end();
        if !kept.is_empty() {
            out.push(kept.to_string());
        }
    }
    out
}

/// The text of an HTML page: tags removed, entities decoded, each paragraph on a line.
fn page_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let Some(gt) = rest[lt..].find('>') else {
            break;
        };
        let tag = &rest[lt + 1..lt + gt];
        if ["p", "/p", "br", "li", "h1", "h2", "h3", "tr", "div"]
            .iter()
            .any(|t| tag == *t || tag.starts_with(&format!("{t} ")))
        {
            out.push('\n');
        }
        rest = &rest[lt + gt + 1..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

// ---------------------------------------------------------------------------------------------
// Running commands

struct Ran {
    code: Option<i32>,
    text: String,
    dir: PathBuf,
}

/// Runs the marked commands; one per test run.
struct Runner {
    root: PathBuf,
    base: PathBuf,
    count: usize,
    setups: HashMap<String, PathBuf>,
}

impl Runner {
    fn new(name: &str) -> Runner {
        Runner {
            root: root(),
            base: scratch(name),
            count: 0,
            setups: HashMap::new(),
        }
    }

    fn fresh_dir(&mut self) -> PathBuf {
        self.count += 1;
        let d = self.base.join(format!("{}", self.count));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Runs `npusim ARGS` (the first word is `npusim`) in `cwd`, or in the root with output
    /// files redirected to a fresh directory.
    fn run(&mut self, words: &[String], cwd: Option<&Path>, stream: &Stream) -> Ran {
        let dir = self.fresh_dir();
        let mut args: Vec<String> = words[1..].to_vec();
        if cwd.is_none() {
            for i in 0..args.len() {
                if i > 0 && OUTPUT_OPTIONS.contains(&args[i - 1].as_str()) {
                    args[i] = dir.join(&args[i]).to_string_lossy().into_owned();
                }
            }
        }
        let mut c = Command::new(env!("CARGO_BIN_EXE_npusim"));
        c.args(&args).current_dir(cwd.unwrap_or(&self.root));
        for v in crate::sweep_cli::SCHEDULER_VARS {
            c.env_remove(v);
        }
        let (code, bytes) = match stream {
            Stream::Both => {
                // one file for both streams: the order a terminal would show them in
                let path = dir.join(".output");
                let f = File::create(&path).unwrap();
                c.stdout(Stdio::from(f.try_clone().unwrap()))
                    .stderr(Stdio::from(f));
                let status = c.status().expect("npusim runs");
                (status.code(), std::fs::read(&path).unwrap())
            }
            Stream::Stdout => {
                let o = c.output().expect("npusim runs");
                (o.status.code(), o.stdout)
            }
            Stream::Stderr => {
                let o = c.output().expect("npusim runs");
                (o.status.code(), o.stderr)
            }
        };
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        for d in [&dir, &self.base, &self.root] {
            text = text.replace(&format!("{}/", d.display()), "");
        }
        Ran { code, text, dir }
    }

    /// The directory a named setup prepared (once per run): what a block's command needs
    /// besides the repository.
    fn setup(&mut self, name: &str) -> Result<PathBuf, String> {
        if let Some(d) = self.setups.get(name) {
            return Ok(d.clone());
        }
        let dir = self.base.join(format!("setup-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let sweep = |args: &[&str], out: &str| -> Result<(), String> {
            let mut c = Command::new(env!("CARGO_BIN_EXE_npusim"));
            c.args(["sweep", "programs/sweeps/example.yaml"])
                .args(args)
                .arg("-o")
                .arg(dir.join(out))
                .current_dir(root());
            for v in crate::sweep_cli::SCHEDULER_VARS {
                c.env_remove(v);
            }
            let o = c.output().expect("npusim runs");
            match o.status.code() {
                Some(0) => Ok(()),
                _ => Err(format!(
                    "setup {name}: sweep {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                )),
            }
        };
        match name {
            // the example sweep's results
            "sweep-results" => sweep(&[], "results.csv")?,
            // the example sweep's parts in 4 shards, one copied, one cut short, one edited, and a part of
            // another sweep (docs/cli.md, "Merging")
            "sweep-parts" => {
                for k in 0..4 {
                    sweep(&["--shard", &format!("{k}/4")], &format!("p{k}.csv"))?;
                }
                std::fs::copy(dir.join("p0.csv"), dir.join("p0-again.csv")).unwrap();
                let p3 = std::fs::read_to_string(dir.join("p3.csv")).unwrap();
                let mut lines: Vec<&str> = p3.lines().collect();
                // a run that stopped early: its last row and its end line are not written
                lines.truncate(lines.len() - 2);
                std::fs::write(dir.join("p3-short.csv"), lines.join("\n") + "\n").unwrap();
                // point 1's cycles (the 8th field of the part's third line) changed by hand,
                // and shard 2 with its line endings converted to CR LF
                let p1 = std::fs::read_to_string(dir.join("p1.csv")).unwrap();
                let mut lines: Vec<String> = p1.lines().map(str::to_string).collect();
                let mut cells: Vec<&str> = lines[2].split(',').collect();
                cells[7] = "1000";
                lines[2] = cells.join(",");
                std::fs::write(dir.join("p1-edited.csv"), lines.join("\n") + "\n").unwrap();
                let p2 = std::fs::read_to_string(dir.join("p2.csv")).unwrap();
                std::fs::write(dir.join("p2-crlf.csv"), p2.replace('\n', "\r\n")).unwrap();
                sweep(&["--shard", "2/4", "--no-race-check"], "other.csv")?;
            }
            // the built-in config without the cube core's BT, beside a mixed kernel: a
            // `--capacity bt=...` names a scope neither part has (docs/cli.md)
            "no-bt" => {
                let config = sim::builtin::builtin("ascend910b").unwrap();
                let config: String = config
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("bt:") && !l.contains("to: bt"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                std::fs::write(dir.join("no_bt.yaml"), config).unwrap();
                std::fs::create_dir_all(dir.join("programs")).unwrap();
                let program = "programs/matmul_add.yaml";
                std::fs::copy(root().join(program), dir.join(program)).unwrap();
            }
            _ => return Err(format!("no setup named `{name}`")),
        }
        self.setups.insert(name.to_string(), dir.clone());
        Ok(dir)
    }
}

// ---------------------------------------------------------------------------------------------
// Checking one marked block

/// A block to rewrite with `NPUSIM_UPDATE_DOCS=1`: its doc, its fence, its new body.
struct Update {
    doc: String,
    fence: Fence,
    body: Vec<String>,
}

fn show(lines: &[String]) -> String {
    lines.join("\n")
}

fn check(runner: &mut Runner, m: &Marked, updates: &mut Vec<Update>) -> Result<(), String> {
    match (&m.marker, &m.target) {
        (Marker::Output { command, opts }, Target::Fence(f)) => {
            check_output(runner, m, command.as_deref(), opts, f, updates)
        }
        (
            Marker::Problems {
                template,
                dir,
                with,
            },
            target,
        ) => {
            let quoted: Vec<(usize, String)> = match target {
                Target::Fence(f) => f
                    .body
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (f.open + 1 + i, l.clone()))
                    .collect(),
                Target::Table(rows) => rows.clone(),
            };
            check_problems(runner, m, template, dir, with, &quoted)
        }
        (Marker::File { path, excerpt }, Target::Fence(f)) => {
            let mut text = std::fs::read_to_string(runner.root.join(path))
                .map_err(|e| format!("{}: {path}: {e}", m.place()))?;
            let mut body = f.body.clone();
            if path.ends_with(".yaml") {
                // a quoted input may explain itself in comments of its own
                text = without_comments(&text).join("\n");
                body = without_comments(&body.join("\n"));
            }
            if lines_match(&body, &text, *excerpt) {
                Ok(())
            } else {
                Err(format!(
                    "{}: the block is not the text of {path}\n--- quoted:\n{}\n--- {path}:\n{text}",
                    m.place(),
                    show(&f.body)
                ))
            }
        }
        _ => Err(format!(
            "{}: the marker is not followed by a block",
            m.place()
        )),
    }
}

fn check_output(
    runner: &mut Runner,
    m: &Marked,
    command: Option<&[String]>,
    opts: &Opts,
    f: &Fence,
    updates: &mut Vec<Update>,
) -> Result<(), String> {
    let cwd = match &opts.setup {
        Some(s) => Some(runner.setup(s).map_err(|e| format!("{}: {e}", m.place()))?),
        None => None,
    };
    // (the command as written, its words, the quoted lines) per command of the block
    let sections: Vec<(String, Vec<String>, Vec<String>)> = match command {
        Some(c) => {
            if f.body.first().is_some_and(|l| l.starts_with("$ ")) {
                return Err(format!(
                    "{}: the block is a transcript: drop the marker's command",
                    m.place()
                ));
            }
            vec![(c.join(" "), c.to_vec(), f.body.clone())]
        }
        None => {
            let mut sections: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
            for l in &f.body {
                match l.strip_prefix("$ ") {
                    Some(c) => {
                        let w = words(c);
                        if w.first().map(String::as_str) != Some("npusim") {
                            return Err(format!("{}: `{l}` is not an npusim command", m.place()));
                        }
                        sections.push((c.to_string(), w, Vec::new()));
                    }
                    None => match sections.last_mut() {
                        Some(s) => s.2.push(l.clone()),
                        None => {
                            return Err(format!(
                                "{}: a transcript starts with `$ npusim ...`",
                                m.place()
                            ))
                        }
                    },
                }
            }
            sections
        }
    };
    let json = f.info == "json";
    let mut failures = Vec::new();
    let mut fresh_body = Vec::new();
    for (written, words, quote) in &sections {
        let ran = runner.run(words, cwd.as_deref(), &opts.stream);
        let mut out = ran.text;
        if let Some(page) = &opts.page {
            let html = std::fs::read_to_string(ran.dir.join(page)).unwrap_or_default();
            out = page_text(&html);
        }
        let cmd = words.join(" ");
        if command.is_none() {
            fresh_body.push(format!("$ {written}"));
        }
        fresh_body.extend(out.lines().map(|l| l.trim_end().to_string()));
        if ran.code != Some(opts.exit) {
            failures.push(format!(
                "`{cmd}` exited {:?}, the marker says {}\n--- output:\n{out}",
                ran.code, opts.exit
            ));
            continue;
        }
        let result = if json {
            check_json(quote, &out, opts.at.as_deref())
        } else if lines_match(quote, &out, opts.excerpt) {
            Ok(())
        } else {
            Err(out.trim_end().to_string())
        };
        if let Err(fresh) = result {
            failures.push(format!(
                "`{cmd}` prints something else\n--- quoted:\n{}\n--- printed:\n{fresh}",
                show(quote)
            ));
        }
    }
    if failures.is_empty() {
        return Ok(());
    }
    let elided = f.body.iter().any(|l| l.contains("..."));
    if !json && !opts.excerpt && opts.page.is_none() && !elided {
        updates.push(Update {
            doc: m.doc.clone(),
            fence: f.clone(),
            body: fresh_body,
        });
    }
    Err(format!("{}: {}", m.place(), failures.join("\n")))
}

fn check_json(quote: &[String], out: &str, at: Option<&str>) -> Result<(), String> {
    let doc: Value = serde_json::from_str(out).map_err(|e| format!("not JSON ({e}):\n{out}"))?;
    let v = match at {
        Some(p) => doc.pointer(p).ok_or_else(|| format!("no {p} in:\n{out}"))?,
        None => &doc,
    };
    let pat = json_pattern(&show(quote)).map_err(|e| format!("the quote is not JSON: {e}"))?;
    if json_match(&pat, v) {
        Ok(())
    } else {
        Err(serde_json::to_string_pretty(&json_shown(&pat, v)).unwrap())
    }
}

fn check_problems(
    runner: &mut Runner,
    m: &Marked,
    template: &[String],
    dir: &str,
    with: &[(String, Vec<String>)],
    quoted: &[(usize, String)],
) -> Result<(), String> {
    let cwd = runner.root.join(dir);
    let mut by_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    for (line, q) in quoted {
        let file = q.split(':').next().unwrap().to_string();
        if !by_file.contains_key(&file) {
            let mut words: Vec<String> = template.iter().map(|w| w.replace("{}", &file)).collect();
            if let Some((_, extra)) = with.iter().find(|(f, _)| *f == file) {
                words.extend(extra.iter().cloned());
            }
            let ran = runner.run(&words, Some(&cwd), &Stream::Stdout);
            let problems = match serde_json::from_str::<Value>(&ran.text) {
                Ok(doc) => doc["problems"]
                    .as_array()
                    .map(|ps| ps.iter().map(problem_line).collect())
                    .unwrap_or_default(),
                Err(e) => vec![format!("(`{}` printed no JSON: {e})", words.join(" "))],
            };
            by_file.insert(file.clone(), problems);
        }
        let problems = &by_file[&file];
        if !problems.iter().any(|p| glob(q, p)) {
            failures.push(format!(
                "{}:{}: `{file}` reports no such problem\n--- quoted:\n{q}\n--- reported:\n{}",
                m.doc,
                line + 1,
                problems.join("\n")
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Writes each update's fresh body into its doc.
fn apply(updates: &[Update]) {
    let mut by_doc: BTreeMap<&str, Vec<&Update>> = BTreeMap::new();
    for u in updates {
        by_doc.entry(&u.doc).or_default().push(u);
    }
    for (doc, mut ups) in by_doc {
        let path = root().join(doc);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        ups.sort_by_key(|u| std::cmp::Reverse(u.fence.open));
        for u in ups {
            let pad = " ".repeat(u.fence.indent);
            let body = u.body.iter().map(|l| {
                if l.is_empty() {
                    String::new()
                } else {
                    format!("{pad}{l}")
                }
            });
            let from = u.fence.open + 1;
            lines.splice(from..from + u.fence.body.len(), body);
        }
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        eprintln!("NPUSIM_UPDATE_DOCS: rewrote blocks in {doc}");
    }
}

/// Checks every marked block of `docs`; the failures, one message each.
fn check_all(runner: &mut Runner, docs: &[Doc], updates: &mut Vec<Update>) -> Vec<String> {
    let mut failures = Vec::new();
    for doc in docs {
        let (ms, errors) = marked(doc);
        failures.extend(errors);
        for m in &ms {
            if let Err(e) = check(runner, m, updates) {
                failures.push(e);
            }
        }
    }
    failures
}

// ---------------------------------------------------------------------------------------------
// The tests

#[test]
fn every_quoted_output_is_what_the_tool_prints() {
    let docs = docs();
    let mut runner = Runner::new("docs");
    let mut updates = Vec::new();
    let failures = check_all(&mut runner, &docs, &mut updates);
    let update = std::env::var_os("NPUSIM_UPDATE_DOCS").is_some_and(|v| v == "1");
    if update && !updates.is_empty() {
        apply(&updates);
    }
    let count: usize = docs.iter().map(|d| marked(d).0.len()).sum();
    assert!(count > 0, "no markers found");
    assert!(
        failures.is_empty(),
        "{} of {count} marked blocks differ from what npusim prints (fix the doc; \
         NPUSIM_UPDATE_DOCS=1 rewrites those without `...`):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
/// Every block that looks like output has a marker: a block without a language or with
/// `json`, and any block of `$ npusim` lines. Inputs and commands to type say their language
/// (`yaml`, `sh`, `csv`), and a format or synopsis that is not a run's output says `text`.
#[test]
fn every_output_block_has_a_marker() {
    let mut unmarked = Vec::new();
    for doc in docs() {
        let marked: Vec<usize> = marked(&doc)
            .0
            .iter()
            .filter_map(|m| match &m.target {
                Target::Fence(f) => Some(f.open),
                Target::Table(_) => None,
            })
            .collect();
        for f in fences(&doc.lines) {
            let looks_like_output = f.info.is_empty()
                || f.info == "json"
                || f.body.first().is_some_and(|l| l.starts_with("$ npusim"));
            if looks_like_output && !marked.contains(&f.open) {
                unmarked.push(format!(
                    "{}:{}: ```{} {}",
                    doc.path,
                    f.open + 1,
                    f.info,
                    f.body.first().map_or("", String::as_str)
                ));
            }
        }
    }
    assert!(
        unmarked.is_empty(),
        "blocks that look like output but have no marker (give them one, or a language if \
         they are not output):\n{}",
        unmarked.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Figures in the prose

/// `26480` as `26,480`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The JSON document `npusim ARGS --format json` prints (whatever its exit code).
fn json_of(args: &[&str]) -> Value {
    let o = crate::npusim(&[args, &["--format", "json"]].concat());
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", crate::stderr(&o)))
}

fn cycles(doc: &Value) -> u64 {
    doc["total_cycles"].as_u64().unwrap()
}

/// The cycles a pipe's stalls of one kind took: every reason whose name starts with `prefix`.
fn stalled(pipes: &Value, pipe: &str, prefix: &str) -> u64 {
    pipes[pipe]["stalls"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| v.as_u64().unwrap())
        .sum()
}

/// The sentences of the prose that quote figures, each computed here: (doc, the text it must
/// hold). The docs' prose wraps, so a text matches across line breaks.
fn figures() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();

    // what each reuse level costs (README.md, A tour; cli.md, npusim compare)
    let levels = json_of(&["compare", "programs/reuse_levels.yaml"]);
    let level = |l: u64| {
        levels
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["level"] == l)
            .unwrap()
            .clone()
    };
    let (l2, l1, l0) = (level(2), level(1), level(0));
    let best = [&l2, &l1, &l0].iter().map(|e| cycles(e)).min().unwrap();
    let wait = |e: &Value| stalled(&e["pipes"], "MTE2", "wait_flag V#");
    let compare = format!(
        "MTE2 waits for V {} cycles ({:.1} % of the run, against {} at level 2) and the kernel \
         takes {:.3}× as long",
        thousands(wait(&l0)),
        100.0 * wait(&l0) as f64 / cycles(&l0) as f64,
        thousands(wait(&l2)),
        cycles(&l0) as f64 / best as f64
    );
    out.push(("README.md", compare.clone()));
    out.push(("docs/cli.md", compare));
    let banks = |e: &Value| thousands(e["bank_conflict_cycles"].as_u64().unwrap());
    out.push((
        "README.md",
        format!(
            "colliding bank groups for {} cycles of V time, C on A's slots for {}",
            banks(&l2),
            banks(&l1)
        ),
    ));

    // the vector add on the built-in config, warm, and on the ideal core (README.md, last lines)
    let db = json_of(&["run", "programs/vec_add_db.yaml"]);
    let warm = json_of(&["run", "programs/vec_add_db.yaml", "--l2", "warm"]);
    let ideal = json_of(&[
        "run",
        "programs/vec_add_db.yaml",
        "--config",
        crate::IDEAL_CONFIG,
    ]);
    out.push((
        "README.md",
        format!(
            "takes {} cycles on the built-in config, {} with a warm L2 and {} on the ideal core",
            thousands(cycles(&db)),
            thousands(cycles(&warm)),
            thousands(cycles(&ideal))
        ),
    ));

    // the built-in config's gm memory system (README.md: the profile's note, the config's)
    let config = crate::default_config();
    let memory = config.memory.unwrap();
    let chip = config.chip.unwrap();
    let gm_ub = config
        .paths
        .iter()
        .find(|p| p.from == sim::Space::Gm && p.to == sim::Space::Ub)
        .unwrap();
    out.push((
        "README.md",
        format!(
            "drains its {}-cycle HBM latency",
            thousands(memory.hbm_read_latency)
        ),
    ));
    out.push((
        "README.md",
        format!(
            "whose {} bytes a cycle every core of a launch shares with its stores, which the L2 \
             writes through: one core alone streams at its path's {}, each of {} cores streaming \
             together at {}; hits share the L2's {} bytes a cycle for the chip",
            memory.hbm_bytes_per_cycle,
            gm_ub.bytes_per_cycle,
            chip.aic,
            memory.hbm_bytes_per_cycle / chip.aic as u64,
            thousands(memory.l2_chip_bytes_per_cycle)
        ),
    ));
    let launch = config.launch_cost.unwrap();
    // a mixed block starts its cube core and its vector cores
    let us = |blocks: u32| {
        launch.cycles(blocks * (1 + chip.aiv_per_aic)) as f64 / config.clock_mhz as f64
    };
    out.push((
        "README.md",
        format!(
            "start-up cost ({:.1} µs for one mixed block, {:.1} µs for {})",
            us(1),
            us(chip.aic),
            chip.aic
        ),
    ));

    // the shipped programs' table (README.md)
    let banks = json_of(&["run", "programs/bank_conflict.yaml"]);
    out.push((
        "README.md",
        format!(
            "colliding UB bank groups and costs {} more cycles of V",
            banks["bank_conflict_cycles"].as_u64().unwrap()
        ),
    ));

    out.extend(sweep_figures());
    out.extend(sync_figures());

    // the missing wait's run (race.md)
    let o = crate::npusim(&[
        "run",
        "sim/tests/fixtures/race/vec_add_db_no_dequeue_z.yaml",
    ]);
    let last = crate::stderr(&o).lines().last().unwrap_or("").to_string();
    let problems = last
        .split("the run found ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("no count in `{last}`"))
        .to_string();
    let run = json_of(&[
        "run",
        "sim/tests/fixtures/race/vec_add_db_no_dequeue_z.yaml",
    ]);
    out.push((
        "docs/race.md",
        format!(
            "{problems} problems in all, double sets, unpaired flags and, at cycle {}, a deadlock",
            thousands(run["deadlock"]["cycle"].as_u64().unwrap())
        ),
    ));
    out
}

/// A row of a sweep's CSV, by column.
type Row = HashMap<String, String>;

fn num(r: &Row, column: &str) -> u64 {
    r[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} of {r:?}"))
}

/// The ok point with the fewest cycles among `points` with a param's value (and a UB capacity,
/// `""` for the config's, if given).
fn fewest<'a>(points: &[&'a Row], param: &str, value: &str, ub: Option<&str>) -> &'a Row {
    points
        .iter()
        .filter(|r| r["status"] == "ok" && r[param] == value)
        .filter(|r| ub.map_or(true, |u| r["capacity_ub"] == u))
        .min_by_key(|r| num(r, "cycles"))
        .unwrap_or_else(|| panic!("no ok point with {param}={value}"))
}

/// The example sweep's figures (README.md, Sweeps).
fn sweep_figures() -> Vec<(&'static str, String)> {
    let dir = scratch("docs-sweep-figures");
    let csv = dir.join("results.csv");
    let o = crate::npusim(&[
        "sweep",
        "programs/sweeps/example.yaml",
        "-o",
        &csv.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::stderr(&o));
    let mut r = csv::Reader::from_path(&csv).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows: Vec<Row> = r
        .records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect();
    let of =
        |program: &str| -> Vec<&Row> { rows.iter().filter(|r| r["program"] == program).collect() };
    let (add, mm) = (of("../vec_add_db.yaml"), of("../matmul.yaml"));
    let mut out = vec![(
        "README.md",
        format!(
            "{} points ({} of the vector add, {} of the matmul)",
            rows.len(),
            add.len(),
            mm.len()
        ),
    )];
    let (small, large) = (
        num(fewest(&add, "param_n", "4096", None), "cycles"),
        num(fewest(&add, "param_n", "16384", None), "cycles"),
    );
    out.push((
        "README.md",
        format!(
            "4× the elements per tile, {:.2}× the cycles",
            large as f64 / small as f64
        ),
    ));
    // every ok point of the vector add drains MTE2 for the same cycles
    let drains: Vec<(String, String)> = add
        .iter()
        .filter(|r| r["status"] == "ok")
        .map(|r| {
            (
                r["mte2_top_stall"].clone(),
                r["mte2_top_stall_cycles"].clone(),
            )
        })
        .collect();
    assert!(drains.iter().all(|d| *d == drains[0]), "{drains:?}");
    assert_eq!(drains[0].0, "drain");
    let drain: u64 = drains[0].1.parse().unwrap();
    out.push((
        "README.md",
        format!("MTE2 spends {} cycles draining its loads", thousands(drain)),
    ));
    let tight = fewest(&add, "param_n", "8192", Some("65536"));
    let roomy = fewest(&add, "param_n", "8192", Some(""));
    out.push((
        "README.md",
        format!(
            "(`ub_bytes` {} instead of {}, {} cycles faster)",
            thousands(num(tight, "ub_bytes")),
            thousands(num(roomy, "ub_bytes")),
            num(roomy, "cycles") - num(tight, "cycles")
        ),
    ));
    let findings: Vec<_> = rows.iter().filter(|r| r["status"] == "finding").collect();
    assert!(findings
        .iter()
        .all(|r| r["param_n"] == "16384" && r["capacity_ub"] == "65536"));
    out.push((
        "README.md",
        format!(
            "does not fit there at any level: the {} findings",
            findings.len()
        ),
    ));
    let r64 = fewest(&mm, "param_kt", "64", None);
    let r256 = fewest(&mm, "param_kt", "256", None);
    let (kt64, kt256) = (num(r64, "cycles"), num(r256, "cycles"));
    out.push((
        "README.md",
        format!(
            "The matmul gets {:.2}× faster from `kt=64` to `kt=256`: MTE2's drain halves each time \
             the L1 tile doubles ({} → {} cycles)",
            kt64 as f64 / kt256 as f64,
            thousands(num(r64, "mte2_top_stall_cycles")),
            thousands(num(r256, "mte2_top_stall_cycles"))
        ),
    ));
    out
}

/// What the sync pass's kernels cost against their hand-written twins (sync.md, README.md).
fn sync_figures() -> Vec<(&'static str, String)> {
    let run = |p: &str| cycles(&json_of(&["run", p]));
    let mut out = Vec::new();
    let (auto, manual) = (
        run("programs/vec_add_db.yaml"),
        run("programs/vec_add_db_manual.yaml"),
    );
    out.push((
        "docs/sync.md",
        format!(
            "within {} cycles of each other ({} and {}: the final `barrier: all`)",
            auto.abs_diff(manual),
            thousands(auto),
            thousands(manual)
        ),
    ));
    let (auto, manual) = (
        run("programs/matmul_add.yaml"),
        run("programs/matmul_add_manual.yaml"),
    );
    assert_eq!(auto, manual, "matmul_add and its twin");
    out.push((
        "docs/sync.md",
        format!(
            "it runs in the same {} cycles as its hand-written twin",
            thousands(auto)
        ),
    ));
    let (auto, manual) = (
        run("programs/matmul.yaml"),
        run("programs/matmul_pingpong_manual.yaml"),
    );
    out.push((
        "docs/sync.md",
        format!(
            "the inserted flags run {} cycles, the hand-written `matmul_pingpong_manual.yaml` {}",
            thousands(auto),
            thousands(manual)
        ),
    ));
    let (auto, manual) = (
        run("programs/matmul_blocked.yaml"),
        run("programs/matmul_blocked_manual.yaml"),
    );
    out.push((
        "docs/sync.md",
        format!(
            "on `programs/matmul_blocked.yaml` {} against its twin's {}",
            thousands(auto),
            thousands(manual)
        ),
    ));
    // README.md's table says "within 0.1 %"
    assert!(auto.abs_diff(manual) * 1000 < manual, "{auto} vs {manual}");
    // the serialised multi-buffer's fix: the slots written with a count that runs on
    let serialised = cycles(&json_of(&[
        "run",
        "programs/matmul_blocked.yaml",
        "--param",
        "K=768",
    ]));
    let fixed = scratch("docs-sync-figures").join("matmul_blocked.yaml");
    let text = std::fs::read_to_string(root().join("programs/matmul_blocked.yaml")).unwrap();
    let slot = "(((K / kt) * ((N / bn) * mb + nb) + kk) % 2)";
    let text = text
        .replace("l1a@(kk % 2)", &format!("l1a@{slot}"))
        .replace("l1b@(kk % 2)", &format!("l1b@{slot}"));
    std::fs::write(&fixed, text).unwrap();
    let fixed = json_of(&["run", &fixed.to_string_lossy(), "--param", "K=768"]);
    assert_eq!(
        fixed["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["kind"] == "serialised")
            .count(),
        0
    );
    out.push((
        "docs/sync.md",
        format!(
            "the slots alternate again ({} → {} cycles)",
            thousands(serialised),
            thousands(cycles(&fixed))
        ),
    ));
    // --level best on the fixture whose level 2 serialises a multi-buffer
    let best = json_of(&[
        "run",
        "tests/fixtures/rmsnorm_blocks.yaml",
        "--capacity",
        "ub=128KiB",
        "--level",
        "best",
    ]);
    let tried = |l: u64| {
        best["best_level"]["levels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["level"] == l)
            .unwrap()["total_cycles"]
            .as_u64()
            .unwrap()
    };
    let chosen = best["best_level"]["level"].as_u64().unwrap();
    out.push((
        "docs/sync.md",
        format!(
            "reports level {chosen} with a warning that level 2 is {:.2}x slower",
            tried(2) as f64 / tried(chosen) as f64
        ),
    ));
    out
}

/// The figures the prose quotes are what npusim computes today.
#[test]
fn figures_in_the_prose_are_what_the_tool_computes() {
    let docs = docs();
    let flat = |path: &str| -> String {
        let d = docs.iter().find(|d| d.path == path).unwrap();
        d.lines
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let missing: Vec<String> = figures()
        .into_iter()
        .filter(|(doc, text)| !flat(doc).contains(text.as_str()))
        .map(|(doc, text)| format!("{doc}: \"{text}\""))
        .collect();
    assert!(
        missing.is_empty(),
        "the prose does not say these (the figures are computed; correct the doc):\n{}",
        missing.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The checker itself

fn lines_of(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

#[test]
fn a_quote_elides_only_where_it_says_so() {
    assert!(glob("a...c", "abbbc") && glob("a...c", "ac") && glob("x", "x"));
    assert!(!glob("a...c", "abd") && !glob("a...b...c", "acb") && !glob("x", "xy"));
    assert!(lines_match(&lines_of("a\n...\nd"), "a\nb\nc\nd\n", false));
    assert!(
        lines_match(&lines_of("a  \n..."), "a\n", false),
        "trailing spaces aside"
    );
    assert!(!lines_match(&lines_of("a\nd"), "a\nb\nd\n", false));
    assert!(!lines_match(&lines_of("a\n...\nd"), "a\nb\nd\ne\n", false));
    assert!(lines_match(&lines_of("b"), "a\nb\nc", true));
    assert!(!lines_match(&lines_of("b"), "a\nb\nc", false));
    let v: Value =
        serde_json::from_str(r#"{"a": 1, "b": [1, 2, 3], "c": {"d": "xyz"}, "e": 0.5}"#).unwrap();
    let m = |p: &str| json_match(&json_pattern(p).unwrap(), &v);
    assert!(m(r#"{"a": 1, ...}"#));
    assert!(!m(r#"{"a": 1}"#), "other members need a `...`");
    assert!(m(r#""c": {"d": "x..."}"#), "a fragment of members");
    assert!(m(r#"{"a": ..., "b": [1, ...], "c": { ... }, "e": 0.50}"#));
    assert!(!m(r#"{"b": [...], "a": 1, ...}"#), "keys keep their order");
    assert!(!m(r#"{"a": 2, ...}"#) && !m(r#"{"b": [1, 2], ...}"#));
    assert!(json_pattern(r#"{"a": 1,, }"#).is_err() || !m(r#"{"a": 1,, }"#));
}

/// A doc made of `text`, checked as the test checks the real ones.
fn check_text(name: &str, text: &str) -> (Vec<String>, usize) {
    let doc = Doc {
        path: format!("{name}.md"),
        lines: lines_of(text),
    };
    let mut runner = Runner::new(&format!("docs-{name}"));
    let mut updates = Vec::new();
    let failures = check_all(&mut runner, &[doc], &mut updates);
    (failures, updates.len())
}

#[test]
fn a_wrong_quote_fails_with_the_command_the_quote_and_the_fresh_output() {
    let (failures, updates) = check_text(
        "wrong",
        "Lists the configs:\n\n<!-- output: npusim configs -->\n```\nname  cores\nascend910b\n```\n",
    );
    assert_eq!(failures.len(), 1, "{failures:?}");
    let f = &failures[0];
    assert!(
        f.starts_with("wrong.md:3: `npusim configs` prints something else"),
        "{f}"
    );
    assert!(
        f.contains("--- quoted:\nname  cores\nascend910b\n--- printed:\nname "),
        "{f}"
    );
    assert!(f.contains("ascend910b (default)"), "{f}");
    assert_eq!(
        updates, 1,
        "no elision: NPUSIM_UPDATE_DOCS=1 would rewrite it"
    );
    // a quote with an elision is never rewritten; the exit code is checked
    let (failures, updates) = check_text(
        "elided",
        "<!-- output -->\n```\n$ npusim configs --show nothing\n...\n```\n",
    );
    assert_eq!(updates, 0);
    assert!(
        failures[0].contains("exited Some(2), the marker says 0"),
        "{failures:?}"
    );
    // a problem the fixture does not report, and a marker with nothing after it
    let (failures, _) = check_text(
        "problems",
        "<!-- problems -->\n```\nsim/tests/fixtures/bad/unknown_op.yaml:11:12: error: body[1].vaddd: unknown op \"vadd\"\n```\n\n<!-- output: npusim configs -->\ntext\n",
    );
    assert_eq!(failures.len(), 2, "{failures:?}");
    let unknown = failures
        .iter()
        .find(|f| f.contains("reports no such problem"));
    assert!(
        unknown.is_some_and(|f| f.contains("unknown op \"vaddd\"")),
        "{failures:?}"
    );
    assert!(
        failures
            .iter()
            .any(|f| f == "problems.md:6: the marker is not followed by a block"),
        "{failures:?}"
    );
}
