//! The config numbers `calibrate --fit` may change, each with its physically plausible range
//! (the one table, [`RANGES`], that docs/calibration.md repeats), and the config's text edited
//! in place at a key's value, so that every comment and source elsewhere survives.
//!
//! A key is the number's YAML path in the config with dots: `memory.hbm_bytes_per_cycle`,
//! `vector.ops.vexp.cycles_per_repeat`; a data path is named by its scopes,
//! `paths.gm.l1.bytes_per_cycle` (the entry of `paths` with `from: gm, to: l1`).

use sim::yaml::{self, Node, Value};

/// A config number `--fit` may change and the range a fitted value must stay in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// The keys it covers: `*` stands for any one part (`vector.ops.*.startup`).
    pub pattern: &'static str,
    pub min: i64,
    pub max: i64,
    pub unit: &'static str,
    /// Why that range (for the 910B at 1.8 GHz).
    pub why: &'static str,
}

/// Every number `--fit` may change, with its range; the first pattern a key matches applies.
/// A key that matches none is refused (docs/calibration.md repeats this table).
pub const RANGES: &[Range] = &[
    Range {
        pattern: "paths.gm.*.bytes_per_cycle",
        min: 32,
        max: 256,
        unit: "B/cycle",
        why: "one core's read port from GM (INI-910B2C l2_read_rate 110); 256 B/cycle is 460 GB/s for one core",
    },
    Range {
        pattern: "paths.gm.*.nz_bytes_per_cycle",
        min: 32,
        max: 256,
        unit: "B/cycle",
        why: "as the read port, with the ND -> NZ conversion on the way (PYPTO-CM fits ~96)",
    },
    Range {
        pattern: "paths.ub.gm.bytes_per_cycle",
        min: 32,
        max: 256,
        unit: "B/cycle",
        why: "one core's write port to GM (INI-910B2C ub_to_l2_rate 64)",
    },
    Range {
        pattern: "paths.l0c.gm.bytes_per_cycle",
        min: 32,
        max: 256,
        unit: "B/cycle",
        why: "the fixpipe's write to GM (INI-910B2C l2_write_rate 86)",
    },
    Range {
        pattern: "paths.l0c.*.read_bytes_per_cycle",
        min: 64,
        max: 1024,
        unit: "B/cycle",
        why: "the fixpipe's read of L0C (INI-910B2C l0_c_to_ub_rate 256)",
    },
    Range {
        pattern: "paths.l0c.l1.bytes_per_cycle",
        min: 64,
        max: 1024,
        unit: "B/cycle",
        why: "an on-chip move (INI-910B2C l0_c_to_ub_rate 256)",
    },
    Range {
        pattern: "paths.l1.l0a.bytes_per_cycle",
        min: 64,
        max: 1024,
        unit: "B/cycle",
        why: "INI-910B2C l1_to_l0_a_rate 512; PYPTO-CM's fitted slope 222",
    },
    Range {
        pattern: "paths.l1.l0b.bytes_per_cycle",
        min: 64,
        max: 1024,
        unit: "B/cycle",
        why: "INI-910B2C l1_to_l0_b_rate 256; PYPTO-CM's fitted slope 121",
    },
    Range {
        pattern: "paths.l1.*.bytes_per_cycle",
        min: 32,
        max: 1024,
        unit: "B/cycle",
        why: "an on-chip move out of L1",
    },
    Range {
        pattern: "paths.ub.ub.bytes_per_cycle",
        min: 64,
        max: 512,
        unit: "B/cycle",
        why: "a UB copy on the vector unit: 1 to 4 cycles per 256 B repeat",
    },
    Range {
        pattern: "paths.*.*.startup",
        min: 0,
        max: 2000,
        unit: "cycles",
        why: "a move's issue-to-completion intercept: up to about 1 us",
    },
    Range {
        pattern: "memory.l2_read_bytes_per_cycle",
        min: 32,
        max: 256,
        unit: "B/cycle",
        why: "one core's L2 hit rate (INI-910B2C l2_read_rate 110)",
    },
    Range {
        pattern: "memory.l2_write_bytes_per_cycle",
        min: 32,
        max: 256,
        unit: "B/cycle",
        why: "one core's L2 write rate (INI-910B2C l2_write_rate 86)",
    },
    Range {
        pattern: "memory.l2_chip_bytes_per_cycle",
        min: 1500,
        max: 5000,
        unit: "B/cycle",
        why: "the chip's L2 for all cores (DOC-L2TILE about 7 TB/s = 3888): 2.7 to 9 TB/s, above HBM's peak",
    },
    Range {
        pattern: "memory.l2_latency",
        min: 0,
        max: 1000,
        unit: "cycles",
        why: "what an L2 hit adds to its path's startup: 0 when the startups hold it (PYPTO-CM), below an HBM miss",
    },
    Range {
        pattern: "memory.hbm_bytes_per_cycle",
        min: 400,
        max: 1000,
        unit: "B/cycle",
        why: "the chip's HBM: 0.72 to 1.8 TB/s at 1.8 GHz; 1.8 TB/s is the stated peak (CATLASS)",
    },
    Range {
        pattern: "memory.hbm_read_latency",
        min: 200,
        max: 3000,
        unit: "cycles",
        why: "an L2 miss: 0.1 to 1.7 us (PYPTO-CM models 1,400)",
    },
    Range {
        pattern: "vector.default.cycles_per_repeat",
        min: 1,
        max: 8,
        unit: "cycles",
        why: "per 256 B repeat: 1 is the stated 11.06 TOPS fp16 peak, PYPTO-CM models 2 to 4",
    },
    Range {
        pattern: "vector.ops.*.cycles_per_repeat",
        min: 1,
        max: 8,
        unit: "cycles",
        why: "per 256 B repeat: 1 is the stated 11.06 TOPS fp16 peak, PYPTO-CM models 2 to 4",
    },
    Range {
        pattern: "vector.default.startup",
        min: 0,
        max: 100,
        unit: "cycles",
        why: "an op's pipeline latency (PYPTO-CM: 4 to 23; its fitted intercepts up to 52)",
    },
    Range {
        pattern: "vector.ops.*.startup",
        min: 0,
        max: 100,
        unit: "cycles",
        why: "an op's pipeline latency (PYPTO-CM: 4 to 23; its fitted intercepts up to 52)",
    },
    Range {
        pattern: "cube.startup",
        min: 0,
        max: 200,
        unit: "cycles",
        why: "a matmul's latency (PYPTO-CM fits 21)",
    },
    Range {
        pattern: "cross_core.latency",
        min: 10,
        max: 2000,
        unit: "cycles",
        why: "a cross-core flag through the FFTS: up to about 1 us",
    },
    Range {
        pattern: "launch_cost.fixed_cycles",
        min: 0,
        max: 40000,
        unit: "cycles",
        why: "a launch's start: 0 to 22 us; CATLASS-PERF states about 20-21 us for a whole full-core launch",
    },
    Range {
        pattern: "launch_cost.per_core_cycles",
        min: 0,
        max: 2000,
        unit: "cycles",
        why: "each core's start: 0 to 1.1 us; a full-core mixed launch (72 cores) at most 80 us beside the fixed part",
    },
    Range {
        pattern: "sync.flag_latency",
        min: 0,
        max: 100,
        unit: "cycles",
        why: "a flag between two pipes of one core",
    },
    Range {
        pattern: "scalar.issue_cycles",
        min: 1,
        max: 8,
        unit: "cycles",
        why: "the scalar unit's issue of one instruction",
    },
    Range {
        pattern: "scalar.loop_cycles",
        min: 1,
        max: 32,
        unit: "cycles",
        why: "a counter update, a compare and a branch",
    },
    Range {
        pattern: "scalar.branch_cycles",
        min: 1,
        max: 32,
        unit: "cycles",
        why: "a compare and a branch",
    },
    Range {
        pattern: "scalar.gm_latency",
        min: 50,
        max: 2000,
        unit: "cycles",
        why: "a scalar access to GM: an L2 hit to an HBM miss",
    },
];

/// The range of `key`: the first pattern it matches.
pub fn range_of(key: &str) -> Option<&'static Range> {
    let parts: Vec<&str> = key.split('.').collect();
    RANGES.iter().find(|r| {
        let pattern: Vec<&str> = r.pattern.split('.').collect();
        pattern.len() == parts.len() && pattern.iter().zip(&parts).all(|(p, k)| *p == "*" || p == k)
    })
}

/// Why a key cannot be fitted: the message and a hint.
pub type Refused = (String, String);

/// A key found in a config's text: its value and where the value is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub key: String,
    pub range: Range,
    pub value: i64,
    /// 1-based line of the value.
    pub line: u32,
    /// Byte range of the value's text.
    pub start: usize,
    pub end: usize,
}

/// Finds `key` in the config `text` (named `config` in messages). The key must have a range
/// and name an integer the config states.
pub fn locate(text: &str, config: &str, key: &str) -> Result<Located, Refused> {
    let Some(range) = range_of(key) else {
        let list: Vec<&str> = RANGES.iter().map(|r| r.pattern).collect();
        return Err((
            format!("`{key}` has no fitting range, so it cannot be fitted"),
            format!(
                "the numbers --fit may change (* is any name): {}",
                list.join(", ")
            ),
        ));
    };
    let root = yaml::parse(text).map_err(|e| {
        (
            format!("{config}: YAML syntax error: {}", e.message),
            "fix the config first".to_string(),
        )
    })?;
    let node = find(&root, key).ok_or_else(|| {
        (
            format!("config {config} has no `{key}`"),
            "--fit changes numbers the config states; write the key into the config first"
                .to_string(),
        )
    })?;
    let Value::Int(value) = node.value else {
        return Err((
            format!("`{key}` in config {config} is not an integer"),
            "config numbers are whole".into(),
        ));
    };
    let start = crate::input::byte_offset(text, node.line, node.column)
        .expect("the parser's position is in the text");
    let len = text[start..]
        .find(|c: char| !(c.is_ascii_digit() || c == '-' || c == '+'))
        .unwrap_or(text.len() - start);
    // a value written other than in plain digits (0x10, 1_000) is not edited in place
    if text[start..start + len].parse::<i64>() != Ok(value) {
        return Err((
            format!("`{key}` in config {config} is not written as plain digits"),
            "write it as a decimal integer".into(),
        ));
    }
    Ok(Located {
        key: key.to_string(),
        range: *range,
        value,
        line: node.line,
        start,
        end: start + len,
    })
}

/// The node of `key` under `root`: a dotted path, where `paths.FROM.TO` picks the entry of the
/// `paths` list with that `from` and `to`.
fn find<'n>(root: &'n Node, key: &str) -> Option<&'n Node> {
    let parts: Vec<&str> = key.split('.').collect();
    let (mut at, rest) = match parts[..] {
        ["paths", from, to, ref rest @ ..] => {
            let Value::Seq(items) = &root.get("paths")?.value else {
                return None;
            };
            let is = |n: &Node, k: &str, v: &str| matches!(&n.get(k).map(|x| &x.value), Some(Value::Str(s)) if s == v);
            let entry = items
                .iter()
                .find(|n| is(n, "from", from) && is(n, "to", to))?;
            (entry, rest)
        }
        _ => (root, &parts[..]),
    };
    for p in rest {
        at = at.get(p)?;
    }
    Some(at)
}

/// `text` with each located value replaced by the value at the same index of `values`.
pub fn with_values(text: &str, located: &[Located], values: &[i64]) -> String {
    edit(text, located, values, &[])
}

/// [`with_values`], with `comments[k]` (lines without `#`) written as comment lines above the
/// line of `located[k]`'s value, at that line's indentation; keys on one line share its
/// comment block, in key order.
pub fn edit(text: &str, located: &[Located], values: &[i64], comments: &[Vec<String>]) -> String {
    let mut order: Vec<usize> = (0..located.len()).collect();
    order.sort_by_key(|&k| located[k].start);
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    // the comment blocks go before each value's line: collect them per line start
    let line_start = |pos: usize| text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let mut blocks: Vec<(usize, Vec<String>)> = Vec::new();
    for &k in &order {
        let Some(lines) = comments.get(k) else {
            continue;
        };
        let ls = line_start(located[k].start);
        match blocks.iter_mut().find(|(s, _)| *s == ls) {
            Some((_, b)) => b.extend(lines.iter().cloned()),
            None => blocks.push((ls, lines.clone())),
        }
    }
    let mut b = 0;
    for &k in &order {
        let l = &located[k];
        while b < blocks.len() && blocks[b].0 <= l.start {
            let ls = blocks[b].0;
            out.push_str(&text[at..ls]);
            let indent: String = text[ls..].chars().take_while(|c| *c == ' ').collect();
            // a list entry's comment lines up with the entry's `-`
            for line in &blocks[b].1 {
                out.push_str(&format!("{indent}# {line}\n"));
            }
            at = ls;
            b += 1;
        }
        out.push_str(&text[at..l.start]);
        out.push_str(&values[k].to_string());
        at = l.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "name: x   # the name
memory:
  hbm_bytes_per_cycle: 768      # INI: the chip's rate
  l2_latency: 0x10
paths:
  - { from: gm,  to: ub,  pipe: mte2, bytes_per_cycle: 110, startup: 50 }   # source A
  - { from: ub,  to: gm,  pipe: mte3, bytes_per_cycle: 64,  startup: 20 }   # source B
vector:
  ops:
    vexp: { cycles_per_repeat: 4, startup: 12 }
";

    #[test]
    fn keys_match_the_first_range_that_fits() {
        assert_eq!(range_of("paths.gm.l1.bytes_per_cycle").unwrap().max, 256);
        assert_eq!(range_of("paths.l1.l0a.bytes_per_cycle").unwrap().max, 1024);
        assert_eq!(range_of("paths.l1.bt.bytes_per_cycle").unwrap().min, 32);
        assert_eq!(range_of("paths.ub.gm.startup").unwrap().max, 2000);
        assert_eq!(range_of("vector.ops.vexp.startup").unwrap().max, 100);
        assert!(range_of("clock_mhz").is_none());
        assert!(range_of("memory").is_none());
        assert!(range_of("memory.hbm_bytes_per_cycle.x").is_none());
        // every pattern's range is a range
        for r in RANGES {
            assert!(r.min < r.max, "{}", r.pattern);
        }
    }

    /// docs/calibration.md repeats the table: a range changed here must change there.
    #[test]
    fn the_docs_state_every_range() {
        let docs = include_str!("../../docs/calibration.md");
        for r in RANGES {
            let row = format!(
                "| `{}` | {}..{} | {} | {} |",
                r.pattern, r.min, r.max, r.unit, r.why
            );
            assert!(
                docs.contains(&row),
                "docs/calibration.md lacks the row\n{row}"
            );
        }
        let rows = docs
            .lines()
            .filter(|l| l.starts_with("| `") && l.contains(".."))
            .count();
        assert_eq!(
            rows,
            RANGES.len(),
            "docs/calibration.md has a range row the table lacks"
        );
    }

    #[test]
    fn keys_are_found_where_they_are_written() {
        let l = locate(CONFIG, "c.yaml", "paths.ub.gm.bytes_per_cycle").unwrap();
        assert_eq!((l.value, l.line), (64, 7));
        assert_eq!(&CONFIG[l.start..l.end], "64");
        let l = locate(CONFIG, "c.yaml", "vector.ops.vexp.cycles_per_repeat").unwrap();
        assert_eq!((l.value, l.line), (4, 10));
        let (m, h) = locate(CONFIG, "c.yaml", "clock_mhz").unwrap_err();
        assert!(m.contains("no fitting range"), "{m}");
        assert!(h.contains("memory.hbm_bytes_per_cycle"), "{h}");
        let (m, _) = locate(CONFIG, "c.yaml", "paths.gm.l1.startup").unwrap_err();
        assert_eq!(m, "config c.yaml has no `paths.gm.l1.startup`");
        let (m, _) = locate(CONFIG, "c.yaml", "memory.l2_latency").unwrap_err();
        assert!(m.contains("plain digits"), "{m}");
    }

    #[test]
    fn edits_change_only_the_values_and_keep_every_comment() {
        let keys = [
            "paths.gm.ub.startup",
            "memory.hbm_bytes_per_cycle",
            "paths.gm.ub.bytes_per_cycle",
        ];
        let located: Vec<Located> = keys
            .iter()
            .map(|k| locate(CONFIG, "c.yaml", k).unwrap())
            .collect();
        assert_eq!(
            with_values(CONFIG, &located, &[7, 883, 126]),
            CONFIG
                .replace("768 ", "883 ")
                .replace("110, startup: 50", "126, startup: 7")
        );
        let comments = vec![
            vec!["startup fitted".to_string()],
            vec!["hbm fitted".to_string(), "second line".to_string()],
            vec!["rate fitted".to_string()],
        ];
        let edited = edit(CONFIG, &located, &[7, 883, 126], &comments);
        assert_eq!(
            edited,
            "name: x   # the name
memory:
  # hbm fitted
  # second line
  hbm_bytes_per_cycle: 883      # INI: the chip's rate
  l2_latency: 0x10
paths:
  # rate fitted
  # startup fitted
  - { from: gm,  to: ub,  pipe: mte2, bytes_per_cycle: 126, startup: 7 }   # source A
  - { from: ub,  to: gm,  pipe: mte3, bytes_per_cycle: 64,  startup: 20 }   # source B
vector:
  ops:
    vexp: { cycles_per_repeat: 4, startup: 12 }
"
        );
        // still the same document, with the new numbers
        let parsed = yaml::parse(&edited).unwrap();
        assert_eq!(
            find(&parsed, "paths.gm.ub.startup").unwrap().value,
            Value::Int(7)
        );
    }
}
