//! An independent check of a finished [`Plan`]: it reads only the program, the config, the plan
//! and one lifetime per buffer, never the planner's own tables, so a planner bug cannot hide
//! itself. Checks (DESIGN §5, `reference/hivm-planmemory.md` §1.9 Stage 0):
//! - every buffer of a scope of the core has a plan, with at least one offset per declared slot
//!   (exactly one for `at:` buffers; more when it became a multi-buffer) and slots at least
//!   as large as the buffer;
//! - every offset is a multiple of the scope alignment (from the config);
//! - every slot [offset, offset + bytes) lies inside the scope capacity (the plan's, which may be
//!   overridden);
//! - the slots of a multi-buffer do not overlap each other;
//! - two different storage entries whose lifetimes share a position share no byte, in any slot;
//!   one shared position is accepted only for pairs listed in `allowed_touch` (explicit inplace);
//! - a `unique: true` buffer shares no byte with another entry, whatever the lifetimes;
//! - `share:` members have their target's offsets (they are the same entry, so exempt from the
//!   overlap test). Views are never allocated. `at:` buffers are checked like the others.

use crate::liveness::Interval;
use crate::plan::Plan;
use sim::program::Program;
use sim::{BufferId, Config, Space};

/// One problem found in a plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("buffer {buffer}: scope {scope:?} has no plan")]
    MissingScope { buffer: String, scope: Space },
    #[error("buffer {buffer}: {got} offsets for {want} declared slots")]
    SlotCount {
        buffer: String,
        got: usize,
        want: usize,
    },
    #[error("buffer {buffer}: slot of {got} bytes holds {want} bytes")]
    SlotTooSmall { buffer: String, got: u64, want: u64 },
    #[error("buffer {buffer} slot {slot}: offset {offset} is not a multiple of {align}")]
    Misaligned {
        buffer: String,
        slot: usize,
        offset: u64,
        align: u64,
    },
    #[error("buffer {buffer} slot {slot}: bytes [{start}, {end}) exceed the capacity {capacity}")]
    OutOfCapacity {
        buffer: String,
        slot: usize,
        start: u64,
        end: u64,
        capacity: u64,
    },
    #[error("buffer {buffer}: slots {a} and {b} overlap at bytes [{start}, {end})")]
    SlotsOverlap {
        buffer: String,
        a: usize,
        b: usize,
        start: u64,
        end: u64,
    },
    #[error("buffers {a} slot {slot_a} and {b} slot {slot_b} share bytes [{start}, {end}) while both live at positions {}..={}", .positions.first, .positions.last)]
    LiveOverlap {
        a: String,
        slot_a: usize,
        b: String,
        slot_b: usize,
        start: u64,
        end: u64,
        /// The first shared interval of the two lifetimes.
        positions: Interval,
    },
    #[error(
        "unique buffer {a} slot {slot_a} shares bytes [{start}, {end}) with {b} slot {slot_b}"
    )]
    UniqueShared {
        a: String,
        slot_a: usize,
        b: String,
        slot_b: usize,
        start: u64,
        end: u64,
    },
    #[error("buffer {buffer} shares {target} but has offsets {got:?}, not {want:?}")]
    ShareMismatch {
        buffer: String,
        target: String,
        got: Vec<u64>,
        want: Vec<u64>,
    },
}

/// [`validate_with_touch`] with no pair allowed to touch.
pub fn validate(
    program: &Program,
    config: &Config,
    plan: &Plan,
    lifetimes: &[Vec<Interval>],
) -> Result<(), Vec<Violation>> {
    validate_with_touch(program, config, plan, lifetimes, &[])
}

/// Checks `plan` (module docs). `lifetimes` has one entry per buffer ([`BufferId`] index), e.g.
/// [`crate::Liveness::buffer_lifetimes`]; `allowed_touch` lists buffer pairs (either order)
/// whose lifetimes may share exactly one position.
pub fn validate_with_touch(
    program: &Program,
    config: &Config,
    plan: &Plan,
    lifetimes: &[Vec<Interval>],
    allowed_touch: &[(BufferId, BufferId)],
) -> Result<(), Vec<Violation>> {
    let mut out = Vec::new();
    let name = |b: usize| program.buffers[b].name.clone();
    let core = config.cores.get(program.core.index());
    let align_of = |s: Space| {
        core.and_then(|c| c.scopes.iter().find(|x| x.space == s))
            .map(|x| x.align)
    };
    // the share root of each buffer, computed here rather than taken from the planner
    let n = program.buffers.len();
    let root: Vec<usize> = (0..n)
        .map(|i| {
            let mut b = i;
            for _ in 0..n {
                match program.buffers[b].share {
                    Some(next) => b = next.index(),
                    None => break,
                }
            }
            b
        })
        .collect();

    // per-buffer checks; `slots[b]` = the byte ranges checked pairwise afterwards
    let mut slots: Vec<Vec<(u64, u64)>> = vec![Vec::new(); n];
    for (i, buf) in program.buffers.iter().enumerate() {
        let Some(bp) = plan.buffers.get(i) else {
            out.push(Violation::SlotCount {
                buffer: name(i),
                got: 0,
                want: buf.multi as usize,
            });
            continue;
        };
        let Some(sp) = plan.scope(buf.scope) else {
            out.push(Violation::MissingScope {
                buffer: name(i),
                scope: buf.scope,
            });
            continue;
        };
        // more slots than declared: the buffer became a multi-buffer (inplaced into one, or
        // upgraded at level 1); its extra slots are checked like any other
        let want = buf.at.as_ref().map_or(buf.multi as usize, |a| a.len());
        let count_ok = match buf.at {
            Some(_) => bp.offsets.len() == want,
            None => bp.offsets.len() >= want.max(1),
        };
        if !count_ok {
            out.push(Violation::SlotCount {
                buffer: name(i),
                got: bp.offsets.len(),
                want,
            });
        }
        if bp.bytes < buf.bytes {
            out.push(Violation::SlotTooSmall {
                buffer: name(i),
                got: bp.bytes,
                want: buf.bytes,
            });
        }
        let align = align_of(buf.scope).unwrap_or(sp.align).max(1);
        for (s, &o) in bp.offsets.iter().enumerate() {
            if o % align != 0 {
                out.push(Violation::Misaligned {
                    buffer: name(i),
                    slot: s,
                    offset: o,
                    align,
                });
            }
            if o + bp.bytes > sp.capacity {
                out.push(Violation::OutOfCapacity {
                    buffer: name(i),
                    slot: s,
                    start: o,
                    end: o + bp.bytes,
                    capacity: sp.capacity,
                });
            }
            slots[i].push((o, o + bp.bytes));
        }
        for a in 0..slots[i].len() {
            for b in a + 1..slots[i].len() {
                if let Some((start, end)) = overlap(slots[i][a], slots[i][b]) {
                    out.push(Violation::SlotsOverlap {
                        buffer: name(i),
                        a,
                        b,
                        start,
                        end,
                    });
                }
            }
        }
        let r = root[i];
        if r != i && buf.at.is_none() && program.buffers[r].at.is_none() {
            let want: Vec<u64> = plan
                .buffers
                .get(r)
                .map_or(Vec::new(), |p| p.offsets.clone());
            if !want.starts_with(&bp.offsets) || bp.offsets.is_empty() {
                out.push(Violation::ShareMismatch {
                    buffer: name(i),
                    target: name(r),
                    got: bp.offsets.clone(),
                    want,
                });
            }
        }
    }

    // pairwise: different entries in one scope
    let empty = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let (ba, bb) = (&program.buffers[a], &program.buffers[b]);
            if ba.scope != bb.scope || root[a] == root[b] {
                continue;
            }
            let unique = ba.unique || bb.unique;
            let la = lifetimes.get(a).unwrap_or(&empty);
            let lb = lifetimes.get(b).unwrap_or(&empty);
            let live = first_shared(la, lb).filter(|i| {
                let touch_ok = allowed_touch.iter().any(|&(x, y)| {
                    let pair = (root[x.index()], root[y.index()]);
                    pair == (root[a], root[b]) || pair == (root[b], root[a])
                });
                // Stage 0: a single shared position is a conflict unless explicitly allowed
                !(touch_ok && i.first == i.last && single_point(la, lb))
            });
            if !unique && live.is_none() {
                continue;
            }
            for (sa, &ra) in slots[a].iter().enumerate() {
                for (sb, &rb) in slots[b].iter().enumerate() {
                    let Some((start, end)) = overlap(ra, rb) else {
                        continue;
                    };
                    if unique {
                        let (u, o, su, so) = if ba.unique {
                            (a, b, sa, sb)
                        } else {
                            (b, a, sb, sa)
                        };
                        out.push(Violation::UniqueShared {
                            a: name(u),
                            slot_a: su,
                            b: name(o),
                            slot_b: so,
                            start,
                            end,
                        });
                    } else if let Some(positions) = live {
                        out.push(Violation::LiveOverlap {
                            a: name(a),
                            slot_a: sa,
                            b: name(b),
                            slot_b: sb,
                            start,
                            end,
                            positions,
                        });
                    }
                }
            }
        }
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// The shared byte range of two half-open ranges.
fn overlap(a: (u64, u64), b: (u64, u64)) -> Option<(u64, u64)> {
    let start = a.0.max(b.0);
    let end = a.1.min(b.1);
    (start < end).then_some((start, end))
}

/// The first shared interval of two inclusive interval lists (kept here rather than shared
/// with the liveness module, so that the validator stays an independent code path).
fn first_shared(a: &[Interval], b: &[Interval]) -> Option<Interval> {
    let mut best: Option<Interval> = None;
    for x in a {
        for y in b {
            let first = x.first.max(y.first);
            let last = x.last.min(y.last);
            if first <= last && best.is_none_or(|b| first < b.first) {
                best = Some(Interval { first, last });
            }
        }
    }
    best
}

/// Whether the two lifetimes share exactly one position in total.
fn single_point(a: &[Interval], b: &[Interval]) -> bool {
    let mut shared = 0usize;
    for x in a {
        for y in b {
            let first = x.first.max(y.first);
            let last = x.last.min(y.last);
            if first <= last {
                shared += last - first + 1;
            }
        }
    }
    shared == 1
}
