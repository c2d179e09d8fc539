//! What the tool reads and keeps on disk: run configs and their YAML parsing ([`config`],
//! [`yaml`]), pools of candidate answers ([`pool`]), the append-only verdict ledger
//! ([`ledger`], one verdict per ordered pair, fsynced) and the spend budget ([`budget`]).

pub mod budget;
pub mod config;
pub mod ledger;
pub mod pool;
pub mod yaml;
