//! What the tool reads and keeps on disk: run configs and their YAML parsing ([`config`],
//! [`yaml`]), pools of candidate answers ([`pool`]), the append-only verdict ledger
//! ([`ledger`], one verdict per ordered pair, fsynced), the intents written before each paid
//! request ([`intents`]), the three read together as a run folder's books ([`books`]), the
//! run-folder lock ([`lock`]) and the spend budget ([`budget`]).

pub mod books;
pub mod budget;
pub mod config;
pub mod intents;
pub mod ledger;
pub mod lock;
pub mod pool;
pub mod yaml;
