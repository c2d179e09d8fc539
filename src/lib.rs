//! topk-judge: bias-aware Bradley–Terry top-k selection with LLM judges.
//!
//! The crate is grouped by role, so a folder's name says what it may import (see the README's
//! "Where things are"): [`commands`] read inputs, call the core and write outputs; [`run`] is
//! Algorithm 1 (the loop `run` and `simulate` share); the pure, synchronous statistical core is
//! [`model`], [`acquire`] and [`analysis`] (no async runtime, files or clock); [`judge`] talks to
//! judges; [`store`] owns configs, the pool file reader, the verdict ledger and the budget;
//! [`domain`] holds the types every layer reads (pools, verdicts, seeded random streams); [`report`] renders
//! result schemas, tables, plots and pages; [`sweep`] runs simulation sweeps. The model is written
//! up in `docs/model.md`.
#![warn(missing_docs)]
#![allow(clippy::needless_range_loop)] // index loops mirror the formulas in numerical code

pub mod acquire;
pub mod analysis;
pub mod cli;
pub mod commands;
pub mod config;
pub mod domain;
pub mod judge;
pub mod model;
pub mod report;
pub mod run;
pub mod store;
pub mod sweep;
