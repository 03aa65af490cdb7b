//! `npusim sweep --merge PART ... [-o ALL]`: joins the parts of a sharded sweep into the
//! output of the unsharded sweep, byte for byte. Every part's first line says which sweep,
//! format and shard it is ([`super::PART_TAG`]); the parts must be of one sweep, every shard
//! given once, and every point of every shard present once. Each problem is named (the part,
//! the shard, the point) and all are reported before stopping (exit 2; nothing written).

use super::PART_TAG;
use crate::{input, output, Exit};
use std::path::{Path, PathBuf};

/// One part: what its first line says, its CSV header (bytes, with the newline), and its
/// records (point index, bytes) in the order written.
struct Part {
    name: String,
    format: String,
    k: u64,
    n: u64,
    points: u64,
    sweep: String,
    header: Vec<u8>,
    records: Vec<(u64, Vec<u8>)>,
}

pub fn merge(parts: &[PathBuf], out: Option<&Path>) -> Result<(), Exit> {
    let mut problems: Vec<String> = Vec::new();
    let mut read: Vec<Part> = Vec::new();
    for path in parts {
        match read_part(path) {
            Ok(p) => read.push(p),
            Err(e) => problems.push(e),
        }
    }
    if problems.is_empty() {
        if let Some(text) = joined(&read, &mut problems) {
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
        for (index, _) in &p.records {
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
            let mut r: Vec<&(u64, Vec<u8>)> = p.expect("checked").records.iter().collect();
            r.sort_by_key(|(i, _)| *i);
            r.into_iter().map(|(_, b)| b.as_slice()).collect()
        })
        .collect();
    let mut text = first.header.clone();
    for i in 0..points {
        let shard = &mut ordered[(i % n) as usize];
        text.extend_from_slice(shard[(i / n) as usize]);
    }
    Some(String::from_utf8(text).expect("the parts are UTF-8"))
}

/// Reads a part: its first line, then its header (CSV) and records.
fn read_part(path: &Path) -> Result<Part, String> {
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
    let (header, records) = match format.as_str() {
        "csv" => csv_records(rest).map_err(|e| format!("{name}: {e}"))?,
        "jsonl" => (
            Vec::new(),
            json_records(rest).map_err(|e| format!("{name}: {e}"))?,
        ),
        _ => return Err(not_a_part()),
    };
    Ok(Part {
        name,
        format,
        k,
        n,
        points,
        sweep,
        header,
        records,
    })
}

/// The header and the records of a CSV, each as the bytes written (a record may span lines:
/// a message with a newline is quoted), with its point index (the first field).
#[allow(clippy::type_complexity)]
fn csv_records(text: &str) -> Result<(Vec<u8>, Vec<(u64, Vec<u8>)>), String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let mut record = csv::ByteRecord::new();
    let mut header = None;
    let mut records = Vec::new();
    loop {
        let start = reader.position().byte() as usize;
        let more = reader
            .read_byte_record(&mut record)
            .map_err(|e| match e.position() {
                // the part's first line is the tag: the CSV's line 1 is the file's line 2
                Some(p) => format!("line {}: {e}", p.line() + 1),
                None => e.to_string(),
            })?;
        if !more {
            break;
        }
        let end = reader.position().byte() as usize;
        let bytes = text.as_bytes()[start..end].to_vec();
        if header.is_none() {
            header = Some(bytes);
            continue;
        }
        let line = record.position().map_or(0, |p| p.line() + 1);
        let index = std::str::from_utf8(record.get(0).unwrap_or_default())
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| format!("line {line}: the first field is not a point index"))?;
        records.push((index, bytes));
    }
    Ok((header.ok_or("the part has no CSV header")?, records))
}

/// The lines of a JSON lines part, each with its `index`.
fn json_records(text: &str) -> Result<Vec<(u64, Vec<u8>)>, String> {
    text.split_inclusive('\n')
        .enumerate()
        .map(|(i, line)| {
            let index = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("index")?.as_u64())
                .ok_or_else(|| format!("line {}: not a sweep's JSON line (no `index`)", i + 2))?;
            Ok((index, line.as_bytes().to_vec()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_records_keep_their_bytes_across_lines() {
        let text = "index,message\n0,\"a\nb\"\n1,\n";
        let (header, records) = csv_records(text).unwrap();
        assert_eq!(header, b"index,message\n");
        assert_eq!(
            records,
            [(0, b"0,\"a\nb\"\n".to_vec()), (1, b"1,\n".to_vec())]
        );
        assert!(csv_records("index\nx\n")
            .unwrap_err()
            .contains("line 3: the first field is not a point index"));
    }

    #[test]
    fn json_lines_need_an_index() {
        let r = json_records("{\"index\":3,\"a\":1}\n").unwrap();
        assert_eq!(r[0].0, 3);
        assert!(json_records("{\"a\":1}\n").unwrap_err().contains("line 2"));
    }
}
