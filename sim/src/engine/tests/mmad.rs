//! `mmad_l1`: its MTE1 and M parts, the halves of L0A and L0B they share, and how its k is split
//! into chunks.

use super::*;

#[test]
fn mmad_l1_macro() {
    let mut b = B::new();
    let m = b.mmad(32, 32, 32); // a and b of 2048 B
    let ops = vec![mmad_l1(m.clone()), mmad_l1(m)];
    let r = ok(&b.build(ops));
    // Stage: 2048/128 + 2048/64 = 16 + 32 = 48 work, startup max(4,3) = 4.
    // M part: 2 x 2 x ceil(32 / (32/2)) = 8 work, startup 5.
    // #1: MTE1 sent 0, joins 1, [1,49) completes 53; M sent 1, joins 2, starts 53 [53,61) -> 66.
    // #2: MTE1 sent 2, joins 3, starts 49 [49,97) -> 101; M sent 3, joins 4, starts 101
    //   [101,109) -> 114.
    assert_eq!(r.total_cycles, 114);
    let mm = stats(&r, Pipe::M);
    assert_eq!(mm.busy, 16);
    // M: starved [0,2), macro wait [2,53), busy [53,61), macro wait [61,101), busy, idle 5
    assert_eq!(
        stall(&r, Pipe::M, Stall::WaitMacro { src: Pipe::Mte1 }),
        51 + 40
    );
    assert_eq!((mm.starved, mm.idle, mm.instructions), (2, 5, 2));
    assert_eq!(totals(&r, Pipe::Mte1), (2, 96, 1, 17));
    // overlap: MTE1 [49,97) with M [53,61) = 8
    assert_eq!(r.cores[0].overlap_cycles, 8);
}

#[test]
fn mmad_l1_staging_waits_for_m_to_free_a_half() {
    // L0A and L0B of 32 KiB: halves of 16384 B. m = n = 512, k = 64 of f16 (kf = 32 B / 2 = 16):
    // a = b = 512 x 64 x 2 = 65536 B. A chunk of kc elements of k holds 65536 x kc / 64 B of
    // each, which fits 16384 for kc <= 16: one fractal. 4 fractals -> 4 chunks of 16.
    let mut config = config();
    for s in &mut config.cores[0].scopes {
        if matches!(s.space, Space::L0a | Space::L0b) {
            s.bytes = 32768;
        }
    }
    let mut b = B::new();
    let m = b.mmad(512, 512, 64);
    let r = ok_on(&b.build(vec![mmad_l1(m)]), &config);
    // Stage chunk: 16384 / 128 + 16384 / 64 = 128 + 256 = 384, startup 4.
    // M chunk: 32 x 32 x 1 = 1024, startup 5.
    // MTE1 sent 0 (joins 1), M sent 1 (joins 2).
    // MTE1 c0 [1,385) -> 389; c1 [385,769) -> 773.
    // M c0 starts 389 (its copy): [389,1413) -> 1418.
    // MTE1 c2 goes into c0's half: waits for M's c0, [769,1418) = 649; [1418,1802) -> 1806.
    // M c1 starts 1413 (c1 copied at 773): [1413,2437) -> 2442.
    // MTE1 c3 waits for M's c1: [1802,2442) = 640; [2442,2826) -> 2830.
    // M c2 [2437,3461) -> 3466 (copied at 1806); c3 [3461,4485) -> 4490 = total.
    assert_eq!(r.total_cycles, 4490);
    // MTE1: starved 1, busy 4 x 384 = 1536, waits 649 + 640, idle [2826,4490) = 1664.
    assert_eq!(totals(&r, Pipe::Mte1), (1, 1536, 1, 1664));
    assert_eq!(
        stall(&r, Pipe::Mte1, Stall::WaitMacro { src: Pipe::M }),
        1289
    );
    // M: starved [0,2), waits [2,389) = 387, busy 4 x 1024, idle [4485,4490) = 5.
    assert_eq!(totals(&r, Pipe::M), (1, 4096, 2, 5));
    assert_eq!(
        stall(&r, Pipe::M, Stall::WaitMacro { src: Pipe::Mte1 }),
        387
    );
}

#[test]
fn mmad_l1_chunking() {
    use super::compiled::chunking;
    // k 512 (32 fractals of 16): a 16384 B, b 32768 B, halves 8192: a fits 256 of k (16
    // fractals), b 128 (8): 4 chunks of 128.
    assert_eq!(chunking(512, 16, (16384, 8192), (32768, 8192)), (4, 128));
    // 5 fractals, at most 4 per chunk: 2 chunks, as equal as whole fractals allow: 48 + 32.
    assert_eq!(chunking(80, 16, (80, 64), (0, 1)), (2, 48));
    // everything fits: one chunk of the whole k (not a multiple of the fractal)
    assert_eq!(chunking(40, 16, (100, 1000), (100, 1000)), (1, 40));
    // not even one fractal fits: one fractal per chunk
    assert_eq!(chunking(64, 16, (1000, 1), (0, 1)), (4, 16));
    assert_eq!(chunking(0, 16, (0, 1), (0, 1)), (1, 0));
}
