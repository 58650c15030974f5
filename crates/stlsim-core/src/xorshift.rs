//! A small xorshift generator for tests: reproducible, and no RNG crate.

/// xorshift64 (Marsaglia); seed with any non-zero value.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A value in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
