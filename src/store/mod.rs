//! What the tool reads and keeps on disk: run configs and their YAML parsing ([`config`],
//! [`yaml`]), pools of candidate answers ([`pool`]), the append-only verdict ledger
//! ([`ledger`], one verdict per ordered pair, fsynced), the spend budget ([`budget`]), a run
//! folder's own copies of its inputs ([`run_inputs`]) and input text as other tools write it
//! ([`text`]).

pub mod budget;
pub mod config;
pub mod ledger;
pub mod pool;
pub mod run_inputs;
pub mod text;
pub mod yaml;
