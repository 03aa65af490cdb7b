//! `npusim sweep --merge PART ... [-o ALL]`: joins the parts of a sharded sweep into the
//! output of the unsharded sweep, byte for byte. Every part's first line says which sweep,
//! format and shard it is ([`super::PART_TAG`]), and its last line ([`END_TAG`]) carries a
//! SHA-256 digest of its head and of each of its rows, so that a part edited after npusim wrote
//! it (a changed cell, an index respelled `00` or `+0`, CR LF line endings) is refused at the
//! row that changed. The parts must be of one sweep, every shard given once, and every point of
//! every shard present once. Each problem is named (the part and its line, the shard, the
//! point) and all are reported before stopping (exit 2; nothing written).

use super::PART_TAG;
use crate::{input, output, Exit};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The last line of a part: `#npusim-sweep-end records=R sha256=H.H1...HR`, the digest of the
/// part's head (its first line and CSV header) and then of each record, in the order written.
pub const END_TAG: &str = "#npusim-sweep-end";

/// Hex digits kept of each SHA-256: 64 bits tell an edited row from the written one (this is
/// a check against edits and damage, not a signature: anyone can recompute it).
const DIGEST_HEX: usize = 16;

/// The digest of some bytes, as the end line writes it.
fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(DIGEST_HEX / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Collects a part's digests as it is written: its head, then each record.
#[derive(Default)]
pub struct PartDigest {
    digests: Vec<String>,
}

impl PartDigest {
    /// Adds the next piece written: the head first, then one record at a time.
    pub fn add(&mut self, bytes: &[u8]) {
        self.digests.push(digest(bytes));
    }

    /// The end line, with its newline.
    pub fn end_line(&self) -> String {
        format!(
            "{END_TAG} records={} sha256={}\n",
            self.digests.len().saturating_sub(1),
            self.digests.join(".")
        )
    }
}

/// One record of a part: its point index (and how the index was spelled), the file line it
/// starts on, and its bytes as written.
#[derive(Debug)]
struct Record {
    index: u64,
    spelled: String,
    line: usize,
    bytes: Vec<u8>,
}

/// The end line of a part: its file line and text, and the lines of records after it.
#[derive(Debug)]
struct End {
    line: usize,
    text: String,
    after: Vec<usize>,
}

/// What a part's body holds after its first line: its CSV header (empty for JSON lines), its
/// records and its end line, if it has one.
#[derive(Debug)]
struct Body {
    header: Vec<u8>,
    records: Vec<Record>,
    end: Option<End>,
    /// The file's number of lines (where a missing end line should be).
    lines: usize,
}

/// One part: what its first line says, its CSV header (bytes, with the newline), and its
/// records in the order written.
struct Part {
    name: String,
    format: String,
    k: u64,
    n: u64,
    points: u64,
    sweep: String,
    header: Vec<u8>,
    records: Vec<Record>,
}

pub fn merge(parts: &[PathBuf], out: Option<&Path>) -> Result<(), Exit> {
    if let Some(out) = out {
        let read: Vec<(String, &Path)> = parts
            .iter()
            .map(|p| ("the part".to_string(), p.as_path()))
            .collect();
        output::refuse_clashes(&read, &[("-o", out)])?;
    }
    let mut problems: Vec<String> = Vec::new();
    let mut read: Vec<Part> = Vec::new();
    let mut unreadable = false;
    for path in parts {
        match read_part(path, &mut problems) {
            Ok(p) => read.push(p),
            Err(e) => {
                problems.push(e);
                unreadable = true;
            }
        }
    }
    // an edited part is still joined, so that its missing or doubled points are named too
    if !unreadable {
        let mut joining = Vec::new();
        let text = joined(&read, &mut joining);
        problems.extend(joining);
        if let (true, Some(text)) = (problems.is_empty(), text) {
            return output::emit(out, &text);
        }
    }
    for p in &problems {
        err_line!("error: {p}");
    }
    err_line!(
        "error: --merge: {} problem{}; nothing written",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    Err(Exit(2))
}

/// The parts joined, or `None` with every problem added to `problems`.
fn joined(parts: &[Part], problems: &mut Vec<String>) -> Option<String> {
    let first = parts.first()?;
    for p in &parts[1..] {
        let differs = |what: &str, a: &str, b: &str| {
            format!(
                "{} and {} are parts of different sweeps: {what} {a} and {b}",
                first.name, p.name
            )
        };
        if p.sweep != first.sweep {
            problems.push(differs("fingerprints", &first.sweep, &p.sweep));
        } else if p.format != first.format {
            problems.push(differs("formats", &first.format, &p.format));
        } else if p.n != first.n || p.points != first.points {
            problems.push(differs(
                "shard counts",
                &format!("{} of {} points", first.n, first.points),
                &format!("{} of {} points", p.n, p.points),
            ));
        } else if p.header != first.header {
            problems.push(format!(
                "{} and {} are parts of different sweeps: their CSV headers differ",
                first.name, p.name
            ));
        }
    }
    if !problems.is_empty() {
        return None;
    }
    let (n, points) = (first.n, first.points);
    let mut by_shard: Vec<Option<&Part>> = vec![None; n as usize];
    for p in parts {
        match by_shard[p.k as usize] {
            Some(earlier) => problems.push(format!(
                "shard {}/{n} is given twice: {} and {}",
                p.k, earlier.name, p.name
            )),
            None => by_shard[p.k as usize] = Some(p),
        }
    }
    for (k, p) in by_shard.iter().enumerate() {
        if p.is_none() {
            let shard = super::shard::Shard {
                k: k as u32,
                n: n as u32,
            };
            let shown: Vec<String> = shard
                .indices(points)
                .take(4)
                .map(|i| i.to_string())
                .collect();
            let more = if shard.count(points) > 4 { ", ..." } else { "" };
            problems.push(format!(
                "shard {k}/{n} is missing (its part holds points {}{more}; `npusim sweep ... --shard {k}/{n}` writes it)",
                if shown.is_empty() { "none".to_string() } else { shown.join(", ") }
            ));
        }
    }
    // every point of each part's shard, once, and nothing else
    for p in parts {
        let shard = super::shard::Shard {
            k: p.k as u32,
            n: n as u32,
        };
        let mut seen = vec![false; shard.count(points) as usize];
        for Record { index, .. } in &p.records {
            if *index >= points || !shard.has(*index) {
                problems.push(format!(
                    "{}: point {index} is not shard {}/{n}'s (a sweep of {points} points; shard {}/{n} holds the points whose index mod {n} is {})",
                    p.name, p.k, p.k, p.k
                ));
                continue;
            }
            let slot = &mut seen[(index / n) as usize];
            if *slot {
                problems.push(format!("{}: point {index} appears twice", p.name));
            }
            *slot = true;
        }
        let missing: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(_, s)| !**s)
            .map(|(j, _)| (j as u64 * n + p.k).to_string())
            .collect();
        if !missing.is_empty() {
            let shown: Vec<&str> = missing.iter().take(8).map(String::as_str).collect();
            problems.push(format!(
                "{}: shard {}/{n} lacks point{} {}{} (did its run stop early?)",
                p.name,
                p.k,
                if missing.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if missing.len() > 8 {
                    format!(" and {} more", missing.len() - 8)
                } else {
                    String::new()
                }
            ));
        }
    }
    if !problems.is_empty() {
        return None;
    }
    // point i is in shard i mod n, at position i / n of its records (in index order)
    let mut ordered: Vec<Vec<&[u8]>> = by_shard
        .iter()
        .map(|p| {
            let mut r: Vec<&Record> = p.expect("checked").records.iter().collect();
            r.sort_by_key(|r| r.index);
            r.into_iter().map(|r| r.bytes.as_slice()).collect()
        })
        .collect();
    let mut text = first.header.clone();
    for i in 0..points {
        let shard = &mut ordered[(i % n) as usize];
        text.extend_from_slice(shard[(i / n) as usize]);
    }
    Some(String::from_utf8(text).expect("the parts are UTF-8"))
}

/// Reads a part: its first line, then its header (CSV), records and end line. A part that
/// cannot be read as one is an error; the problems of one that was edited after npusim wrote
/// it (its digests differ) are added to `problems`, and the part is returned.
fn read_part(path: &Path, problems: &mut Vec<String>) -> Result<Part, String> {
    let name = input::name(path);
    let text = input::read_text(path).map_err(|e| e.describe(&name, "part"))?;
    let not_a_part = || {
        format!(
            "{name}: not a part of a sharded sweep: its first line is not `{PART_TAG} format=... shard=K/N points=... sweep=...` (`npusim sweep --shard K/N` writes parts; the output of a whole sweep needs no merging)"
        )
    };
    let (first, rest) = text.split_once('\n').ok_or_else(not_a_part)?;
    let fields = first.strip_prefix(PART_TAG).ok_or_else(not_a_part)?;
    let get = |key: &str| {
        fields
            .split_whitespace()
            .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(not_a_part)
    };
    let (format, sweep) = (get("format")?.to_string(), get("sweep")?.to_string());
    let (k, n) = get("shard")?.split_once('/').ok_or_else(not_a_part)?;
    let num = |s: &str| s.parse::<u64>().map_err(|_| not_a_part());
    let (k, n, points) = (num(k)?, num(n)?, num(get("points")?)?);
    if n == 0 || k >= n || n > u64::from(u32::MAX) {
        return Err(not_a_part());
    }
    let body = match format.as_str() {
        "csv" => csv_records(rest).map_err(|e| format!("{name}:{e}"))?,
        "jsonl" => json_records(rest).map_err(|e| format!("{name}:{e}"))?,
        _ => return Err(not_a_part()),
    };
    let head = [&text.as_bytes()[..first.len() + 1], &body.header].concat();
    let crlf = first.ends_with('\r');
    check_digests(&name, crlf, &head, &body, problems);
    // refused for its line endings, its header is compared with the others' as npusim wrote
    // it (the CSV reader ends a record at the CR, so the LF is not in it)
    let header = if crlf {
        let mut h = String::from_utf8_lossy(&body.header).replace('\r', "");
        if !h.ends_with('\n') {
            h.push('\n');
        }
        h.into_bytes()
    } else {
        body.header
    };
    Ok(Part {
        name,
        format,
        k,
        n,
        points,
        sweep,
        header,
        records: body.records,
    })
}

/// Checks a part against the digests of its end line: each problem, at its line, is added to
/// `problems`. CR LF line endings and a respelled index are named as such; any other change to
/// a row is named by its row.
fn check_digests(name: &str, crlf: bool, head: &[u8], body: &Body, problems: &mut Vec<String>) {
    let rerun = "rerun its shard (`npusim sweep ... --shard K/N`) rather than edit a part";
    if crlf {
        // npusim writes LF; a first line ending in CR means the whole file was converted
        problems.push(format!(
            "{name}:1: the part's lines end in CR LF, but npusim writes LF: its line endings were changed after it was written (a Windows editor, git's core.autocrlf); convert them back (dos2unix) or {rerun}"
        ));
        return;
    }
    for r in &body.records {
        if r.spelled != r.index.to_string() {
            problems.push(format!(
                "{name}:{}:1: the point index is written `{}`, which npusim writes `{}`: the row was edited after npusim wrote it; {rerun}",
                r.line, r.spelled, r.index
            ));
        }
    }
    let Some(end) = &body.end else {
        problems.push(format!(
            "{name}:{}: the part has no end line (`{END_TAG} records=... sha256=...`) after its last row: its run stopped early, or the file was cut short; {rerun}",
            body.lines
        ));
        return;
    };
    for line in &end.after {
        problems.push(format!(
            "{name}:{line}: a row after the part's end line: rows were added to the part after npusim wrote it; {rerun}"
        ));
    }
    let listed: Option<(usize, Vec<&str>)> = (|| {
        let mut fields = end.text.strip_prefix(END_TAG)?.split_whitespace();
        let count = fields
            .next()?
            .strip_prefix("records=")?
            .parse::<usize>()
            .ok()?;
        let digests: Vec<&str> = fields.next()?.strip_prefix("sha256=")?.split('.').collect();
        let well_formed = fields.next().is_none()
            && digests.len() == count.checked_add(1)?
            && digests
                .iter()
                .all(|d| d.len() == DIGEST_HEX && d.bytes().all(|b| b.is_ascii_hexdigit()));
        well_formed.then_some((count, digests))
    })();
    let Some((count, digests)) = listed else {
        problems.push(format!(
            "{name}:{}: the end line is not `{END_TAG} records=R sha256=...` with R + 1 digests: it was edited after npusim wrote it; {rerun}",
            end.line
        ));
        return;
    };
    if digest(head) != digests[0] {
        problems.push(format!(
            "{name}:1: the part's first line or CSV header was changed after npusim wrote it (its SHA-256 is not the end line's); {rerun}"
        ));
    }
    // a row is matched with any listed digest: rows moved around still merge to the same bytes
    let rows = &digests[1..];
    let before_end = body.records.len() - end.after.len();
    for r in &body.records[..before_end] {
        if r.spelled == r.index.to_string() && !rows.contains(&digest(&r.bytes).as_str()) {
            problems.push(format!(
                "{name}:{}: the row of point {} was changed after npusim wrote it (its SHA-256 is not among the end line's); {rerun}",
                r.line, r.index
            ));
        }
    }
    if before_end != count {
        problems.push(format!(
            "{name}:{}: the end line counts {count} row{} but the part holds {before_end}: rows were removed or added after npusim wrote it; {rerun}",
            end.line,
            if count == 1 { "" } else { "s" }
        ));
    }
}

/// The header, the records and the end line of a CSV part, each record as the bytes written (a
/// record may span lines: a message with a newline is quoted) with its point index (the first
/// field). The part's first line is the tag: the CSV's line 1 is the file's line 2. An error
/// starts with the file line it is on.
fn csv_records(text: &str) -> Result<Body, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        // the end line is one field, the rows as many as the header
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut record = csv::ByteRecord::new();
    let mut header: Option<(Vec<u8>, usize)> = None;
    let mut records = Vec::new();
    let mut end: Option<End> = None;
    loop {
        let start = reader.position().byte() as usize;
        let more = reader
            .read_byte_record(&mut record)
            .map_err(|e| match e.position() {
                Some(p) => format!("{}: {e}", p.line() + 1),
                None => format!(" {e}"),
            })?;
        if !more {
            break;
        }
        let end_byte = reader.position().byte() as usize;
        let bytes = text.as_bytes()[start..end_byte].to_vec();
        let line = record.position().map_or(0, |p| p.line() as usize + 1);
        let first = std::str::from_utf8(record.get(0).unwrap_or_default()).unwrap_or_default();
        if first.starts_with(END_TAG) && end.is_none() {
            end = Some(End {
                line,
                text: first.to_string(),
                after: Vec::new(),
            });
            continue;
        }
        let Some((_, fields)) = &header else {
            header = Some((bytes, record.len()));
            continue;
        };
        if record.len() != *fields {
            return Err(format!(
                "{line}: the row has {} fields, the header {fields}",
                record.len()
            ));
        }
        let index = first
            .parse::<u64>()
            .map_err(|_| format!("{line}: the first field is not a point index"))?;
        if let Some(end) = &mut end {
            end.after.push(line);
        }
        records.push(Record {
            index,
            spelled: first.to_string(),
            line,
            bytes,
        });
    }
    let (header, _) = header.ok_or(" the part has no CSV header")?;
    Ok(Body {
        header,
        records,
        end,
        lines: text.lines().count() + 1,
    })
}

/// The lines of a JSON lines part, each with its `index`, and its end line.
fn json_records(text: &str) -> Result<Body, String> {
    let mut records = Vec::new();
    let mut end: Option<End> = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let at = i + 2;
        if line.starts_with(END_TAG) && end.is_none() {
            end = Some(End {
                line: at,
                text: line.trim_end().to_string(),
                after: Vec::new(),
            });
            continue;
        }
        let index = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("index")?.as_u64())
            .ok_or_else(|| format!("{at}: not a sweep's JSON line (no `index`)"))?;
        if let Some(end) = &mut end {
            end.after.push(at);
        }
        records.push(Record {
            index,
            spelled: index.to_string(),
            line: at,
            bytes: line.as_bytes().to_vec(),
        });
    }
    Ok(Body {
        header: Vec::new(),
        records,
        end,
        lines: text.lines().count() + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_records_keep_their_bytes_across_lines() {
        let text = "index,message\n0,\"a\nb\"\n1,\n#npusim-sweep-end records=2 sha256=x\n";
        let body = csv_records(text).unwrap();
        assert_eq!(body.header, b"index,message\n");
        let records: Vec<(u64, &[u8], usize)> = body
            .records
            .iter()
            .map(|r| (r.index, r.bytes.as_slice(), r.line))
            .collect();
        // file lines: 1 the tag, 2 the header, 3-4 point 0, 5 point 1, 6 the end line
        assert_eq!(
            records,
            [(0, &b"0,\"a\nb\"\n"[..], 3), (1, &b"1,\n"[..], 5)]
        );
        let end = body.end.unwrap();
        assert_eq!(
            (end.line, end.text.as_str()),
            (6, "#npusim-sweep-end records=2 sha256=x")
        );
        assert!(csv_records("index\nx\n")
            .unwrap_err()
            .starts_with("3: the first field is not a point index"));
        assert_eq!(csv_records("index\n+0\n").unwrap().records[0].spelled, "+0");
    }

    #[test]
    fn json_lines_need_an_index() {
        let r = json_records("{\"index\":3,\"a\":1}\n").unwrap();
        assert_eq!(r.records[0].index, 3);
        assert!(json_records("{\"a\":1}\n").unwrap_err().starts_with("2:"));
    }

    /// A part's digests, checked: (problems of the intact part, of each edit).
    fn problems_of(text: &str) -> Vec<String> {
        let (first, rest) = text.split_once('\n').unwrap();
        let body = csv_records(rest).unwrap();
        let head = [&text.as_bytes()[..first.len() + 1], &body.header].concat();
        let mut problems = Vec::new();
        check_digests("p.csv", first.ends_with('\r'), &head, &body, &mut problems);
        problems
    }

    #[test]
    fn an_edited_part_is_named_at_its_row() {
        let head = "#npusim-sweep-part format=csv shard=0/1 points=2 sweep=x\nindex,cycles\n";
        let mut d = PartDigest::default();
        d.add(head.as_bytes());
        d.add(b"0,10\n");
        d.add(b"1,20\n");
        let part = format!("{head}0,10\n1,20\n{}", d.end_line());
        assert_eq!(problems_of(&part), Vec::<String>::new());
        // rows swapped still merge to the same bytes
        let swapped = part.replace("0,10\n1,20\n", "1,20\n0,10\n");
        assert_eq!(problems_of(&swapped), Vec::<String>::new());
        let one = |p: Vec<String>| {
            assert_eq!(p.len(), 1, "{p:?}");
            p[0].clone()
        };
        assert!(one(problems_of(&part.replace("1,20", "1,21")))
            .starts_with("p.csv:4: the row of point 1 was changed"));
        assert!(one(problems_of(&part.replace("\n0,10", "\n00,10")))
            .starts_with("p.csv:3:1: the point index is written `00`, which npusim writes `0`"));
        assert!(one(problems_of(&part.replace("\n0,10", "\n+0,10"))).contains("written `+0`"));
        assert!(one(problems_of(&part.replace('\n', "\r\n")))
            .starts_with("p.csv:1: the part's lines end in CR LF"));
        assert!(one(problems_of(&part.replace("shard=0/1", "shard=0/01")))
            .starts_with("p.csv:1: the part's first line or CSV header was changed"));
        let cut = part.rsplit_once("#npusim").unwrap().0;
        assert!(one(problems_of(cut)).starts_with("p.csv:4: the part has no end line"));
        let removed = part.replace("1,20\n", "");
        assert!(one(problems_of(&removed))
            .starts_with("p.csv:4: the end line counts 2 rows but the part holds 1"));
        let added = format!("{part}1,20\n");
        assert!(one(problems_of(&added)).starts_with("p.csv:6: a row after the part's end line"));
        let bad_end = part.replace("records=2", "records=3");
        assert!(one(problems_of(&bad_end)).starts_with("p.csv:5: the end line is not"));
    }
}
