//! Algorithm 1 of the paper (App. A; docs/model.md): fit → top-k membership → acquisition →
//! query → store → refit. [`live`] drives it against a judge (async, verdict ledger, budget,
//! progress); [`sim`] is the same loop without I/O, shared by `simulate` and the tests.

pub mod interrupt;
pub mod live;
pub mod sim;
