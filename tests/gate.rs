//! Identifiability and the trusted-anchor gate: acceptance on synthetic pools with fixed seeds (docs/model.md §5–§7), and
//! the `profile`, `gate`, `run --gate` and `design: paired` commands end to end.

use crate::common::*;
use topk_judge::analysis::gate_sim::{GateSimSpec, PoolKind, simulate};
use topk_judge::analysis::synth::{SynthPool, SynthSpec, generate};
use topk_judge::model::bt::{self, FitOptions, Prior};
use topk_judge::model::profile::{IdentVerdict, profile};
use topk_judge::model::summary::build_design;
use topk_judge::report::gate::gate_sim_table as markdown_table;

fn synth(n: usize, rho: f64, c_star: f64, paired: bool, seed: u64) -> SynthPool {
    generate(&SynthSpec { n, rho, c_star, kappa_star: 0.5, temperature: 1.0, paired, seed })
}

/// MAP β̂ (θ, c, κ) of the bias-aware model with covariate x, and the design.
fn map_fit(s: &SynthPool, reps: usize, prior: &Prior) -> (topk_judge::model::Design, Vec<f64>) {
    let d = build_design(&s.pool, &s.covariates(), &s.full_verdicts(reps));
    let m = s.pool.n_bases();
    let f = bt::fit(&d, &prior.diagonal(m, 1), None, &FitOptions::default()).unwrap();
    (d, f.beta)
}

#[test]
fn unpaired_profile_is_flat_at_1x_10x_and_26x_the_comparisons() {
    // N = 30, biased judge (c* = 1), covariate correlated with quality (ρ = 0.3), every ordered
    // pair judged r times (independent keyed draws).
    let s = synth(30, 0.3, 1.0, false, 5);
    for reps in [1, 10, 26] {
        let (d, beta) = map_fit(&s, reps, &Prior::default());
        assert_eq!(d.obs.len(), 870 * reps);
        let p = profile(&d, 0, beta[30], Some(&beta)).unwrap();
        println!(
            "unpaired, {reps:>2}x ({} verdicts): ĉ = {:.4}, range = {:.2e} nats",
            d.obs.len(),
            p.center,
            p.range_nats
        );
        assert!(p.range_nats < 1e-4, "{reps}x: range {}", p.range_nats);
        assert_eq!(p.verdict, IdentVerdict::PriorSelected);
        assert!(p.points.iter().all(|q| q.grad_inf < 1e-9));
    }
}

#[test]
fn paired_profile_grows_with_the_bases_and_exceeds_5_nats_at_20() {
    let mut ranges = Vec::new();
    for n in [10, 20, 40] {
        let s = synth(n, 0.0, 1.0, true, 7);
        let (d, beta) = map_fit(&s, 1, &Prior::default());
        // Both orders of every pair of items: 2n(2n − 1) verdicts.
        assert_eq!(d.obs.len(), 2 * n * (2 * n - 1));
        let p = profile(&d, 0, beta[n], Some(&beta)).unwrap();
        println!("paired, {n} bases ({} verdicts): ĉ = {:.4}, range = {:.2} nats", d.obs.len(), p.center, p.range_nats);
        assert_eq!(p.verdict, IdentVerdict::Identified);
        ranges.push(p.range_nats);
    }
    assert!(ranges[0] < ranges[1] && ranges[1] < ranges[2], "{ranges:?}");
    assert!(ranges[1] > 5.0, "{ranges:?}");
}

#[test]
fn paired_c_hat_converges_to_c_star_whatever_lambda_b() {
    let s = synth(40, 0.0, 1.0, true, 7);
    for lambda_b in [0.01, 0.1, 1.0, 10.0] {
        let (_, beta) = map_fit(&s, 1, &Prior { lambda_b, ..Prior::default() });
        println!("paired, 40 bases, λ_b = {lambda_b}: ĉ = {:.4} (c* = 1)", beta[40]);
        assert!((beta[40] - 1.0).abs() < 0.15, "λ_b = {lambda_b}: ĉ = {}", beta[40]);
    }
}

#[test]
fn unpaired_c_hat_moves_with_lambda_b_as_the_closed_form_says() {
    // docs/model.md §2: ĉ ≈ Σ φ_m x̃_m / (Σ x̃_m² + λ_b/λ_θ). Two checks per λ_b:
    // (1) exact at the MAP with φ̂ = θ̂ + ĉx of the same fit (stationarity along the flat ray);
    // (2) approximately with φ̂ the maximum-likelihood apparent quality (naive model, ridge
    //     1e-6), an independent fit that never sees x and has no prior on φ.
    let s = synth(30, 0.3, 1.0, false, 5);
    let x = &s.x;
    let mean = x.iter().sum::<f64>() / 30.0;
    let xt: Vec<f64> = x.iter().map(|v| v - mean).collect();
    let sxx: f64 = xt.iter().map(|v| v * v).sum();
    let naive_d = build_design(&s.pool, &topk_judge::domain::pool::Covariates::none(30), &s.full_verdicts(1));
    let naive = bt::fit(&naive_d, &[1e-6; 31], None, &FitOptions::default()).unwrap();
    let mut c_hats = Vec::new();
    for lambda_b in [0.01, 0.1, 1.0, 10.0] {
        let (_, beta) = map_fit(&s, 1, &Prior { lambda_b, ..Prior::default() });
        let c = beta[30];
        let phi: Vec<f64> = (0..30).map(|m| beta[m] + c * x[m]).collect();
        let exact = phi.iter().zip(&xt).map(|(p, v)| p * v).sum::<f64>() / (sxx + lambda_b);
        let approx = naive.beta[..30].iter().zip(&xt).map(|(p, v)| p * v).sum::<f64>() / (sxx + lambda_b);
        println!("unpaired, λ_b = {lambda_b:>5}: ĉ = {c:.4}, closed form (own φ̂) {exact:.4}, (ML φ̂) {approx:.4}");
        assert!((c - exact).abs() < 1e-8, "λ_b = {lambda_b}: {c} vs {exact}");
        // The MAP φ̂ is shrunk a little by the θ prior relative to the ML φ̂ (3–8 % here).
        assert!((c - approx).abs() < 0.1, "λ_b = {lambda_b}: {c} vs {approx}");
        c_hats.push(c);
    }
    // It moves with the prior: ĉ(10)/ĉ(0.01) ≈ (Σx̃² + 0.01)/(Σx̃² + 10) = 0.75 (Σx̃² = N = 30),
    // where the paired design keeps it within 2 % (test above).
    assert!(c_hats.windows(2).all(|w| w[1] < w[0]), "{c_hats:?}");
    let predicted = (sxx + 0.01) / (sxx + 10.0);
    let ratio = c_hats[3] / c_hats[0];
    println!("unpaired: ĉ(10)/ĉ(0.01) = {ratio:.4}, closed form {predicted:.4}");
    assert!((ratio - predicted).abs() < 0.05, "{ratio} vs {predicted}");
}

#[test]
fn gate_operating_characteristics_on_synthetic_pools() {
    let spec = GateSimSpec::default();
    let legit = simulate(&spec, PoolKind::Legit).unwrap();
    let spurious = simulate(&spec, PoolKind::Spurious).unwrap();
    println!("{}", markdown_table(&legit, &spurious));
    for (l, s) in legit.iter().zip(&spurious) {
        println!(
            "K = {}: corrected right on {:.1}% (legit) / {:.1}% (spurious) of anchors",
            l.anchors,
            100.0 * l.corrected_right,
            100.0 * s.corrected_right
        );
    }
    for l in legit.iter().filter(|r| r.anchors >= 10) {
        assert_eq!(l.true_decisions, 50);
        assert_eq!(l.true_enables, 0, "false enable with true-order labels at K = {}", l.anchors);
        assert_eq!(l.noisy_decisions, 5000);
        assert!(l.noisy_rate() <= 0.005, "K = {}: noisy false-enable rate {}", l.anchors, l.noisy_rate());
    }
    let s40 = spurious.iter().find(|r| r.anchors == 40).unwrap();
    assert!(s40.true_rate() >= 0.8, "spurious enable rate at K = 40: {}", s40.true_rate());
}

// ---------------------------------------------------------------------------------------------
// Commands end to end.

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// A synthetic spurious-bias config (docs/model.md §7) with a gate section.
fn synthetic_config(dir: &std::path::Path, name: &str, gate: &str) -> std::path::PathBuf {
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool:\n  synthetic: {{n: 30, rho: 0.0, c_star: 1.0, kappa_star: 0.5, seed: 3}}\nk: 5\njudge:\n  synthetic: {{}}\nacquisition:\n  seed: 1\n  mc_draws: 200\n  refit_every: 30\n  batch_size: 30\nbudget:\n  max_comparisons: 870\n{gate}"
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

#[test]
fn synthetic_run_then_profile_gate_and_run_with_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let gate = "gate:\n  anchors: 40\n  trusted:\n    synthetic: {c_star: 0.0, kappa_star: 0.0, temperature: 0.25, seed: 99}\n";
    let cfg = synthetic_config(dir.path(), "spur", gate);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("c[x] = ") && text(&out).contains("; profile range"), "{}", text(&out));
    let run = dir.path().join("runs/spur");
    let result = json(&run.join("result.json"));
    let ident = &result["identifiability"]["x"];
    assert_eq!(ident["identified"], false);
    assert!(ident["range_nats"].as_f64().unwrap() < 1e-3);
    assert!(ident["verdict"].as_str().unwrap().starts_with("prior-selected"));

    // Profile from the run folder.
    let out = run_bin(dir.path(), &["profile", "runs/spur"]);
    assert!(out.status.success(), "{}", text(&out));
    let prof = json(&run.join("profile.json"));
    let c = &prof["covariates"][0];
    assert_eq!(c["c"].as_array().unwrap().len(), 21);
    assert!(c["range_nats"].as_f64().unwrap() < 1e-4, "{c}");
    assert!((c["c_hat"].as_f64().unwrap() - result["c"]["x"].as_f64().unwrap()).abs() < 1e-6);
    let svg = std::fs::read_to_string(run.join("profile.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("profile log-likelihood"));
    // `--out DIR`: the same profile written elsewhere (a run folder that cannot be written lost
    // the computed profile; hunt 52); never into another run's folder.
    let out = run_bin(dir.path(), &["profile", "runs/spur", "--out", "elsewhere"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json(&dir.path().join("elsewhere/profile.json")), prof);
    assert!(dir.path().join("elsewhere/profile.svg").is_file());
    let other = dir.path().join("runs/other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("result.json"), "{}").unwrap();
    let out = run_bin(dir.path(), &["profile", "runs/spur", "--out", "runs/other"]);
    assert!(
        !out.status.success() && stderr(&out).contains("--out runs/other: the folder of another run"),
        "{}",
        text(&out)
    );

    // Gate with the trusted synthetic judge, both orders, cached.
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let g = json(&run.join("gate.json"));
    let d = &g["decision"];
    let (n10, n01, ties, k) = (
        d["n10"].as_u64().unwrap() as usize,
        d["n01"].as_u64().unwrap() as usize,
        d["n_ties"].as_u64().unwrap() as usize,
        d["n_anchors"].as_u64().unwrap() as usize,
    );
    assert_eq!(k, 40);
    assert_eq!(n10 + n01 + ties, k);
    let p = topk_judge::analysis::gate::sign_test_p(n10, n01);
    assert!((d["p_value"].as_f64().unwrap() - p).abs() < 1e-12);
    assert_eq!(d["enable"], p <= 0.05);
    // Independent count from the anchors' trusted probabilities.
    let anchors = g["anchors"].as_array().unwrap();
    let count = |f: &dyn Fn(f64) -> bool| anchors.iter().filter(|a| f(a["trusted_p"].as_f64().unwrap())).count();
    assert_eq!((count(&|p| p > 0.5), count(&|p| p < 0.5)), (n10, n01));
    let trusted = run.join("trusted_verdicts.jsonl");
    assert_eq!(std::fs::read_to_string(&trusted).unwrap().lines().count(), 80);
    // A fingerprint book's damaged line (the gate counts those books, and opens none): said once.
    std::fs::write(run.join("fingerprint_failed.jsonl"), b"{\"key\": \"k\xff\"}\n").unwrap();
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        text(&out).matches("fingerprint_failed.jsonl:1: not a failed-query record").count(),
        1,
        "{}",
        text(&out)
    );
    std::fs::remove_file(run.join("fingerprint_failed.jsonl")).unwrap();
    assert_eq!(std::fs::read_to_string(&trusted).unwrap().lines().count(), 80, "re-running re-uses the cache");
    // Spurious pool (seed 3): the anchors support correction.
    assert_eq!(d["enable"], true, "{}", text(&out));

    // run --gate reports the chosen ranking.
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--gate", "runs/spur/gate.json"]);
    assert!(out.status.success(), "{}", text(&out));
    // Once, in the summary: the gate's own lines do not repeat it after the `outputs:` line.
    assert!(stdout(&out).contains("point top-5 (corrected, reported): "), "{}", text(&out));
    assert!(!text(&out).contains("chosen (corrected) top-5"), "{}", text(&out));
    let result = json(&run.join("result.json"));
    assert_eq!(result["gate"]["chosen"], "corrected");
    assert_eq!(result["gate"]["topk"], g["corrected_topk"]);
    assert_eq!(result["gate"]["topk"], result["topk"]);
    assert_eq!(g["transforms"], serde_json::json!({"x": "raw"}), "gate.json records the transforms");

    // A gate applies to the settings it was computed for, and `gate` writes none for other
    // settings into the run's folder: refused before anything runs or is written.
    let verdicts = std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap();
    let gate_json = std::fs::read_to_string(run.join("gate.json")).unwrap();
    // The same run without a `gate:` section (the file's last lines).
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    let plain = write(dir.path(), "plain.yaml", yaml.split("gate:").next().unwrap());
    let gated = |extra: &[&str]| {
        let mut args = vec!["run", plain.to_str().unwrap(), "--quiet", "--gate", "runs/spur/gate.json"];
        args.extend_from_slice(extra);
        run_bin(dir.path(), &args)
    };
    for (set, says) in [
        ("k=3", "the gate was computed with k = 5, this run uses k = 3"),
        (
            "model.covariates=[{name: x, transform: zscore}]",
            "the gate was computed with covariate transforms [x: raw], this run uses covariate transforms [x: zscore]",
        ),
        ("model.kind=naive", "this run's model.kind is naive"),
    ] {
        let out = gated(&["--set", set]);
        assert!(!out.status.success() && text(&out).contains(says), "{set}: {}", text(&out));
        assert!(!text(&out).contains("stopped:"), "{set}: {}", text(&out));
        // The dry run refuses it as the run does (it said "no query was sent", exit 0).
        let out = gated(&["--set", set, "--dry-run"]);
        assert!(!out.status.success() && text(&out).contains(says), "{set} --dry-run: {}", text(&out));
    }
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap(), "--set", "k=3"]);
    let says = "runs/spur: the run there was made with k = 5, and this gate would use k = 3";
    assert!(!out.status.success() && text(&out).contains(says), "{}", text(&out));
    // Another prior picks other anchors and another corrected top-5 (it wrote its gate.json over
    // the run's, which `run --gate` then cited): refused, as `profile` of a config with it is.
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap(), "--set", "model.lambda_b=100"]);
    let says = "D/runs/spur: holds a run made with other settings than D/spur.yaml configures: model.lambda_b (0.1 there, 100.0 here)";
    let shown = |out: &std::process::Output| text(out).replace(&dir.path().display().to_string(), "D");
    assert!(!out.status.success() && shown(&out).contains(says), "{}", text(&out));
    // The gate's own settings decide what result.json records of it: another α, K or trusted
    // judge is refused as well (it wrote a gate.json result.json and the report contradicted).
    for (set, differs) in [
        ("gate.alpha=0.001", "gate.alpha (0.05 there, 0.001 here)"),
        (
            "gate.trusted.synthetic.temperature=5",
            "gate.trusted (\"synthetic (c* 0, κ* 0, temperature 0.25, seed 99)\" there, \"synthetic (c* 0, κ* 0, temperature 5, seed 99)\" here)",
        ),
    ] {
        let out = run_bin(dir.path(), &["gate", "runs/spur", "--set", set]);
        let says = format!(
            "runs/spur: the run there was made with other gate settings: {differs}; its gate.json would not describe the run"
        );
        assert!(!out.status.success() && text(&out).contains(&says), "{set}: {}", text(&out));
    }
    assert_eq!(std::fs::read_to_string(&trusted).unwrap().lines().count(), 80, "no other judge's verdicts");
    let profile = std::fs::read_to_string(run.join("profile.json")).unwrap();
    let other = write(dir.path(), "other.yaml", &format!("{yaml}model:\n  lambda_theta: 1000\n"));
    let out = run_bin(dir.path(), &["profile", other.to_str().unwrap()]);
    let says = "D/runs/spur: holds a run made with other settings than D/other.yaml configures: model.lambda_theta (1.0 there, 1000.0 here)";
    assert!(!out.status.success() && shown(&out).contains(says), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(run.join("profile.json")).unwrap(), profile);
    let out = run_bin(dir.path(), &["gate", "runs/spur", "--name", "other"]);
    let says = "--name other: runs/spur is a run folder, which names its run";
    assert!(!out.status.success() && text(&out).contains(says), "{}", text(&out));
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--set", "model.kind=naive"]);
    let says = "gate: model.kind naive fits only the naive ranking";
    assert!(!out.status.success() && text(&out).contains(says), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap(), verdicts);
    assert_eq!(std::fs::read_to_string(run.join("gate.json")).unwrap(), gate_json);
}

/// `gate` on a panel config says it takes a single judge (not that the config lacks `gate:`).
#[test]
fn gate_on_a_panel_says_it_takes_a_single_judge() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "name: p\nout_dir: runs\npool:\n  synthetic: {n: 6, seed: 1}\nk: 2\njudges:\n  - {name: a, mock: {}, trusted: true}\n  - {name: b, mock: {}}\nbudget:\n  max_comparisons: 8\n";
    let cfg = write(dir.path(), "panel.yaml", yaml);
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("a judge panel (`judges:`) — `gate` takes a single judge"), "{}", text(&out));
    assert!(!text(&out).contains("no `gate:` section"), "{}", text(&out));
    // A comparison budget bounds nothing in the gate: refused, by the shorthand or by --set.
    for args in [["--max-comparisons", "5"], ["--set", "budget.max_comparisons=5"]] {
        let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap(), args[0], args[1]]);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(text(&out).contains(": the gate has no comparison budget: it asks its K anchors"), "{}", text(&out));
    }
    // So `gate --help` does not offer the shorthand (`run --help` does).
    let help = stdout(&run_bin(dir.path(), &["gate", "--help"]));
    assert!(help.contains("--max-usd <USD>") && !help.contains("--max-comparisons"), "{help}");
    assert!(stdout(&run_bin(dir.path(), &["run", "--help"])).contains("--max-comparisons <N>"));
}

#[test]
fn gate_with_a_labels_file_asks_for_missing_labels_then_decides() {
    let dir = tempfile::tempdir().unwrap();
    // A labels file that is not there is found before the run pays for any query.
    let cfg = synthetic_config(dir.path(), "nolab", "gate:\n  anchors: 10\n  labels: nope.jsonl\n");
    // The run and its dry run refuse it alike, naming the config's line of `gate.labels` (hunt
    // 43: the dry run passed it, and the run named neither the config nor its line).
    for dry in [false, true] {
        let args = [&["run", cfg.to_str().unwrap(), "--quiet"][..], if dry { &["--dry-run"] } else { &[] }].concat();
        let out = run_bin(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            stderr(&out).contains("nolab.yaml:17: gate.labels: cannot read labels file ")
                && stderr(&out).contains("nope.jsonl: No such file"),
            "{}",
            text(&out)
        );
    }
    assert!(!dir.path().join("runs/nolab/verdicts.jsonl").exists(), "nothing was sent");
    // Given by --set from another folder than the config's: the override is named, with the
    // hint that the file exists from the shell's folder (hunt 45: neither was said).
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let sub = write(&dir.path().join("sub"), "nolab.yaml", &std::fs::read_to_string(&cfg).unwrap());
    write(dir.path(), "here.jsonl", "");
    let out = run_bin(dir.path(), &["run", sub.to_str().unwrap(), "--dry-run", "--set", "gate.labels=here.jsonl"]);
    assert!(
        stderr(&out).contains("--set gate.labels=here.jsonl: gate.labels: cannot read labels file ")
            && stderr(&out).contains("here.jsonl exists from here: give it as an absolute path"),
        "{}",
        text(&out)
    );
    // A label naming no base of the pool: the labels file's line, under the config's.
    write(dir.path(), "bad.jsonl", "\n{\"a\": \"i000\", \"b\": \"zz\", \"better\": \"i000\"}\n");
    let bad = synthetic_config(dir.path(), "badlab", "gate:\n  anchors: 10\n  labels: bad.jsonl\n");
    let out = run_bin(dir.path(), &["run", bad.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("badlab.yaml:17: gate.labels: ")
            && stderr(&out).contains("bad.jsonl:2: \"zz\" is not a base of pool"),
        "{}",
        text(&out)
    );
    write(dir.path(), "labels.jsonl", "");
    let cfg = synthetic_config(dir.path(), "lab", "gate:\n  anchors: 10\n  labels: labels.jsonl\n");
    // The dry run says what the file holds and what a run needs of it (hunt 44: it said nothing
    // of an empty file, which the run's gate stops on).
    let dry = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        stdout(&dry).contains("gate: 10 anchors at the end of the run, labelled from ")
            && stdout(&dry).contains("labels.jsonl (0 labelled pairs there now); an anchor without a label stops the gate, which lists them in "),
        "{}",
        text(&dry)
    );
    // The run runs its gate at the end: it reports the apparent ranking, then stops on the
    // missing labels (result.json is written).
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("10 of 10 anchors have no label"), "{}", text(&out));
    let r = json(&dir.path().join("runs/lab/result.json"));
    assert_eq!(r["reported"], "apparent");
    // The prior-selected note speaks of the config's gate, not of adding one (hunt 47).
    let notes = strs(&r["notes"]);
    assert!(
        notes.iter().any(|n| n.starts_with("c[x] is prior-selected")
            && n.contains("; this config's `gate:` section tests that once the run ends")),
        "{notes:?}"
    );
    assert!(notes.iter().all(|n| !n.contains("a `gate:` section in the config")), "{notes:?}");
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("10 of 10 anchors have no label"), "{}", text(&out));
    let todo = std::fs::read_to_string(dir.path().join("runs/lab/anchors_to_label.jsonl")).unwrap();
    assert_eq!(todo.lines().count(), 10);
    // Label by the true θ of the synthetic pool (same spec, so the same pool).
    let s = synth(30, 0.0, 1.0, false, 3);
    let theta = |id: &str| s.theta[s.pool.bases.iter().position(|b| b == id).unwrap()];
    let mut labels = String::new();
    let mut corrected_right = 0;
    for line in todo.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (a, b) = (v["a"].as_str().unwrap(), v["b"].as_str().unwrap());
        let better = if theta(a) > theta(b) { a } else { b };
        corrected_right += usize::from(better == a); // `a` is the base the corrected ranking prefers
        labels.push_str(&format!("{{\"a\": \"{b}\", \"b\": \"{a}\", \"better\": \"{better}\"}}\n"));
    }
    write(dir.path(), "labels.jsonl", &labels);
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let d = json(&dir.path().join("runs/lab/gate.json"))["decision"].clone();
    assert_eq!(
        (d["n10"].as_u64().unwrap() as usize, d["n01"].as_u64().unwrap() as usize),
        (corrected_right, 10 - corrected_right)
    );
    assert_eq!(d["n_ties"], 0);
    // A label naming a third base is rejected with file and line.
    write(dir.path(), "labels.jsonl", "{\"a\": \"i000\", \"b\": \"i001\", \"better\": \"i002\"}\n");
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(text(&out).contains("labels.jsonl:1: better = \"i002\""), "{}", text(&out));
    // The labels written as one JSON array are said to be that (hunt 46: "at [0]: expected a
    // string, found an object").
    write(dir.path(), "labels.jsonl", "[{\"a\": \"i000\", \"b\": \"i001\", \"better\": \"tie\"}]\n");
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(
        text(&out).contains("labels.jsonl:1: the file looks like one JSON array; expected JSON Lines: one JSON object per line, no enclosing [ ], each {\"a\": BASE, \"b\": BASE, \"better\": BASE or \"tie\"}"),
        "{}",
        text(&out)
    );
    // One pair labelled twice, differently: refused (the last label silently won before); the
    // same label twice, or a BOM before the first line, is read.
    let first = labels.lines().next().unwrap().to_owned();
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let (a, b, better) = (v["a"].as_str().unwrap(), v["b"].as_str().unwrap(), v["better"].as_str().unwrap());
    let other = if better == a { b } else { a };
    write(
        dir.path(),
        "labels.jsonl",
        &format!("\u{feff}{labels}{first}\n{{\"a\": \"{b}\", \"b\": \"{a}\", \"better\": \"{other}\"}}\n"),
    );
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    assert!(
        text(&out).contains(&format!("labels.jsonl:12: \"{lo}\" vs \"{hi}\" is labelled {other} here but {better} at line 1; expected one label per pair")),
        "{}",
        text(&out)
    );
    write(dir.path(), "labels.jsonl", &format!("\u{feff}{labels}{first}\n"));
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

/// configs/paired.yaml in `dir`, reading the shipped data, its runs under `dir/runs`, with a
/// budget of `max` comparisons.
fn shipped_paired(dir: &std::path::Path, max: usize) -> std::path::PathBuf {
    let yaml = std::fs::read_to_string(root().join("configs/paired.yaml"))
        .unwrap()
        .replace("../data/", &format!("{}/data/", root().display()))
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("max_comparisons: 240", &format!("max_comparisons: {max}"));
    write(dir, "paired.yaml", &yaml)
}

/// The paired run's within-base verdicts, resumed under `design: single`, are not fitted there:
/// the run says how many and how to use them. Before, they were dropped without a word.
#[test]
fn within_base_verdicts_left_out_by_a_single_design_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_paired(dir.path(), 40);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run_bin(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--quiet", "--set", "design=single", "--max-comparisons", "48"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("runs/summeval-paired holds 32 verdicts of this judge comparing two renderings of one base (asked under design: paired); design: single neither asks nor fits them"),
        "{}",
        text(&out)
    );
    // Under its own design nothing is said.
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--max-comparisons", "56"]);
    assert!(!text(&out).contains("comparing two renderings of one base"), "{}", text(&out));
}

#[test]
fn paired_summeval_run_queries_within_base_pairs_first_and_identifies_c() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_paired(dir.path(), 160);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/summeval-paired");
    let verdicts: Vec<serde_json::Value> = std::fs::read_to_string(run.join("verdicts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(verdicts.len(), 160);
    let base = |id: &str| id.split('.').next().unwrap().to_string();
    // 16 bases × 2 orders: the first 32 verdicts are exactly the within-base queries.
    let mut first: Vec<(String, String)> =
        verdicts[..32].iter().map(|v| (v["a"].as_str().unwrap().into(), v["b"].as_str().unwrap().into())).collect();
    assert!(first.iter().all(|(a, b)| base(a) == base(b) && a != b));
    first.sort();
    first.dedup();
    assert_eq!(first.len(), 32);
    assert!(verdicts[32..].iter().all(|v| base(v["a"].as_str().unwrap()) != base(v["b"].as_str().unwrap())));
    let result = json(&run.join("result.json"));
    assert_eq!(result["theta"].as_object().unwrap().len(), 16, "ranked over bases");
    let ident = &result["identifiability"]["words"];
    assert_eq!(ident["identified"], true);
    assert!(ident["range_nats"].as_f64().unwrap() > 1.0, "{ident}");
    assert!(result["notes"].to_string().contains("renderings of a base really share quality"));
    // The mock's verbosity bias in logits per sd of words: verb_per_word · sd(words) / temperature.
    let pool = topk_judge::store::pool_file::read_pool(
        &root().join("data/summeval_paired.jsonl"),
        Some("dm-test-2377095dda83df778e34304b7a09813808105d3b"),
    )
    .unwrap();
    let w: Vec<f64> =
        pool.items.iter().map(|i| topk_judge::domain::pool::word_count(i.text.as_deref().unwrap()) as f64).collect();
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let sd = (w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
    let c_true = 0.01 * sd / 0.25;
    let (c, c_sd) = (result["c"]["words"].as_f64().unwrap(), result["c_sd"]["words"].as_f64().unwrap());
    assert!((c - c_true).abs() < 3.0 * c_sd, "ĉ = {c} ± {c_sd}, true {c_true}");
}

#[test]
fn the_same_judge_on_single_renderings_leaves_c_prior_selected() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "single", 120, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let result = json(&dir.path().join("runs/single/result.json"));
    assert_eq!(result["identifiability"]["words"]["identified"], false, "{}", result["identifiability"]);
    assert!(text(&out).contains("prior-selected"), "{}", text(&out));
}

#[test]
fn shipped_paired_pool_is_rebuilt_from_the_summeval_pools() {
    let pools = topk_judge::store::pool_file::read_pools(&summeval()).unwrap();
    let expected = topk_judge::analysis::design::paired_pools_jsonl(&pools);
    let shipped = std::fs::read_to_string(root().join("data/summeval_paired.jsonl")).unwrap();
    assert!(shipped == expected, "data/summeval_paired.jsonl is stale: run `cargo run --example make_paired`");
    let paired = topk_judge::store::pool_file::read_pools(&root().join("data/summeval_paired.jsonl")).unwrap();
    assert_eq!(paired.len(), pools.len());
    for (p, q) in paired.iter().zip(&pools) {
        assert_eq!((p.n_items(), p.n_bases()), (2 * q.n_items(), q.n_items()));
        assert_eq!(p.base_quality(), q.base_quality());
    }
}

#[test]
fn errors_name_the_key_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "bad", 10, "design: paired\n");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("design: paired needs items that share a `base`"), "{}", text(&out));
    let cfg = synthetic_config(dir.path(), "nogate", "");
    let out = run_bin(dir.path(), &["profile", cfg.to_str().unwrap()]);
    assert!(text(&out).contains("no verdicts at") && text(&out).contains("topk-judge run"), "{}", text(&out));
    // The command it names is the one that fills that folder: with the same --name and --set
    // (it dropped them, and the run it named went to another folder: hunt 39 F7).
    write(dir.path(), "labels.jsonl", "");
    let labelled = synthetic_config(dir.path(), "labelled", "gate:\n  anchors: 5\n  labels: labels.jsonl\n");
    let out = run_bin(dir.path(), &["gate", labelled.to_str().unwrap(), "--name", "foo", "--set", "k=4"]);
    let want =
        format!("runs/foo/verdicts.jsonl: run `topk-judge run {} --name foo --set k=4` first", labelled.display());
    assert!(text(&out).contains(&want), "{want}\n{}", text(&out));
    // A run folder copied under another name keeps its config's name: the command it names
    // fills the copy, with --name (it named one that filled the original: hunt 40 F5).
    let made = mock_config(dir.path(), "orig", 8, "");
    assert!(run_bin(dir.path(), &["run", made.to_str().unwrap(), "--quiet"]).status.success());
    let (orig, copy) = (dir.path().join("runs/orig"), dir.path().join("runs/copy"));
    assert!(std::process::Command::new("cp").arg("-r").arg(&orig).arg(&copy).status().unwrap().success());
    std::fs::remove_file(copy.join("verdicts.jsonl")).unwrap();
    for what in ["profile", "gate"] {
        let out = run_bin(dir.path(), &[what, "runs/copy"]);
        assert!(
            text(&out).contains("runs/copy/verdicts.jsonl: run `topk-judge run runs/copy/config.yaml --name copy` first (the config names its folder orig, so without --name it fills runs/orig)"),
            "{what}: {}",
            text(&out)
        );
    }
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(text(&out).contains("no `gate:` section"), "{}", text(&out));
    let cfg = synthetic_config(dir.path(), "nosrc", "gate:\n  anchors: 5\n");
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(text(&out).contains("gate: needs a label source"), "{}", text(&out));
    let cfg = write(
        dir.path(),
        "both.yaml",
        "name: both\npool:\n  file: x.jsonl\n  synthetic: {n: 5}\nk: 2\njudge: {synthetic: {}}\n",
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(text(&out).contains("pool: give either `file` or `synthetic`"), "{}", text(&out));
}

/// A `gate:` block runs the gate at the end of the run; an unbiased trusted judge keeps the
/// apparent ranking; `report` shows the decision and both rankings.
#[test]
fn a_gate_in_the_config_runs_after_the_run_and_decides_what_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let gate = "gate:\n  anchors: 10\n  trusted:\n    mock: {mode: stochastic, pos_bias: 0.0, verb_per_word: 0.0, temperature: 0.1, seed: 3}\n";
    let cfg = main_job(dir.path(), "gated", gate);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/gated");
    let g = json(&run.join("gate.json"));
    let d = &g["decision"];
    let (n10, n01) = (d["n10"].as_u64().unwrap() as usize, d["n01"].as_u64().unwrap() as usize);
    let p = topk_judge::analysis::gate::sign_test_p(n10, n01);
    assert!((d["p_value"].as_f64().unwrap() - p).abs() < 1e-12);
    assert_eq!(d["enable"], false, "an unbiased trusted judge does not support the correction: {d}");
    // 10 anchors in both orders, cached like any verdict.
    assert_eq!(std::fs::read_to_string(run.join("trusted_verdicts.jsonl")).unwrap().lines().count(), 20);
    let r = json(&run.join("result.json"));
    assert_eq!(r["reported"], "apparent");
    assert!(
        r["reported_reason"].as_str().unwrap().starts_with("the trusted-anchor gate kept the apparent ranking"),
        "{}",
        r["reported_reason"]
    );
    assert_eq!(r["gate"]["chosen"], "apparent");
    assert_eq!(r["gate"]["topk"], r["topk"]);
    // The prior-selected note no longer advises a gate: this run had one.
    let notes: Vec<String> = strs(&r["notes"]);
    assert!(notes.iter().all(|n| !n.contains("test that with a trusted-anchor gate")), "{notes:?}");
    assert!(
        notes.iter().any(|n| n.starts_with("c[words] is prior-selected")
            && n.ends_with("; the trusted-anchor gate of this run tested it (its decision is shown with the ranking)")),
        "{notes:?}"
    );
    let s = stdout(&out);
    assert!(s.contains("/runs/gated/gate.json): P(Bin("), "{s}");
    assert_eq!(s.matches("P(Bin(").count(), 1, "the gate's decision is printed once: {s}");
    assert!(s.contains("point top-3 (apparent, reported): M12, M13, M0"), "{s}");
    assert!(!s.contains("chosen (apparent)"), "{s}");
    // Re-running asks the trusted judge nothing new.
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(run.join("trusted_verdicts.jsonl")).unwrap().lines().count(), 20);
    // report shows the gate decision and both rankings.
    let out = run_bin(dir.path(), &["report", "runs/gated"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("reported ranking: apparent quality φ̂"), "{md}");
    assert!(md.contains("reported (apparent) top-3: M12, M13, M0"), "{md}");
    assert!(md.contains("bias-corrected (beside) top-3: M13, M12, M22"), "{md}");
    assert!(md.contains("/runs/gated/gate.json`): P(Bin("), "{md}");
    assert!(md.contains("keep the apparent ranking"), "{md}");

    // The gate's spend counts in the run's budget: a priced trusted judge that does not fit in
    // what max_usd leaves is refused before any query is sent.
    let priced = "  max_usd: 0.0\ngate:\n  anchors: 4\n  trusted:\n    mock: {pos_bias: 0.0, verb_per_word: 0.0, input_usd_per_mtok: 1.0, output_usd_per_mtok: 1.0}\n";
    let cfg = mock_config(dir.path(), "priced", 24, priced);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("the gate's 8 trusted queries could cost up to $"), "{}", text(&out));
    assert!(text(&out).contains("has $0 left"), "{}", text(&out));
    // Said before the run: the gate cannot fit in max_usd, so nothing is held for it.
    assert!(!text(&out).contains("warning: warning:"), "{}", text(&out));
    assert!(
        text(&out).contains("warning: the gate's trusted judge may cost up to $")
            && text(&out).contains("more than max_usd $0 leaves ($0.000000): nothing is held for it, so the run's judge may spend the budget"),
        "{}",
        text(&out)
    );
    assert!(
        !dir.path().join("runs/priced/trusted_verdicts.jsonl").exists()
            || std::fs::read_to_string(dir.path().join("runs/priced/trusted_verdicts.jsonl")).unwrap().is_empty()
    );
    assert_eq!(json(&dir.path().join("runs/priced/result.json"))["reported"], "apparent");

    // A gate that pays its trusted judge at the end of the run: the result.json and summary of
    // that same run hold its spend in the folder's books (they held the run's verdicts alone
    // until the next invocation).
    let paid = "  max_usd: 1.0\ngate:\n  anchors: 4\n  trusted:\n    mock: {pos_bias: 0.0, verb_per_word: 0.0, input_usd_per_mtok: 1.0, output_usd_per_mtok: 1.0}\n";
    let cfg = mock_config(dir.path(), "paid", 24, paid);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let (r, g) = (json(&dir.path().join("runs/paid/result.json")), json(&dir.path().join("runs/paid/gate.json")));
    let trusted = g["trusted_spend_usd"].as_f64().unwrap();
    assert!(trusted > 0.0, "{g}");
    let f = &r["folder_spend"];
    // (Sums of the same costs in the order their replies came: equal to rounding.)
    assert!((f["gate_trusted_usd"].as_f64().unwrap() - trusted).abs() < 1e-12, "{f}");
    let run_usd = r["spend_usd"].as_f64().unwrap();
    assert!((f["spend_usd"].as_f64().unwrap() - (run_usd + trusted)).abs() < 1e-12, "{f}");
    assert!((f["other_usd"].as_f64().unwrap() - trusted).abs() < 1e-12, "{f}");
    assert!(text(&out).contains("of it not for this run's verdicts: $"), "{}", text(&out));
    assert!(text(&out).contains(" for the gate's trusted judge)"), "{}", text(&out));
    // report.md says it as the summary does (it held the run's verdicts' spend alone).
    let line = text(&out).lines().find(|l| l.starts_with("run folder: its books hold")).unwrap().to_owned();
    assert!(run_bin(dir.path(), &["report", "runs/paid"]).status.success());
    let md = std::fs::read_to_string(dir.path().join("runs/paid/report.md")).unwrap();
    assert!(md.contains(&line.replace('$', "\\$")) || md.contains(&line), "{line}\n{md}");
    // Again below what the books hold: the gate's trusted verdicts are all cached, so it runs
    // (it was refused: "the gate's 0 trusted queries could cost up to $0 … has $0 left").
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--max-usd", "0.001"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json(&dir.path().join("runs/paid/gate.json"))["trusted_spend_usd"], g["trusted_spend_usd"]);
    // A run that took another folder's gate.json (`--gate FILE`), then `topk-judge gate` of its
    // folder, which pays the trusted judge: result.json and report.md say what the books hold
    // now (they left the gate's spend out until the next run).
    let cfg = mock_config(dir.path(), "later", 24, paid);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--gate", "runs/paid/gate.json", "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    // (Its trusted verdicts were paid from that folder's books, not this one's.)
    assert!(
        text(&out).contains(", paid by the gate of run \"paid\" from its folder's books (not from this run's folder)"),
        "{}",
        text(&out)
    );
    assert!(json(&dir.path().join("runs/later/result.json"))["folder_spend"].get("gate_trusted_usd").is_none());
    let out = run_bin(dir.path(), &["gate", "runs/later"]);
    assert!(out.status.success(), "{}", text(&out));
    let trusted = json(&dir.path().join("runs/later/gate.json"))["trusted_spend_usd"].as_f64().unwrap();
    let f = json(&dir.path().join("runs/later/result.json"))["folder_spend"].clone();
    assert!(trusted > 0.0 && (f["gate_trusted_usd"].as_f64().unwrap() - trusted).abs() < 1e-12, "{f}");
    assert!(run_bin(dir.path(), &["report", "runs/later"]).status.success());
    let md = std::fs::read_to_string(dir.path().join("runs/later/report.md")).unwrap();
    assert!(md.contains("for the gate's trusted judge)"), "{md}");
    // compare puts the gate's cost beside the run's (a gated run cost both; it showed the
    // judge's alone).
    let out = run_bin(dir.path(), &["compare", "runs/paid", "runs/later", "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("cmp/compare.md")).unwrap();
    let r = json(&dir.path().join("runs/later/result.json"));
    let own = r["spend_usd"].as_f64().unwrap();
    let want = format!(
        "later: its gate's trusted judge cost {trusted:.4} more (in the run folder's books, not in the spend column): {:.4} in all.",
        own + trusted
    );
    assert!(md.contains(&want), "{want}\n{md}");
    // And the plot draws the gated run at that cost, not at its judge's alone.
    let svg = std::fs::read_to_string(dir.path().join("cmp/recall_vs_spend.svg")).unwrap();
    assert!(
        svg.contains("later (last point: with its gate)") && svg.contains("paid (last point: with its gate)"),
        "{svg}"
    );
}

#[test]
/// The gate reads the run's verdicts; the run's live judge is only described (gate.json names
/// it), so its API key is not needed: without it the gate goes on to the verdicts.
fn gate_on_a_live_run_needs_no_key_for_the_runs_judge() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = root().join("configs/openai.yaml");
    let text0 = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("out_dir: ../runs", &format!("out_dir: {}", dir.path().join("runs").display()));
    let text0 = text0
        .replace("../data/", &format!("{}/data/", root().display()))
        .replace("../prompts/", &format!("{}/prompts/", root().display()));
    let labels = write(dir.path(), "labels.jsonl", "");
    let cfg = write(dir.path(), "openai.yaml", &format!("{text0}\ngate:\n  labels: {}\n", labels.display()));
    // A run folder with (no) verdicts, so that the gate gets as far as its judge.
    std::fs::create_dir_all(dir.path().join("runs/summeval-openai")).unwrap();
    std::fs::write(dir.path().join("runs/summeval-openai/verdicts.jsonl"), "").unwrap();
    let out = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["gate", cfg.to_str().unwrap()])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("OPENAI_API_KEY"), "the run's judge needs no key here: {}", text(&out));
    assert!(text(&out).contains("runs/summeval-openai: the run has no valid verdicts"), "{}", text(&out));
    assert!(!dir.path().join("runs/summeval-openai/gate.json").exists());
}

/// A gate whose trusted judge has a prompt template: the run folder's config names the folder's
/// copy, the config its own path, and that is one judge (`gate CONFIG` was refused as "made with
/// other gate settings"); another model is another judge.
#[test]
fn a_trusted_judges_template_copied_into_the_folder_is_the_same_gate() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prompts/test.j2", crate::common::fake_openai::TEMPLATE);
    let gate = "budget:\n  max_comparisons: 40\n  max_usd: 0.001\ngate:\n  anchors: 4\n  trusted:\n    openai:\n      base_url: http://127.0.0.1:9/v1\n      model: m\n      api_key_env: TOPK_GATE_NO_KEY\n      api_key_required: false\n      prompt: prompts/test.j2\n      max_tokens: 4\n      price: {input_usd_per_mtok: 1, output_usd_per_mtok: 1}\n";
    let cfg = main_job(dir.path(), "gl", "");
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    let yaml = yaml.split("budget:").next().unwrap().to_owned() + gate;
    let cfg = write(dir.path(), "gl.yaml", &yaml);
    let _ = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(dir.path().join("runs/gl/config.yaml").exists());
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap()]);
    assert!(!text(&out).contains("other gate settings"), "{}", text(&out));
    assert!(text(&out).contains("the run's budget (budget.max_usd) has"), "{}", text(&out));
    let out = run_bin(dir.path(), &["gate", cfg.to_str().unwrap(), "--set", "gate.trusted.openai.model=other"]);
    assert!(text(&out).contains("other gate settings: gate.trusted (\"openai m @ "), "{}", text(&out));
}

/// `run --gate FILE` with a file that cannot apply (missing, or not a gate.json) stops before
/// the run spends anything.
#[test]
fn a_gate_file_that_cannot_apply_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "gated", 24, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--gate", "nope.json"]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("error: --gate nope.json: ") && t.contains("nope.json"), "{t}");
    assert!(!t.contains("stopped:"), "{t}");
    assert!(!dir.path().join("runs/gated/verdicts.jsonl").exists(), "{t}");
    let not_gate = write(dir.path(), "result.json", "{\"k\": 3}\n");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--gate", not_gate.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("expected the gate.json written by `topk-judge gate`"), "{}", text(&out));
    let not_json = write(dir.path(), "notes.txt", "not json\n");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--gate", not_json.to_str().unwrap()]);
    let says = "notes.txt:1: not JSON (expected ident at line 1 column 2); expected the gate.json written by `topk-judge gate`";
    assert!(!out.status.success() && text(&out).contains(says), "{}", text(&out));
    assert!(!dir.path().join("runs/gated/verdicts.jsonl").exists());
    // The dry run reads the file as the run does.
    for (file, says) in [("nope.json", "error: --gate nope.json: "), (not_json.to_str().unwrap(), says)] {
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--gate", file, "--dry-run"]);
        assert!(!out.status.success() && text(&out).contains(says), "{file}: {}", text(&out));
    }
}

/// Six bases of equal quality and length, a judge without bias: every fit ties them, 1e-19
/// apart. The run and the gate both say the top-2 is 2 of the tied six, in pool order (hunt 59
/// F3: the gate named "d, e", ordered by the signs of values 1e-19 around 0, and the run listed
/// the tie as b, c, d, f, a, e); with no anchor the gate says there is nothing to test.
#[test]
fn the_gate_names_a_tie_at_the_boundary_as_the_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let items: Vec<serde_json::Value> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|i| serde_json::json!({"id": i, "text": vec![format!("word{i}"); 10].join(" "), "quality": 5}))
        .collect();
    write(d, "peq.jsonl", &(serde_json::json!({"pool_id": "peq", "task": "t", "items": items}).to_string() + "\n"));
    let cfg = write(
        d,
        "peq.yaml",
        "name: peq\nout_dir: runs\npool: {file: peq.jsonl}\nk: 2\njudge: {mock: {mode: deterministic, pos_bias: 0.0, verb_per_word: 0.0}}\nacquisition: {identical_texts: send}\nbudget: {max_comparisons: 60}\n",
    );
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("point top-2 (apparent, reported): 2 of the tied a, b, c, d, e, f"),
        "{}",
        stdout(&out)
    );
    let out = run_bin(
        d,
        &[
            "gate",
            "runs/peq",
            "--set",
            "gate={anchors: 10, trusted: {mock: {mode: deterministic, pos_bias: 0, verb_per_word: 0}}}",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    for line in [
        "note: no pair on which the rankings disagree",
        "decision: no anchors: the naive and corrected rankings order every pair near the boundary alike, so there is nothing to test; keep the apparent ranking",
        "naive top-2: 2 of the tied a, b, c, d, e, f",
        "corrected top-2: 2 of the tied a, b, c, d, e, f",
    ] {
        assert!(stdout(&out).contains(line), "{line}: {}", stdout(&out));
    }
    let g = json(&d.join("runs/peq/gate.json"));
    assert_eq!((strs(&g["naive_topk"]).len(), strs(&g["naive_tied"]).len()), (0, 6), "{g}");
}

/// `gate FOLDER` on a folder whose config.yaml was edited after the run (no override given)
/// says the file changed, not "drop the override" (hunt 59 F9).
#[test]
fn a_gate_on_an_edited_folder_names_the_edited_config_not_an_override() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = shipped(d, "synthetic.yaml", |y| y.replace("max_comparisons: 870", "max_comparisons: 120"));
    assert!(run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let folder = d.join("runs/synthetic-spurious");
    let c = folder.join("config.yaml");
    let text_of = std::fs::read_to_string(&c).unwrap();
    assert!(text_of.contains("\nk: 5"), "{text_of}");
    std::fs::write(&c, text_of.replace("\nk: 5", "\nk: 3")).unwrap();
    let o = run_bin(d, &["gate", folder.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains("the run there was made with k = 5, and this gate would use k = 3; its gate.json would not describe the run: ")
            && stderr(&o).contains("config.yaml was changed after the run; run it again first, or restore the settings the run was made with"),
        "{}",
        text(&o)
    );
    assert!(!stderr(&o).contains("drop the override"), "{}", text(&o));
}
