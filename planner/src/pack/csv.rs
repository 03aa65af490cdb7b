//! MiniMalloc's CSV format, read as MiniMalloc's `src/converter.cc` reads it
//! (`planner/tests/data/minimalloc/README.md`, docs/pack.md): a header row naming the columns in any order (`id`/`buffer`/`buffer_id`,
//! `lower`/`start`/`begin`, `upper`/`end`, `size`, optional `alignment`, `hint`, `gaps`,
//! `offset`); records split on newlines; reading stops at the first empty line. A header that
//! says `end` means inclusive ends: every upper value (gap ends too) gets +1.

use super::{Gap, Instance, PackBuffer, Solution};

/// A problem in the CSV text: 1-based line, what is wrong, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct CsvError {
    pub line: usize,
    pub message: String,
}

/// Which optional columns an instance was read with (the output repeats them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    pub alignment: bool,
    pub hint: bool,
    pub gaps: bool,
}

/// Parses an instance, collecting every problem (up to 20) before giving up.
/// The largest time, size, alignment or offset an instance may hold: 2^48. With at most
/// [`MAX_ROWS`] buffers, every sum the placement core forms stays below 2^64.
pub const MAX_VALUE: u64 = 1 << 48;

/// The most buffers an instance may hold: 2^24.
pub const MAX_ROWS: usize = 1 << 24;

pub fn parse(text: &str) -> Result<(Instance, Columns), Vec<CsvError>> {
    let mut lines = text.split('\n').enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(vec![err(
            1,
            "empty file: expected a header row like id,lower,upper,size",
        )]);
    };
    let names: Vec<String> = header
        .trim_end_matches('\r')
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .collect();
    let find = |aliases: &[&str]| names.iter().position(|n| aliases.contains(&n.as_str()));
    let id = find(&["id", "buffer", "buffer_id"]);
    let lower = find(&["lower", "start", "begin"]);
    let upper = find(&["upper", "end"]);
    let size = find(&["size"]);
    let mut errors = Vec::new();
    for (col, what) in [
        (id, "`id` (or `buffer`, `buffer_id`)"),
        (lower, "`lower` (or `start`, `begin`)"),
        (upper, "`upper` (or `end`)"),
        (size, "`size`"),
    ] {
        if col.is_none() {
            errors.push(err(
                1,
                format!(
                    "the header has no {what} column; MiniMalloc CSV needs id,lower,upper,size (found `{}`)",
                    header.trim()
                ),
            ));
        }
    }
    for n in &names {
        let known = [
            "id",
            "buffer",
            "buffer_id",
            "lower",
            "start",
            "begin",
            "upper",
            "end",
            "size",
            "alignment",
            "hint",
            "gaps",
            "offset",
        ];
        if !known.contains(&n.as_str()) {
            errors.push(err(
                1,
                format!("unknown column `{n}`; the columns are id, lower, upper, size, alignment, hint, gaps, offset"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (id, lower, upper, size) = (id.unwrap(), lower.unwrap(), upper.unwrap(), size.unwrap());
    let inclusive = names[upper] == "end";
    let alignment = find(&["alignment"]);
    let hint = find(&["hint"]);
    let gaps = find(&["gaps"]);
    let offset = find(&["offset"]);

    let mut buffers = Vec::new();
    for (i, raw) in lines {
        let line = i + 1;
        let raw = raw.trim_end_matches('\r');
        if raw.trim().is_empty() {
            break; // MiniMalloc stops at the first empty line
        }
        if errors.len() >= 20 {
            break;
        }
        let fields: Vec<&str> = raw.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            errors.push(err(
                line,
                format!(
                    "{} fields, but the header names {} columns",
                    fields.len(),
                    names.len()
                ),
            ));
            continue;
        }
        if buffers.len() >= MAX_ROWS {
            errors.push(err(
                line,
                format!("more than {MAX_ROWS} buffers (2^24): the instance is too large to place"),
            ));
            break;
        }
        let mut num = |col: usize, what: &str| -> Option<u64> {
            match fields[col].parse::<u64>() {
                Ok(v) if v <= MAX_VALUE => Some(v),
                Ok(v) => {
                    errors.push(err(
                        line,
                        format!("{what} {v} is larger than any instance npusim places (at most 2^48 = {MAX_VALUE})"),
                    ));
                    None
                }
                Err(_) => {
                    errors.push(err(
                        line,
                        format!("{what} `{}` is not a non-negative integer", fields[col]),
                    ));
                    None
                }
            }
        };
        let lo = num(lower, "lower");
        let hi = num(upper, "upper").map(|u| u + inclusive as u64);
        let sz = num(size, "size");
        let al = match alignment {
            Some(c) => num(c, "alignment"),
            None => Some(1),
        };
        let fixed = match offset {
            Some(c) if !fields[c].is_empty() && fields[c] != "-1" => num(c, "offset").map(Some),
            _ => Some(None),
        };
        let hint_v = match hint {
            Some(c) => match fields[c].parse::<i64>() {
                Ok(v) => Some(Some(v)),
                Err(_) => {
                    errors.push(err(
                        line,
                        format!("hint `{}` is not an integer (-1 for none)", fields[c]),
                    ));
                    None
                }
            },
            None => Some(None),
        };
        let gap_list = match gaps {
            Some(c) => match parse_gaps(fields[c], inclusive) {
                Ok(g) => Some(g),
                Err(m) => {
                    errors.push(err(line, m));
                    None
                }
            },
            None => Some(Vec::new()),
        };
        let (Some(lo), Some(hi), Some(sz), Some(al), Some(fixed), Some(hint_v), Some(gap_list)) =
            (lo, hi, sz, al, fixed, hint_v, gap_list)
        else {
            continue;
        };
        let name = read_id(fields[id]);
        if name.is_empty() {
            errors.push(err(line, "empty id"));
        }
        if let Some(problem) = sim::text::name_problem(&name) {
            errors.push(err(line, format!("id: {problem}; {}", sim::text::NAME_FIX)));
        }
        if hi <= lo {
            errors.push(err(
                line,
                format!(
                    "buffer `{name}`: upper {hi} is not after lower {lo}; lifetimes are half-open [lower, upper)"
                ),
            ));
        }
        if al == 0 {
            errors.push(err(
                line,
                format!("buffer `{name}`: alignment 0; use 1 for none"),
            ));
        }
        if let Some(f) = fixed {
            if al > 0 && f % al != 0 {
                errors.push(err(
                    line,
                    format!(
                        "buffer `{name}`: fixed offset {f} is not a multiple of its alignment {al}"
                    ),
                ));
            }
        }
        for g in &gap_list {
            if g.lo < lo || g.hi > hi || g.lo >= g.hi {
                errors.push(err(
                    line,
                    format!(
                        "buffer `{name}`: gap {}-{} is not a non-empty part of its lifetime [{lo}, {hi})",
                        g.lo, g.hi
                    ),
                ));
            }
            if let Some((a, b)) = g.window {
                if a >= b || b > sz {
                    errors.push(err(
                        line,
                        format!("buffer `{name}`: gap window {a}:{b} is not inside its {sz} bytes"),
                    ));
                }
            }
        }
        buffers.push(PackBuffer {
            id: name,
            lower: lo,
            upper: hi,
            size: sz,
            align: al.max(1),
            fixed,
            gaps: gap_list,
            hint: hint_v,
        });
    }
    // every sum of sizes the placement core forms is at most their aligned total
    let total: u128 = buffers
        .iter()
        .map(|b| b.size as u128 + b.align as u128)
        .sum();
    if total > 1 << 62 {
        errors.push(err(
            1,
            format!(
                "the buffers need {total} bytes in all, more than npusim places (at most 2^62)"
            ),
        ));
    }
    if errors.is_empty() {
        // duplicate ids would make the output ambiguous
        let mut ids: Vec<(&str, usize)> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| (b.id.as_str(), i))
            .collect();
        ids.sort_unstable();
        for w in ids.windows(2) {
            if w[0].0 == w[1].0 {
                errors.push(err(
                    w[1].1 + 2,
                    format!("duplicate id `{}`; ids must be unique", w[0].0),
                ));
            }
        }
    }
    if !errors.is_empty() {
        errors.sort_by_key(|e| e.line);
        return Err(errors);
    }
    let columns = Columns {
        alignment: alignment.is_some(),
        hint: hint.is_some(),
        gaps: gaps.is_some(),
    };
    Ok((Instance::new(buffers), columns))
}

/// An id as [`write`] wrote it read back: a cell in double quotes (`""` for a quote inside)
/// is unquoted, and one neutralised against spreadsheet formulas (`'=x`) is the id it was
/// (`=x`). MiniMalloc's own ids are plain, and read as they are.
fn read_id(field: &str) -> String {
    let unquoted = match field.strip_prefix('"').and_then(|f| f.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => field.to_string(),
    };
    sim::text::csv_cell_read(&unquoted).to_string()
}

/// An id as [`write`] writes it: one a spreadsheet would read as a formula (`=x`, `+x`, `-x`,
/// `@x`) gets a leading `'` and double quotes, as OWASP's CSV-injection guidance asks; [`parse`]
/// reads it back as it was.
fn write_id(id: &str) -> String {
    match sim::text::csv_cell(id) {
        std::borrow::Cow::Borrowed(plain) => plain.to_string(),
        std::borrow::Cow::Owned(quoted) => format!("\"{}\"", quoted.replace('"', "\"\"")),
    }
}

fn err(line: usize, message: impl Into<String>) -> CsvError {
    CsvError {
        line,
        message: message.into(),
    }
}

/// `lo-hi` or `lo-hi@wlo:whi`, space-separated.
fn parse_gaps(s: &str, inclusive: bool) -> Result<Vec<Gap>, String> {
    let mut out = Vec::new();
    for item in s.split_whitespace() {
        let bad = || format!("gap `{item}` is not lo-hi or lo-hi@wlo:whi");
        // each number: digits, at most MAX_VALUE like every other value of an instance
        let num = |t: &str| -> Result<u64, String> {
            if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            match t.parse::<u64>() {
                Ok(v) if v <= MAX_VALUE => Ok(v),
                _ => Err(format!(
                    "gap `{item}`: {t} is larger than any instance npusim places (at most 2^48 = {MAX_VALUE})"
                )),
            }
        };
        let (range, window) = match item.split_once('@') {
            Some((r, w)) => (r, Some(w)),
            None => (item, None),
        };
        let (lo, hi) = range.split_once('-').ok_or_else(bad)?;
        let lo = num(lo)?;
        let hi = num(hi)? + inclusive as u64;
        let window = match window {
            Some(w) => {
                let (a, b) = w.split_once(':').ok_or_else(bad)?;
                Some((num(a)?, num(b)?))
            }
            None => None,
        };
        out.push(Gap { lo, hi, window });
    }
    Ok(out)
}

/// Writes the instance with its placement: `id,lower,upper,size`, then `alignment`, `hint` and
/// `gaps` when the input had them or some buffer needs them, then `offset`. Upper values are
/// exclusive.
pub fn write(inst: &Instance, columns: Columns, solution: &Solution) -> String {
    let alignment = columns.alignment || inst.buffers.iter().any(|b| b.align != 1);
    let hint = columns.hint || inst.buffers.iter().any(|b| b.hint.is_some());
    let gaps = columns.gaps || inst.buffers.iter().any(|b| !b.gaps.is_empty());
    let mut out = String::from("id,lower,upper,size");
    if alignment {
        out.push_str(",alignment");
    }
    if hint {
        out.push_str(",hint");
    }
    if gaps {
        out.push_str(",gaps");
    }
    out.push_str(",offset\n");
    for (b, o) in inst.buffers.iter().zip(&solution.offsets) {
        out.push_str(&format!(
            "{},{},{},{}",
            write_id(&b.id),
            b.lower,
            b.upper,
            b.size
        ));
        if alignment {
            out.push_str(&format!(",{}", b.align));
        }
        if hint {
            out.push_str(&format!(",{}", b.hint.unwrap_or(-1)));
        }
        if gaps {
            let g: Vec<String> = b
                .gaps
                .iter()
                .map(|g| match g.window {
                    Some((a, c)) => format!("{}-{}@{a}:{c}", g.lo, g.hi),
                    None => format!("{}-{}", g.lo, g.hi),
                })
                .collect();
            out.push_str(&format!(",{}", g.join(" ")));
        }
        out.push_str(&format!(",{o}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_readme_example() {
        let text = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";
        let (inst, cols) = parse(text).unwrap();
        assert_eq!(inst.len(), 5);
        assert_eq!(inst.buffers[3], PackBuffer::new("b4", 9, 21, 4));
        assert_eq!(cols, Columns::default());
    }

    #[test]
    fn aliases_any_order_and_inclusive_end() {
        let text = "size,end,buffer,start\n4,2,x,0\n\nignored,after,the,blank\n";
        let (inst, _) = parse(text).unwrap();
        assert_eq!(inst.buffers, vec![PackBuffer::new("x", 0, 3, 4)]);
    }

    #[test]
    fn optional_columns_round_trip() {
        let text = "id,lower,upper,size,alignment,hint,gaps,offset\na,0,10,64,32,-1,2-4 6-8@0:32,64\nb,0,5,32,32,7,,-1\n";
        let (inst, cols) = parse(text).unwrap();
        assert_eq!(inst.buffers[0].fixed, Some(64));
        assert_eq!(inst.buffers[1].fixed, None);
        assert_eq!(inst.buffers[1].hint, Some(7));
        assert_eq!(
            inst.buffers[0].gaps,
            vec![
                Gap {
                    lo: 2,
                    hi: 4,
                    window: None
                },
                Gap {
                    lo: 6,
                    hi: 8,
                    window: Some((0, 32))
                }
            ]
        );
        let sol = Solution::from_offsets(&inst, vec![64, 0]);
        let out = write(&inst, cols, &sol);
        assert_eq!(
            out,
            "id,lower,upper,size,alignment,hint,gaps,offset\na,0,10,64,32,-1,2-4 6-8@0:32,64\nb,0,5,32,32,7,,0\n"
        );
        assert_eq!(parse(&out).unwrap().0.buffers[1].fixed, Some(0));
    }

    #[test]
    fn every_problem_is_reported_with_its_line() {
        let text = "id,lower,upper,size\na,0,3,4\nb,5,2,4\nc,x,3,4\nd,0,3\na,0,1,1\n";
        let errs = parse(text).unwrap_err();
        let lines: Vec<usize> = errs.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 4, 5], "{errs:?}");
        assert!(errs[0].message.contains("upper 2 is not after lower 5"));
        assert!(errs[1]
            .message
            .contains("lower `x` is not a non-negative integer"));
        assert!(errs[2]
            .message
            .contains("3 fields, but the header names 4 columns"));
    }

    #[test]
    fn formula_ids_are_written_neutralised_and_read_back_as_they_were() {
        let text =
            "id,lower,upper,size\n=HYPERLINK(\"x\"),0,2,4\n-1,0,2,4\n@a,2,4,4\nplain,2,4,4\n";
        let (inst, cols) = parse(text).unwrap();
        let solution = Solution {
            offsets: vec![0, 4, 0, 4],
            height: 8,
        };
        let out = write(&inst, cols, &solution);
        // OWASP: a leading ' and the cell in double quotes (its quotes doubled)
        assert_eq!(
            out,
            "id,lower,upper,size,offset\n\"'=HYPERLINK(\"\"x\"\")\",0,2,4,0\n\"'-1\",0,2,4,4\n\"'@a\",2,4,4,0\nplain,2,4,4,4\n"
        );
        let (again, _) = parse(&out).unwrap();
        let ids: Vec<&str> = again.buffers.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["=HYPERLINK(\"x\")", "-1", "@a", "plain"]);
    }

    #[test]
    fn ids_with_control_or_bidi_characters_are_refused() {
        let errs = parse("id,lower,upper,size\na\u{1b}[2J,0,1,1\nb\u{202e}c,0,1,1\n").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!((errs[0].line, errs[1].line), (2, 3));
        assert!(errs[0].message.contains("U+001B (ESC)"));
        assert!(!errs[0].message.contains('\u{1b}'));
        assert!(errs[1].message.contains("U+202E"));
    }

    #[test]
    fn header_problems() {
        let errs = parse("name,lower,upper,size\n").unwrap_err();
        assert!(errs.iter().any(|e| e.message.contains("no `id`")));
        assert!(errs
            .iter()
            .any(|e| e.message.contains("unknown column `name`")));
        assert!(parse("").unwrap_err()[0].message.contains("header"));
        let errs = parse("id,lower,upper,size\na,0,1,1\na,1,2,1\n").unwrap_err();
        assert_eq!(errs[0].line, 3);
        assert!(errs[0].message.contains("duplicate id `a`"));
    }
}
