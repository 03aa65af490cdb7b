//! The independent check of a placement, MiniMalloc's validator classes: shape, fixed offsets,
//! range (capacity), alignment, overlap in time and bytes. It shares no code with the solvers.
//!
//! Overlap is found with a sweep over time that keeps the occupied byte ranges in a map by
//! offset: each range that becomes occupied is compared with its neighbours only, so the check
//! is O(n log n), yet it finds an overlap whenever one exists (the ranges already in the map
//! are disjoint, or an overlap among them was reported when the later one arrived). Gaps are
//! honoured: during a gap a buffer occupies only its window, or nothing.

use super::Instance;
use std::collections::BTreeMap;

/// One thing wrong with a placement.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PackViolation {
    #[error("{got} offsets for {want} buffers")]
    Shape { got: usize, want: usize },
    #[error("buffer {id}: fixed at {fixed}, placed at {offset}")]
    MovedFixed { id: String, fixed: u64, offset: u64 },
    #[error("buffer {id}: [{offset}, {end}) exceeds the capacity {capacity}")]
    OutOfRange {
        id: String,
        offset: u64,
        end: u64,
        capacity: u64,
    },
    #[error("buffer {id}: offset {offset} is not a multiple of {align}")]
    Misaligned { id: String, offset: u64, align: u64 },
    #[error("buffers {a} and {b} share bytes [{start}, {end}) at time {time}")]
    Overlap {
        a: String,
        b: String,
        start: u64,
        end: u64,
        time: u64,
    },
}

/// Checks `offsets` for `inst` under `capacity` (`None`: no capacity check). Reports at most
/// 100 overlaps.
pub fn validate(
    inst: &Instance,
    offsets: &[u64],
    capacity: Option<u64>,
) -> Result<(), Vec<PackViolation>> {
    let mut out = Vec::new();
    if offsets.len() != inst.buffers.len() {
        return Err(vec![PackViolation::Shape {
            got: offsets.len(),
            want: inst.buffers.len(),
        }]);
    }
    for (b, &o) in inst.buffers.iter().zip(offsets) {
        if let Some(f) = b.fixed {
            if f != o {
                out.push(PackViolation::MovedFixed {
                    id: b.id.clone(),
                    fixed: f,
                    offset: o,
                });
            }
        }
        if let Some(c) = capacity {
            if o + b.size > c {
                out.push(PackViolation::OutOfRange {
                    id: b.id.clone(),
                    offset: o,
                    end: o + b.size,
                    capacity: c,
                });
            }
        }
        if b.align > 1 && o % b.align != 0 {
            out.push(PackViolation::Misaligned {
                id: b.id.clone(),
                offset: o,
                align: b.align,
            });
        }
    }

    // occupancy segments: (from, to, byte start, byte end, buffer)
    let mut segs: Vec<(u64, u64, u64, u64, usize)> = Vec::new();
    for (i, (b, &o)) in inst.buffers.iter().zip(offsets).enumerate() {
        let mut gaps = b.gaps.clone();
        gaps.sort_by_key(|g| g.lo);
        let mut t = b.lower;
        for g in &gaps {
            if g.lo > t {
                segs.push((t, g.lo, o, o + b.size, i));
            }
            if let Some((w0, w1)) = g.window {
                segs.push((g.lo, g.hi, o + w0, o + w1, i));
            }
            t = t.max(g.hi);
        }
        if t < b.upper {
            segs.push((t, b.upper, o, o + b.size, i));
        }
    }
    segs.retain(|s| s.0 < s.1 && s.2 < s.3);
    // events: ends (0) before starts (1) at equal times: lifetimes are half-open
    let mut events: Vec<(u64, u8, usize)> = Vec::with_capacity(2 * segs.len());
    for (k, s) in segs.iter().enumerate() {
        events.push((s.0, 1, k));
        events.push((s.1, 0, k));
    }
    events.sort_unstable();
    // occupied ranges by (byte start, segment)
    let mut occupied: BTreeMap<(u64, usize), u64> = BTreeMap::new();
    let mut overlaps = 0;
    for (time, kind, k) in events {
        let (_, _, start, end, buf) = segs[k];
        if kind == 0 {
            occupied.remove(&(start, k));
            continue;
        }
        let mut report = |other: usize, s: u64, e: u64| {
            if overlaps < 100 && segs[other].4 != buf {
                overlaps += 1;
                let (a, b) = (buf.min(segs[other].4), buf.max(segs[other].4));
                out.push(PackViolation::Overlap {
                    a: inst.buffers[a].id.clone(),
                    b: inst.buffers[b].id.clone(),
                    start: s.max(start),
                    end: e.min(end),
                    time,
                });
            }
        };
        // the nearest range starting below `start`, and every range starting inside
        if let Some((&(s, other), &e)) = occupied.range(..(start, 0)).next_back() {
            if e > start {
                report(other, s, e);
            }
        }
        for (&(s, other), &e) in occupied.range((start, 0)..(end, 0)) {
            if s >= start && s < end {
                report(other, s, e);
            }
        }
        occupied.insert((start, k), end);
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{Gap, PackBuffer};

    fn readme() -> Instance {
        Instance::new(vec![
            PackBuffer::new("b1", 0, 3, 4),
            PackBuffer::new("b2", 3, 9, 4),
            PackBuffer::new("b3", 0, 9, 4),
            PackBuffer::new("b4", 9, 21, 4),
            PackBuffer::new("b5", 0, 21, 4),
        ])
    }

    #[test]
    fn accepts_the_readme_solution() {
        assert_eq!(validate(&readme(), &[8, 8, 4, 4, 0], Some(12)), Ok(()));
    }

    #[test]
    fn finds_each_kind_of_violation() {
        let inst = readme();
        let e = validate(&inst, &[8, 8, 4, 4], Some(12)).unwrap_err();
        assert!(matches!(e[0], PackViolation::Shape { got: 4, want: 5 }));
        let e = validate(&inst, &[8, 8, 4, 4, 10], Some(12)).unwrap_err();
        assert!(e.contains(&PackViolation::OutOfRange {
            id: "b5".into(),
            offset: 10,
            end: 14,
            capacity: 12
        }));
        // b5 at 6 meets b1/b2 (at 8) and b3/b4 (at 4)
        assert!(e.iter().any(|v| matches!(v, PackViolation::Overlap { .. })));
        let e = validate(&inst, &[8, 8, 5, 4, 0], None).unwrap_err();
        assert!(e
            .iter()
            .any(|v| matches!(v, PackViolation::Overlap { a, b, .. } if a == "b1" && b == "b3")));
        let mut al = inst.clone();
        al.buffers[0].align = 16;
        al.buffers[1].fixed = Some(4);
        let e = validate(&al, &[8, 8, 4, 4, 0], Some(12)).unwrap_err();
        assert!(e.contains(&PackViolation::Misaligned {
            id: "b1".into(),
            offset: 8,
            align: 16
        }));
        assert!(e.contains(&PackViolation::MovedFixed {
            id: "b2".into(),
            fixed: 4,
            offset: 8
        }));
    }

    #[test]
    fn a_range_that_contains_another_is_caught() {
        let inst = Instance::new(vec![
            PackBuffer::new("small", 0, 10, 2),
            PackBuffer::new("big", 5, 6, 100),
        ]);
        let e = validate(&inst, &[50, 0], None).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
    }

    #[test]
    fn gaps_free_their_bytes() {
        let mut a = PackBuffer::new("a", 0, 10, 8);
        a.gaps = vec![Gap {
            lo: 3,
            hi: 6,
            window: Some((0, 2)),
        }];
        let b = PackBuffer::new("b", 3, 6, 6);
        let inst = Instance::new(vec![a, b]);
        // b sits in a's bytes 2..8 while a keeps only 0..2
        assert_eq!(validate(&inst, &[0, 2], None), Ok(()));
        assert!(validate(&inst, &[0, 1], None).is_err());
    }
}
