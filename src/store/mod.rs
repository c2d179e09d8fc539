//! What the tool reads and keeps on disk: run configs and their YAML parsing ([`config`],
//! [`yaml`]), the pool file reader ([`pool_file`]), the append-only verdict ledger
//! ([`ledger`], one verdict per ordered pair, fsynced), the intents written before each paid
//! request ([`intents`]), the three read together as a run folder's books ([`books`]), the
//! run-folder lock ([`lock`]), the spend budget ([`budget`]), a run folder's own copies of its
//! inputs ([`run_inputs`]) and input text as other tools write it ([`text`]).

pub mod books;
pub mod budget;
pub mod config;
pub mod intents;
pub mod ledger;
pub mod lock;
pub mod pool_file;
pub mod run_inputs;
pub mod text;
pub mod yaml;
