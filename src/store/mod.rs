//! Files only: what the tool reads and keeps on disk. YAML parsing ([`yaml`]), the pool file
//! reader ([`pool_file`]), the append-only verdict ledger ([`ledger`], one verdict per ordered
//! pair, fsynced), the intents written before each paid request ([`intents`]), the three read
//! together as a run folder's books ([`books`]), the run-folder lock ([`lock`]), the spend
//! budget ([`budget`]), the rounds of batch dispatch ([`batches`]), paths ([`files`]) and input text as other tools write it ([`text`]).
//! The append-only books read their lines alike ([`jsonl`]).

pub mod batches;
pub mod books;
pub mod budget;
pub mod files;
pub mod intents;
pub mod jsonl;
pub mod ledger;
pub mod lock;
pub mod pool_file;
pub mod text;
pub mod yaml;
