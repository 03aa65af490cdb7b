//! A custom mutator shared by the targets (`#[path]`-included): one mutation in four replaces a
//! whole number in the text with a value at the edge of an integer type; the rest are
//! libFuzzer's own (dictionary included).
//!
//! Why: bugs of the "wraps around / allocates gigabytes" kind need a field that holds exactly
//! `18446744073709551615` or `2147483648`. libFuzzer's byte mutations and dictionary insertions
//! rarely produce one in a text format: inserting the token next to the digits already there
//! gives a number too large to parse, and overwriting breaks the surrounding syntax. Replacing
//! the digit run keeps the input well-formed and puts the edge value where the loader reads it.

/// Edge values of i32, u32, i64, u64 and around them.
const EDGES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775807",
    "4611686018427387904",
    "18446744073709551615",
    "18446744073709551616",
];

/// A splitmix64 step: deterministic for a given seed, as libFuzzer requires.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn mutate(data: &mut [u8], size: usize, max_size: usize, seed: u32) -> usize {
    let mut rng = seed as u64;
    if next(&mut rng) % 4 != 0 {
        return libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    let text = &data[..size.min(data.len())];
    // the digit runs, each with a minus sign just before it
    let mut runs = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_digit() {
            let start = if i > 0 && text[i - 1] == b'-' {
                i - 1
            } else {
                i
            };
            let mut end = i;
            while end < text.len() && text[end].is_ascii_digit() {
                end += 1;
            }
            runs.push((start, end));
            i = end;
        } else {
            i += 1;
        }
    }
    if runs.is_empty() {
        return libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    let (start, end) = runs[(next(&mut rng) % runs.len() as u64) as usize];
    let edge = EDGES[(next(&mut rng) % EDGES.len() as u64) as usize].as_bytes();
    let new_len = size - (end - start) + edge.len();
    if new_len > max_size || new_len > data.len() {
        return libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    let tail = data[end..size].to_vec();
    data[start..start + edge.len()].copy_from_slice(edge);
    data[start + edge.len()..new_len].copy_from_slice(&tail);
    new_len
}
