//! Integration tests: one binary, one module per area (ripgrep layout).

mod audit;
mod certify;
mod common;
mod crash_safety;
mod dispatch;
mod doc_numbers;
mod docs;
mod experiments;
mod faults;
mod fingerprint;
mod fit;
mod gate;
mod import;
mod large;
mod layout;
mod live_judge;
mod outputs;
mod pipeline;
mod published;
mod replay;
mod reports;
mod run;
mod settings;
mod spend;
mod systems;
mod verdicts;
