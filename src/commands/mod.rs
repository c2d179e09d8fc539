//! One module per subcommand: each reads its inputs (config, pool, run folder), calls the core
//! ([`crate::run`], [`crate::model`], [`crate::analysis`], [`crate::sweep`]) and writes its outputs.
//! `main.rs` only parses the command line and dispatches here.

pub mod audit;
pub mod compare;
pub mod dry_run;
pub mod fit;
pub mod gate;
pub mod import;
pub mod profile;
pub mod report;
pub mod run;
pub mod run_folder;
pub mod simulate;
