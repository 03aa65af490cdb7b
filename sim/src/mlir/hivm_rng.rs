//! The random stream of HIVM PlanMemory (v1.2.0): `std::mt19937` seeded with the attempt
//! number, and `std::shuffle` as libstdc++ (GCC 11 and later) implements it, bit for bit.
//!
//! PlanMemory's liveness analysis shuffles every live set it walks (`getShuffledRange`), so the
//! order of an op's kill list, and of the buffers a loop gens, is this stream's (docs/planner.md,
//! "Ties, as HIVM decides them"). Which libstdc++ matters: GCC 9 made `std::shuffle` draw two
//! swap positions per call and GCC 11 made `uniform_int_distribution` use Lemire's
//! multiply-and-reject; bishengir-opt 1.2.0's plans agree with this (modern) algorithm and not
//! with GCC 7's one-division-per-swap loop (plan-memory.mlir `@vadd_inplace` tells the two
//! apart).

/// `std::mt19937` (32-bit Mersenne Twister, the standard's parameters).
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl Mt19937 {
    pub fn new(seed: u32) -> Self {
        let mut state = [0u32; 624];
        state[0] = seed;
        for i in 1..624 {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        for i in 0..624 {
            let y = (self.state[i] & UPPER) | (self.state[(i + 1) % 624] & LOWER);
            let mut v = self.state[(i + 397) % 624] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    /// The next 32-bit output (`g()`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `uniform_int_distribution<unsigned long>{0, range - 1}(g)` for `range <= 2^32`:
    /// libstdc++'s `_S_nd` (Lemire), the path taken when the generator's range is 32 bits.
    fn below(&mut self, range: u64) -> u64 {
        if range > u64::from(u32::MAX) {
            // [0, 2^32): the generator's whole range, one draw as is
            return u64::from(self.next_u32());
        }
        let range = range as u32;
        let mut product = u64::from(self.next_u32()) * u64::from(range);
        let mut low = product as u32;
        if low < range {
            let threshold = range.wrapping_neg() % range;
            while low < threshold {
                product = u64::from(self.next_u32()) * u64::from(range);
                low = product as u32;
            }
        }
        product >> 32
    }

    /// `std::shuffle(v.begin(), v.end(), g)`.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        let n = v.len() as u64;
        if n == 0 {
            return;
        }
        let urng_range = u64::from(u32::MAX);
        if urng_range / n >= n {
            // two swap positions from one draw
            let mut i = 1u64;
            if n.is_multiple_of(2) {
                let j = self.below(2);
                v.swap(1, j as usize);
                i = 2;
            }
            while i != n {
                let swap_range = i + 1;
                let x = self.below(swap_range * (swap_range + 1));
                let (a, b) = (x / (swap_range + 1), x % (swap_range + 1));
                v.swap(i as usize, a as usize);
                v.swap(i as usize + 1, b as usize);
                i += 2;
            }
            return;
        }
        for i in 1..n {
            let j = self.below(i + 1);
            v.swap(i as usize, j as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Expected values printed by a C++ program compiled with the machine's g++ 12 (libstdc++):
    //! `std::mt19937 g(seed);` then `g()` five times, or `std::shuffle` of `0..n` for each `n`
    //! in turn on one generator, printing each permutation.
    use super::*;

    #[test]
    fn the_generator_is_std_mt19937() {
        let mut g = Mt19937::new(0);
        let got: Vec<u32> = (0..5).map(|_| g.next_u32()).collect();
        assert_eq!(
            got,
            [2357136044, 2546248239, 3071714933, 3626093760, 2588848963]
        );
        let mut g = Mt19937::new(7);
        let got: Vec<u32> = (0..5).map(|_| g.next_u32()).collect();
        assert_eq!(
            got,
            [327741615, 976413892, 3349725721, 1369975286, 1882953283]
        );
        // the 10000th output of seed 5489, the standard's own check value
        let mut g = Mt19937::new(5489);
        let last = (0..10000).map(|_| g.next_u32()).last();
        assert_eq!(last, Some(4123659995));
    }

    fn shuffles(seed: u32, lengths: &[usize]) -> Vec<Vec<usize>> {
        let mut g = Mt19937::new(seed);
        lengths
            .iter()
            .map(|&n| {
                let mut v: Vec<usize> = (0..n).collect();
                g.shuffle(&mut v);
                v
            })
            .collect()
    }

    #[test]
    fn shuffles_are_libstdcxx_shuffles_in_sequence() {
        let got = shuffles(0, &[1, 2, 3, 4, 5, 8, 17, 2]);
        let want: Vec<Vec<usize>> = vec![
            vec![0],
            vec![0, 1],
            vec![2, 1, 0],
            vec![0, 1, 3, 2],
            vec![2, 1, 4, 3, 0],
            vec![5, 1, 7, 2, 6, 0, 3, 4],
            vec![11, 3, 7, 8, 15, 4, 16, 14, 12, 1, 10, 2, 9, 13, 5, 6, 0],
            vec![1, 0],
        ];
        assert_eq!(got, want);
        let got = shuffles(19, &[6, 33, 1, 4]);
        let want: Vec<Vec<usize>> = vec![
            vec![1, 3, 0, 4, 5, 2],
            vec![
                25, 15, 21, 11, 5, 26, 14, 0, 24, 20, 2, 32, 30, 22, 28, 7, 4, 8, 6, 23, 31, 9, 19,
                18, 3, 17, 16, 27, 10, 29, 12, 13, 1,
            ],
            vec![0],
            vec![2, 1, 3, 0],
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_range_past_65535_swaps_one_at_a_time() {
        let mut g = Mt19937::new(1);
        let mut v: Vec<u32> = (0..70000).collect();
        g.shuffle(&mut v);
        assert_eq!(v[..5], [7199, 23693, 65840, 9893, 62829]);
        assert_eq!(g.next_u32(), 2351114507);
    }

    #[test]
    fn an_empty_or_single_range_draws_nothing() {
        let mut a = Mt19937::new(3);
        let mut b = Mt19937::new(3);
        a.shuffle::<u8>(&mut []);
        a.shuffle(&mut [9]);
        assert_eq!(a.next_u32(), b.next_u32());
    }
}
