//! The types every layer reads (docs/model.md §1, §4): pools, items, bases and covariates
//! ([`pool`]), verdicts and why a reply is invalid ([`verdict`]), the error of an input that
//! breaks a rule ([`invalid`]), seeded random streams ([`rng`]), paths as users write them
//! (`~`, `${VAR}`; [`paths`]), the number format of messages ([`fmt`]), JSON text as users
//! write it, parsed with the failing field named ([`json`]), spellings of one name ([`names`]), serde's type errors in each
//! format's words ([`serde_words`]), and bytes as text (byte-order marks, encodings; [`text`]). Nothing here reads
//! files, talks to a judge or imports another folder of the crate.

pub mod fmt;
pub mod invalid;
pub mod json;
pub mod names;
pub mod paths;
pub mod pool;
pub mod rng;
pub mod serde_words;
pub mod text;
pub mod verdict;
