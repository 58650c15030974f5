//! A small xorshift generator: reproducible from its seed, and no RNG
//! crate (the tests' workloads and a history's writes).

/// xorshift64 (Marsaglia); seed with any non-zero value.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A generator for any seed, zero included (a zero state stays zero:
    /// the seed is mixed into a non-zero one).
    pub(crate) fn seeded(seed: u64) -> Rng {
        Rng((seed ^ 0x9E37_79B9_7F4A_7C15).max(1))
    }
    /// A value in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
