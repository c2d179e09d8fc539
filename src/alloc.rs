//! The process's global allocator: mimalloc instead of the system allocator.
//!
//! A refit at N = 1000 allocates about 30 MB in buffers of 2–8 MB (the dense factor and its
//! inverse W = L⁻¹, the membership draws). glibc's malloc hands blocks that large back to the
//! kernel when they are freed, so every refit faulted in and zeroed its pages again (about 10 %
//! of a refit's CPU time in the `refit_step` bench, README "Benchmarks"); mimalloc keeps them
//! for the next refit. Nothing else depends on the choice: this module is the only place that
//! names the crate.
//!
//! Built with mimalloc's `no_thp` feature (Cargo.toml): transparent huge pages off for the
//! process. With them, each thread's first allocations faulted in whole 2 MB pages, which the
//! kernel zeroes: in a live run against a slow judge that took most of the process's CPU time,
//! and the first reply's parse stalled every reply of the first wave for 30–80 ms (README
//! "Throughput"). Without them `refit_step/1000` and `large_refit_step/10000` are as fast or
//! faster (README "Benchmarks").

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
