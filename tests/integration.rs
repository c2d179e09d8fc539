//! Integration tests: one binary, one module per area (ripgrep layout).

mod audit;
mod common;
mod dispatch;
mod doc_numbers;
mod docs;
mod experiments;
mod faults;
mod health;
mod honest;
mod ident;
mod large;
mod layout;
mod live;
mod money;
mod pipeline;
mod replay;
mod reports;
mod run_cli;
mod settings;
mod systems;
mod verdicts;
