#!/usr/bin/env python3
"""Convert LLMBar's pairs and its judges' both-order verdicts into topk-judge's formats.

Source: github.com/princeton-nlp/LLMBar, commit 900616bff90b6c6c8e1681f7d079250637c55992
(MIT licence). Only data files are read: Dataset/{LLMBar/<subset>,Processed/<set>}/dataset.json
and the judges' outputs Dataset/.../evaluators/<judge>/<strategy>/result.json.

Usage (from the repository root):
    git -C <LLMBar clone> archive 900616bff90b6c6c8e1681f7d079250637c55992 Dataset | tar -x -C <tmp>
    python3 data/build/llmbar.py <tmp>/Dataset data

Writes
    llmbar_pairs.jsonl        the 419 LLMBar pairs (Natural + 4 Adversarial subsets), audit pairs format
    llmbar_other_pairs.jsonl  the 466 FairEval, LLMEval^2 and MT-Bench pairs as processed by the LLMBar authors
    llmbar_verdicts.jsonl     every ordered verdict of the kept judge x prompting strategies (a recording)

and checks that the per-order accuracy recomputed from the written verdicts (unparsed verdicts
counted as wrong, as LLMBar does) equals correct_False / correct_True of every statistics.json.
"""
import ast
import json
import os
import re
import sys

LLMBAR_SUBSETS = [
    "Natural",
    "Adversarial/Neighbor",
    "Adversarial/GPTInst",
    "Adversarial/GPTOut",
    "Adversarial/Manual",
]
OTHER_SUBSETS = ["FairEval", "LLMEval^2", "MT-Bench"]
# Plain pairwise prompting strategies: one prompt per presentation order, both orders run.
# Left out: Swap / Swap_CoT (a synthesis step across the two orders) and Rating* (each output
# scored alone, ties broken by position inside the harness).
STRATEGIES = [
    "Vanilla",
    "Vanilla_NoRules",
    "Vanilla_1shot",
    "Vanilla_2shot",
    "CoT",
    "Metrics",
    "Reference",
    "Metrics_Reference",
]


def subset_dir(root, subset):
    if subset in OTHER_SUBSETS:
        return os.path.join(root, "Processed", subset)
    return os.path.join(root, "LLMBar", subset)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def winner(result, swap):
    """The output (1 or 2, original labels) the judge chose; swap = True is output_2 shown first.
    None when the harness could not parse a verdict."""
    w = result[f"swap = {swap}"]["winner"]
    return None if w is None else int(w)


def verdict(pid, first, second, w, judge, strategy):
    """One ordered verdict: y = 1 when the first-shown output won, 0 when the second did."""
    line = {"pool_id": pid, "a": first, "b": second}
    if w is None:
        line["y"] = None
        line["invalid_reason"] = "unparsed"
    else:
        line["y"] = 1 if str(w) == first else 0
    line["judge"] = judge
    line["prompting"] = strategy
    return line


def check_statistics(stats_path, rows, labels):
    """correct_False / correct_True of LLMBar's statistics.json from our verdict lines."""
    stats = load(stats_path)
    # rows: pid -> {"1": y with output_1 first, "2": y with output_2 first}
    right = {"1": 0, "2": 0}
    for pid, ys in rows.items():
        for first in ("1", "2"):
            y = ys[first]
            if y is None:
                continue
            picked = first if y == 1 else ("2" if first == "1" else "1")
            right[first] += picked == str(labels[pid])
    for key, first in (("correct_False", "1"), ("correct_True", "2")):
        want = int(re.match(r"\s*(\d+)\s*/", stats[key]).group(1))
        assert right[first] == want, (stats_path, key, right[first], want)


def main(root, out_dir):
    pairs_out = {"llmbar_pairs.jsonl": [], "llmbar_other_pairs.jsonl": []}
    verdicts = []
    checked = 0
    for subset in LLMBAR_SUBSETS + OTHER_SUBSETS:
        sdir = subset_dir(root, subset)
        data = load(os.path.join(sdir, "dataset.json"))
        target = "llmbar_pairs.jsonl" if subset in LLMBAR_SUBSETS else "llmbar_other_pairs.jsonl"
        ids, labels = [], {}
        for i, inst in enumerate(data):
            pid = f"{subset}/{i:03d}"
            ids.append(pid)
            labels[pid] = int(inst["label"])
            assert labels[pid] in (1, 2), (pid, inst["label"])
            pairs_out[target].append(
                {
                    "id": pid,
                    "task": inst["input"],
                    "x": {"id": "1", "text": inst["output_1"]},
                    "y": {"id": "2", "text": inst["output_2"]},
                    "winner": "x" if labels[pid] == 1 else "y",
                }
            )
        edir = os.path.join(sdir, "evaluators")
        if not os.path.isdir(edir):
            continue
        for judge in sorted(os.listdir(edir)):
            for strategy in STRATEGIES:
                rdir = os.path.join(edir, judge, strategy)
                rpath = os.path.join(rdir, "result.json")
                if not os.path.exists(rpath):
                    continue
                res = load(rpath)
                assert len(res) == len(data), (rpath, len(res), len(data))
                rows = {}
                for pid, inst, r in zip(ids, data, res):
                    assert r["input"] == inst["input"] and r["output_1"] == inst["output_1"], rpath
                    results = r["results"]
                    if isinstance(results, str):
                        results = ast.literal_eval(results)
                    final = results[-1]  # the verdict step (after generated metrics or references)
                    w12, w21 = winner(final, False), winner(final, True)
                    first12 = verdict(pid, "1", "2", w12, judge, strategy)
                    first21 = verdict(pid, "2", "1", w21, judge, strategy)
                    verdicts += [first12, first21]
                    rows[pid] = {"1": first12["y"], "2": first21["y"]}
                check_statistics(os.path.join(rdir, "statistics.json"), rows, labels)
                checked += 1
    os.makedirs(out_dir, exist_ok=True)
    for name, rows in list(pairs_out.items()) + [("llmbar_verdicts.jsonl", verdicts)]:
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
        print(f"wrote {len(rows)} lines to {name}")
    print(f"checked per-order accuracy against {checked} statistics.json files")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
