//! The process's global allocator: mimalloc instead of the system allocator.
//!
//! A refit at N = 1000 allocates about 30 MB in buffers of 2–8 MB (the dense factor and its
//! inverse W = L⁻¹, the membership draws). glibc's malloc hands blocks that large back to the
//! kernel when they are freed, so every refit faulted in and zeroed its pages again (about 10 %
//! of a refit's CPU time in the `refit_step` bench, README "Benchmarks"); mimalloc keeps them
//! for the next refit. Nothing else depends on the choice: this module is the only place that
//! names the crate.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
