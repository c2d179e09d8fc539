//! Python's `random.Random(str)`, far enough to replay one draw: the Mersenne Twister MT19937
//! seeded from a string as CPython seeds it (`Lib/random.py`, `Random.seed` with `version=2`,
//! and `Modules/_randommodule.c`, `random_seed` → `init_by_array`), with `random()` and
//! `choices` of two.
//!
//! AlpacaEval decides the order in which it showed two outputs to its judge with
//! `random.Random("is_switched_outputs" + instruction + "0").choices([False, True])[0]`
//! (`RandomSwitchTwoColumnsProcessor`); [`alpaca_eval_switched`] recomputes that.
//!
//! Seeding a string `s` (version 2): the integer
//! `int.from_bytes(s.encode() + sha512(s.encode()).digest(), "big")` is cut into 32-bit words,
//! least significant first, and fed to `init_by_array`. `random()` is
//! `((a >> 5) · 2^26 + (b >> 6)) / 2^53` of two 32-bit outputs a, b; `choices(p)` with no
//! weights is `p[floor(random() · len(p))]`.

use sha2::{Digest, Sha512};

const N: usize = 624;
const M: usize = 397;

/// An MT19937 generator in CPython's state layout.
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl PyRandom {
    fn init_genrand(s: u32) -> Self {
        let mut mt = [0u32; N];
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1_812_433_253u32.wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_add(i as u32);
        }
        Self { mt, index: N }
    }

    /// `init_by_array` of the reference implementation (Matsumoto and Nishimura, 2002).
    fn init_by_array(key: &[u32]) -> Self {
        let mut g = Self::init_genrand(19_650_218);
        let mt = &mut g.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        g
    }

    /// `random.Random(s)` for a string `s` (seed version 2).
    pub fn from_str_seed(s: &str) -> Self {
        let mut bytes = s.as_bytes().to_vec();
        bytes.extend_from_slice(&Sha512::digest(s.as_bytes()));
        // The big-endian integer without its leading zero bytes, as 32-bit words, least
        // significant first (CPython: `_PyLong_AsByteArray` little-endian, then words).
        let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
        let digits = &bytes[start..];
        let mut key: Vec<u32> =
            digits.rchunks(4).map(|c| c.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b))).collect();
        if key.is_empty() {
            key.push(0);
        }
        Self::init_by_array(&key)
    }

    /// The next 32-bit output (`getrandbits(32)`).
    pub fn next_u32(&mut self) -> u32 {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX_A: u32 = 0x9908_b0df;
        if self.index >= N {
            let mt = &mut self.mt;
            for k in 0..N {
                let y = (mt[k] & UPPER) | (mt[(k + 1) % N] & LOWER);
                let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
                mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random()`: a double in [0, 1) with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (f64::from(a) * 67_108_864.0 + f64::from(b)) / 9_007_199_254_740_992.0
    }

    /// `choices([first, second])[0]`: whether the second of two was drawn.
    pub fn choose_second_of_two(&mut self) -> bool {
        (self.random() * 2.0).floor() as usize == 1
    }
}

/// Whether AlpacaEval showed the two outputs of `instruction` swapped (output_2 first).
pub fn alpaca_eval_switched(instruction: &str) -> bool {
    PyRandom::from_str_seed(&format!("is_switched_outputs{instruction}0")).choose_second_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values CPython 3.11.7 printed on this machine for
    /// `python3 -c "import random; s = …; print(random.Random(s).getrandbits(32),
    /// random.Random(s).random(), random.Random(s).choices([False, True])[0])"`.
    #[test]
    fn matches_cpython_for_string_seeds() {
        let long =
            "is_switched_outputsWhat are the names of some famous actors that started their careers on Broadway?0";
        let cases: [(&str, u32, f64, bool); 5] = [
            ("", 4_124_137_760, 0.9602256525641875, true),
            ("a", 1_168_357_962, 0.2720295377534757, false),
            ("is_switched_outputs", 2_251_962_895, 0.5243259709034008, true),
            ("héllo wörld 😀", 865_279_253, 0.20146352435004455, false),
            (long, 3_250_776_821, 0.7568804589113483, true),
        ];
        for (s, first, r, second) in cases {
            assert_eq!(PyRandom::from_str_seed(s).next_u32(), first, "{s:?}");
            assert_eq!(PyRandom::from_str_seed(s).random(), r, "{s:?}");
            assert_eq!(PyRandom::from_str_seed(s).choose_second_of_two(), second, "{s:?}");
        }
        let instr = long.strip_prefix("is_switched_outputs").unwrap().strip_suffix('0').unwrap();
        assert!(alpaca_eval_switched(instr));
    }

    /// Many outputs: past the first regeneration of the state (624 words).
    #[test]
    fn long_streams_match_cpython() {
        // python3 -c "import random; r = random.Random('a'); [r.getrandbits(32) for _ in range(1000)]; print(r.getrandbits(32))"
        let mut g = PyRandom::from_str_seed("a");
        for _ in 0..1000 {
            g.next_u32();
        }
        assert_eq!(g.next_u32(), LONG_A_1001);
    }

    const LONG_A_1001: u32 = 1_231_896_422;
}
