//! topk-judge: bias-aware Bradley–Terry top-k selection with LLM judges.
//!
//! See `README.md` for usage and SPEC-referenced doc comments on each module for the model.
#![warn(missing_docs)]
#![allow(clippy::needless_range_loop)] // index loops mirror the formulas in numerical code

pub mod acquire;
pub mod audit;
pub mod auditcmd;
pub mod budget;
pub mod cache;
pub mod cli;
pub mod config;
pub mod design;
pub mod dryrun;
pub mod fitcmd;
pub mod gate;
pub mod identify;
pub mod judge;
pub mod model;
pub mod pool;
pub mod progress;
pub mod prompt;
pub mod ratelimit;
pub mod render;
pub mod report;
pub mod retry;
pub mod rng;
pub mod runner;
pub mod secret;
pub mod sim;
pub mod sweep;
pub mod synth;
pub mod yaml;

use std::sync::Arc;

/// Build the judge a config asks for.
///
/// # Errors
/// A message naming the config key.
pub fn make_judge(cfg: &config::JudgeConfig) -> Result<Arc<dyn judge::Judge>, String> {
    match cfg {
        config::JudgeConfig::Mock(m) => Ok(Arc::new(judge::mock::MockJudge::new(m.clone())?)),
        config::JudgeConfig::Synthetic(s) => Ok(Arc::new(judge::synthetic::SyntheticJudge::new(s.clone())?)),
        config::JudgeConfig::Openai(o) => Ok(Arc::new(judge::openai::OpenAiJudge::from_config(o)?)),
    }
}
