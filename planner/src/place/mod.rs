//! Address assignment of every on-chip scope, with HIVM PlanMemory's reuse levels 2/1/0
//! (AscendNPU-IR): the options, the [`place`]/[`plan`] entry points and the per-scope driver.
//!
//! Per scope of the core:
//! 1. **Storage entries** (`entries`): one per liveness entry, inplace pairs merged; `at:`
//!    entries are fixed, they occupy their bytes for their lifetime and never move.
//! 2. **Sequential** (`sequential`) when the running sum (first-write order, slot 0 of every
//!    entry, then the extra slots, stepping over fixed ranges) fits: nothing shares bytes, so
//!    nothing needs synchronising.
//! 3. Otherwise **reuse** (`first_fit`): first fit in HIVM's planning order with levels 2/1/0
//!    and rollback, on the data structures of `index`; with `--placement exact`, a scope first
//!    fit cannot place goes to the complete search (`exact`).
//! 4. A scope nothing places is an overflow (`overflow`).
//!
//! Dependencies between the submodules run one way: `sequential` and `index` use no sibling;
//! `entries` uses `sequential`; `first_fit` uses `entries` and `index`; `overflow` uses
//! `entries` and `first_fit`; `exact` uses `entries` only; this module uses them all. So the
//! exact search reads storage entries without depending on the placer, and the diagnostic
//! only runs first fit's unbounded level 0 for its N.

/// Storage entries, planning order, interval and class helpers.
mod entries;
/// The complete search for a scope first fit cannot place.
mod exact;
/// First fit with levels 2/1/0 and rollback.
mod first_fit;
/// The placer's undoable data structures.
mod index;
/// The overflow diagnostic and the peak of live bytes.
mod overflow;
/// The running sum and the first-write order (no storage entries needed).
mod sequential;

pub use entries::{planning_order, storage_entries, Slot, StorageEntry};

use crate::inplace::AsWritten;
use crate::liveness::{Liveness, LivenessMode};
use crate::plan::*;
use entries::entries_in_order;
use first_fit::Placer;
use overflow::{overflow, peak_bytes};
use sequential::{gen_order, running_sum, unplaced_buffers};
use sim::program::Program;
use sim::{BufferId, Config, OpId, Space};

/// Knobs of [`plan`] and [`crate::plan_program`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// The highest reuse level tried (0..=2; larger values count as 2).
    pub max_level: u8,
    /// Scope capacities in bytes that replace the config's.
    pub capacities: Vec<(Space, u64)>,
    /// The loop rule of liveness ([`crate::plan_program`] only; [`place`] takes a computed
    /// [`Liveness`]).
    pub liveness: LivenessMode,
    /// When inplace pairs are applied.
    pub inplace: InplacePolicy,
    /// What happens when first fit cannot place a scope.
    pub placement: PlacementMode,
    /// The exact search's budget per scope (`PlacementMode::Exact`).
    pub exact_time_limit: std::time::Duration,
    /// Plan a program that reads a buffer before writing it (`npusim opt -hivm-inject-sync`
    /// on a lit test's planned function) instead of refusing it: the buffer is live from the
    /// program's start.
    pub reads_unwritten: bool,
    /// Try an op's inputs last first for inplace (`npusim opt`'s fallback for the inputs
    /// [`PlanOptions::kill_order`] does not list).
    pub inplace_last_input_first: bool,
    /// Let an output take the address of a buffer an input `select` names (`npusim opt`:
    /// HIVM inplaces through an `scf.if` result or a block argument).
    pub inplace_through_select: bool,
    /// HIVM's kill order (`npusim opt`, from its emulation of PlanMemory's shuffled liveness,
    /// `sim::mlir::hivm_live`): per op, the buffers that die there in the order PlanMemory tries
    /// them for inplace. An op listed here tries these of its inputs first, in this order, then
    /// its other inputs in the order above. Sorted by op. Empty for npusim's own programs.
    pub kill_order: Vec<(OpId, Vec<BufferId>)>,
    /// HIVM's loop gen order (`npusim opt`, from the same emulation): per loop, the buffers
    /// declared before it and first written in it, in the order PlanMemory gens them at the
    /// loop's start. Each list's buffers keep the places they hold in the gen order, taken in
    /// the list's order. Empty for npusim's own programs.
    pub loop_gen_order: Vec<Vec<BufferId>>,
    /// `(buffer, loop)`, sorted: the buffer's alloc comes after the loop in the source (an MLIR
    /// alloc mid-block), so scoped liveness does not gen it at the loop's begin. A YAML
    /// buffer is declared at its block's start: empty.
    pub allocs_after: Vec<(BufferId, OpId)>,
    /// Scoped liveness only: a buffer declared in a loop is a new value every iteration (an
    /// MLIR alloc in a loop body), so nothing of it is carried round the back edge: HIVM's
    /// gen..kill from its first touch to its last (`npusim opt`). Off, a value a YAML program
    /// does carry round stays live, as the soundness oracle requires.
    pub fresh_loop_allocs: bool,
    /// Per op, sorted: what HIVM's inplace rule reads from the op's operands as MLIR writes
    /// them where npusim's program does not show it (`npusim opt`, from the lowering). Empty
    /// for npusim's own programs.
    pub as_written: Vec<(OpId, AsWritten)>,
    /// A FIX op's source is not a DMA buffer (`npusim opt`): bishengir-opt 1.2.0's
    /// `OptMemPlanForDma` counts only MTE2 destinations and MTE3 sources, so at level 2 an
    /// L0C buffer a fixpipe reads shares bytes with others by lifetime. Off, npusim's own
    /// plans keep HIVM's documented class (§1.8), which counts FIX sources too.
    pub dma_without_fix: bool,
    /// Try HIVM's stage 2 between levels 2 and 1 (`npusim opt`): a slot may share bytes with
    /// any slot outside its own innermost loop (PlanMemory's `PipeConflictInSameLoop`), even
    /// one of another pipeline class. Off, npusim's own plans keep levels 2/1/0.
    pub hivm_stage2: bool,
}

/// `order` with each list's buffers in the places they hold there, taken in the list's order
/// ([`PlanOptions::loop_gen_order`]); buffers a list names but `order` lacks are skipped.
fn with_loop_gen_order(mut order: Vec<BufferId>, lists: &[Vec<BufferId>]) -> Vec<BufferId> {
    for list in lists {
        let mut slots = Vec::new();
        let mut members = Vec::new();
        for b in list {
            if let Some(i) = order.iter().position(|x| x == b) {
                if !slots.contains(&i) {
                    slots.push(i);
                    members.push(*b);
                }
            }
        }
        slots.sort_unstable();
        for (slot, b) in slots.into_iter().zip(members) {
            order[slot] = b;
        }
    }
    order
}

/// `--placement`: first fit alone, or first fit then the exact search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlacementMode {
    /// HIVM's first fit with levels 2/1/0 and rollback; a scope it cannot place overflows.
    #[default]
    FirstFit,
    /// When first fit fails, the placement core's complete search places the scope by
    /// lifetimes alone ([`crate::pack::exact`]); only a scope no placement fits overflows
    /// (or one the search cannot settle within its time limit).
    Exact,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_level: 2,
            capacities: Vec::new(),
            liveness: LivenessMode::Precise,
            inplace: InplacePolicy::Always,
            placement: PlacementMode::FirstFit,
            exact_time_limit: std::time::Duration::from_secs(10),
            reads_unwritten: false,
            inplace_last_input_first: false,
            inplace_through_select: false,
            kill_order: Vec::new(),
            loop_gen_order: Vec::new(),
            allocs_after: Vec::new(),
            fresh_loop_allocs: false,
            as_written: Vec::new(),
            dma_without_fix: false,
            hivm_stage2: false,
        }
    }
}

/// When an op's output may take its dying input's address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InplacePolicy {
    /// Always, as HIVM does: the sync pass orders whatever shares bytes (`sync: auto`).
    #[default]
    Always,
    /// Only in a scope that does not fit without it. A `sync: manual` program's own flags were
    /// written for disjoint buffers, so bytes are shared only when there is no other way.
    WhenNeeded,
}

/// A plan with how it was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub plan: Plan,
    /// Single buffers upgraded to multi-buffers at level 1, with every slot offset (also in
    /// the plan's `offsets`).
    pub upgraded: Vec<(BufferId, Vec<u64>)>,
    /// The inplace pairs `(gen, kill)` applied, in the order given.
    pub inplace: Vec<(BufferId, BufferId)>,
}

/// Plans every on-chip scope of the program's core (module docs). `inplace` lists accepted
/// `(gen, kill)` pairs; `touch` lists pairs whose lifetimes may share one position (refused
/// multi-buffer inplace, HIVM `inplacableBufferPairs`).
pub fn plan(
    program: &Program,
    config: &Config,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    touch: &[(BufferId, BufferId)],
    opts: &PlanOptions,
) -> Result<Plan, PlanError> {
    place(program, config, live, inplace, touch, opts).map(|p| p.plan)
}

/// [`plan`], with the level-1 upgrades.
pub fn place(
    program: &Program,
    config: &Config,
    live: &Liveness,
    inplace: &[(BufferId, BufferId)],
    touch: &[(BufferId, BufferId)],
    opts: &PlanOptions,
) -> Result<Placement, PlanError> {
    let core = config.core(program.core);
    let max = opts.max_level.min(2);
    let mut buffers = unplaced_buffers(program);
    let mut scopes = Vec::new();
    let mut warnings = Vec::new();
    let mut upgraded = Vec::new();
    let mut applied = Vec::new();

    let first_writes = with_loop_gen_order(gen_order(program, live), &opts.loop_gen_order);
    for sc in &core.scopes {
        let space = sc.space;
        let align = sc.plan_align.max(1);
        let cap = opts
            .capacities
            .iter()
            .find(|c| c.0 == space)
            .map_or(sc.bytes, |c| c.1);
        let in_scope: Vec<(BufferId, BufferId)> = inplace
            .iter()
            .copied()
            .filter(|&(g, k)| program.buffer(g).scope == space && program.buffer(k).scope == space)
            .collect();
        let mut entries = entries_in_order(program, live, &in_scope, space, align, &first_writes);
        let mut with_inplace = true;
        if opts.inplace == InplacePolicy::WhenNeeded {
            // without pairs in this scope, `entries` is already the disjoint set
            let disjoint = (!in_scope.is_empty())
                .then(|| entries_in_order(program, live, &[], space, align, &first_writes));
            let side_by_side = sequential(disjoint.as_deref().unwrap_or(&entries), align).end;
            if side_by_side <= cap {
                if let Some(d) = disjoint {
                    entries = d;
                }
                with_inplace = false;
            } else {
                warnings.push(format!(
                    "{}: the buffers do not fit side by side ({side_by_side} bytes of {cap}), so some share bytes (inplace or reuse); the program's own flags must order every access to shared bytes",
                    space.yaml_name(),
                ));
            }
        }
        // the loader checks `at:` against the config's capacity; `--capacity` may shrink it
        if let Some((e, end)) = entries.iter().find_map(|e| {
            let end = e.fixed.as_ref()?.iter().map(|o| o + e.size).max()?;
            (end > cap).then_some((e, end))
        }) {
            return Err(PlanError::Overflow {
                space,
                required_bits: end * 8,
                available_bits: cap * 8,
                largest: vec![(
                    format!("{} (fixed by `at:`, ends at byte {end})", e.name(program)),
                    e.size * e.multi as u64,
                )],
                peak: None,
                peak_op: None,
            });
        }
        if with_inplace {
            applied.extend(in_scope.iter().copied());
        }
        let peak_live = peak_bytes(&entries).map_or(0, |(_, b)| b);
        let planned: Vec<usize> = (0..entries.len())
            .filter(|&e| entries[e].fixed.is_none())
            .collect();
        let required: u64 = planned
            .iter()
            .map(|&e| entries[e].size * entries[e].multi as u64)
            .sum();

        // sequential when the running sum fits
        let Sequential {
            offsets: seq_offs,
            end: seq_used,
            fixed,
        } = sequential(&entries, align);

        let mut offsets: Vec<Vec<u64>> = entries
            .iter()
            .map(|e| e.fixed.clone().unwrap_or_default())
            .collect();
        let mut levels: Vec<Option<u8>> = vec![None; entries.len()];
        let (mode, used) = if seq_used <= cap {
            for (&e, o) in planned.iter().zip(seq_offs) {
                offsets[e] = o;
            }
            (ScopeMode::Sequential, seq_used)
        } else {
            let order = planning_order(&entries, space);
            let slots: usize = order.len() + fixed.len();
            // pass C: no pipe stall
            let mut c = Placer::new(&entries, &order, touch, align, None);
            c.single_level(2);
            let c_end = c.end();
            let chosen = if c_end <= cap && max == 2 {
                Some((c, 2))
            } else {
                let mut d = Placer::new(&entries, &order, touch, align, Some(cap));
                d.stage2 = opts.hivm_stage2;
                if slots > 1 && d.multi_level(max) {
                    warnings.push(format!(
                        "[hivm-plan-memory] There reused some dma buffers in {} address space, which may stall pipe. Not reusing dma buffer needs {} bits while {} bits available!",
                        space.hivm_name(),
                        c_end * 8,
                        cap * 8
                    ));
                    Some((d, max))
                } else {
                    None
                }
            };
            match chosen {
                None => {
                    let exact = match opts.placement {
                        PlacementMode::FirstFit => None,
                        PlacementMode::Exact => exact::exact_offsets(
                            &entries,
                            align,
                            cap,
                            live.positions,
                            opts.exact_time_limit,
                        ),
                    };
                    let Some(offs) = exact else {
                        return Err(overflow(
                            program, live, &entries, &order, touch, align, space, cap, slots,
                        ));
                    };
                    warnings.push(format!(
                    "{}: first fit found no placement; the exact search did (lifetimes only, like level 0: sync must order every access to shared bytes)",
                    space.yaml_name()
                ));
                    let mut end = 0;
                    for &e in &planned {
                        end = offs[e]
                            .iter()
                            .map(|o| o + entries[e].size)
                            .fold(end, u64::max);
                        offsets[e] = offs[e].clone();
                        levels[e] = Some(0);
                    }
                    let fixed_end = fixed.iter().map(|f| f.1).max().unwrap_or(0);
                    (ScopeMode::Reuse, end.max(fixed_end))
                }
                Some((p, top)) => {
                    let (offs, lv) = p.result(top);
                    for &e in &planned {
                        offsets[e] = offs[e].clone();
                        levels[e] = Some(lv[e]);
                        if !p.upgraded[e].is_empty() {
                            for &b in &entries[e].buffers {
                                let mut all = vec![offs[e][0]];
                                all.extend(p.upgraded[e].iter().copied());
                                upgraded.push((b, all));
                            }
                        }
                    }
                    (ScopeMode::Reuse, p.end())
                }
            }
        };

        for (e, se) in entries.iter().enumerate() {
            for &b in &se.buffers {
                let buf = program.buffer(b);
                let bp = &mut buffers[b.index()];
                bp.bytes = se.size;
                bp.live = live.lifetime(b).to_vec();
                if let Some(at) = &buf.at {
                    bp.offsets = at.clone();
                    bp.placed_by = PlacedBy::Fixed;
                    continue;
                }
                // every slot of the entry: a single buffer inplaced into a multi-buffer is one
                bp.offsets = offsets[e].clone();
                if let Some((_, all)) = upgraded.iter().find(|(u, _)| *u == b) {
                    bp.offsets = all.clone();
                }
                bp.placed_by = if se.inplace.contains(&b) {
                    PlacedBy::Inplace
                } else {
                    match levels[e] {
                        None => PlacedBy::Sequential,
                        Some(l) => PlacedBy::Level(l),
                    }
                };
            }
        }
        scopes.push(ScopePlan {
            space,
            capacity: cap,
            align,
            required,
            used,
            peak_live,
            mode,
        });
    }
    scopes.sort_by_key(|s| s.space);
    upgraded.sort();
    Ok(Placement {
        plan: Plan {
            kernel: program.kernel.clone(),
            config: config.core_label(program.core),
            level: max,
            liveness: live.mode,
            scopes,
            buffers,
            warnings,
        },
        upgraded,
        inplace: applied,
    })
}

/// The running sum over a scope's entries.
struct Sequential {
    /// Per entry that is not fixed, in `entries` order: its slot offsets.
    offsets: Vec<Vec<u64>>,
    /// What the scope needs without any sharing: the end of the sum or of a fixed slot.
    end: u64,
    /// The fixed slots' byte ranges, sorted.
    fixed: Vec<(u64, u64)>,
}

/// Places `entries` side by side, stepping over the fixed ones.
fn sequential(entries: &[StorageEntry], align: u64) -> Sequential {
    let mut fixed: Vec<(u64, u64)> = entries
        .iter()
        .flat_map(|e| e.fixed.iter().flatten().map(move |&o| (o, o + e.size)))
        .collect();
    fixed.sort_unstable();
    let sizes: Vec<(u64, u32)> = entries
        .iter()
        .filter(|e| e.fixed.is_none())
        .map(|e| (e.size, e.multi))
        .collect();
    let (offsets, cursor) = running_sum(&sizes, &fixed, align);
    let end = cursor.max(fixed.iter().map(|f| f.1).max().unwrap_or(0));
    Sequential {
        offsets,
        end,
        fixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[usize]) -> Vec<BufferId> {
        v.iter().map(|&i| BufferId::new(i)).collect()
    }

    #[test]
    fn a_loop_gen_order_permutes_its_buffers_within_their_places() {
        // 3 and 1 hold places 1 and 3; HIVM gens 3 before 1: they swap, the rest stay
        let order = ids(&[0, 1, 2, 3, 4]);
        assert_eq!(
            with_loop_gen_order(order.clone(), &[ids(&[3, 1])]),
            ids(&[0, 3, 2, 1, 4])
        );
        // lists apply in turn; a buffer the order lacks (9) and a repeat are skipped
        assert_eq!(
            with_loop_gen_order(order.clone(), &[ids(&[4, 9, 0, 4]), ids(&[2, 1])]),
            ids(&[4, 2, 1, 3, 0])
        );
        // no lists: the order as is
        assert_eq!(with_loop_gen_order(order.clone(), &[]), order);
    }
}
