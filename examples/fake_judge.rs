//! A stand-in OpenAI-compatible judge on 127.0.0.1, to try live runs with no model, no key and
//! no spend (README, "Rank with the judge you choose"):
//!
//! ```sh
//! cargo run --example fake_judge -- 8088 &
//! topk-judge run configs/local.yaml --base-url http://127.0.0.1:8088/v1 --max-comparisons 40 --name fake
//! ```
//!
//! It answers every chat completion with the letter of the longer answer (the shipped prompt
//! templates' `Answer A:` / `Answer B:` blocks): a judge with nothing but verbosity bias, the
//! same in both orders, with no logprobs (hard verdicts). Every reply bills 100 prompt and 3
//! completion tokens. `/v1/models` lists one model: the second argument, or by default
//! `qwen2.5-coder-1.5b`, the model configs/local.yaml names (the fake answers any name, as
//! llama.cpp does). It serves the Files and Batches endpoints of `dispatch: batch` too. It is
//! the test suite's fake server (tests/common/fake_openai.rs), without its fault injection.
//! Ctrl-C stops it.

#[path = "../tests/common/fake_openai.rs"]
mod fake_openai;

fn main() -> std::process::ExitCode {
    match serve() {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Start the server on the port of the first argument (default 8088) and serve until killed.
fn serve() -> Result<std::convert::Infallible, String> {
    let port = match std::env::args().nth(1) {
        None => 8088,
        Some(p) => p.parse::<u16>().map_err(|_| format!("{p:?} is not a port number (0–65535)"))?,
    };
    let model = std::env::args().nth(2).unwrap_or_else(|| "qwen2.5-coder-1.5b".into());
    let addr = format!("127.0.0.1:{port}");
    let server = fake_openai::FakeOpenAi::start_on(
        &addr,
        Box::new(fake_openai::longer_wins),
        Box::new(fake_openai::fixed_usage),
    )
    .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let models = serde_json::json!({"object": "list", "data": [{"id": model, "object": "model"}]});
    server.set_models_reply(200, models.to_string());
    println!("fake judge at {} (model {model:?}): the longer answer wins; Ctrl-C stops it", server.base_url);
    loop {
        std::thread::park();
    }
}
