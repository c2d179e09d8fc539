"""Build data/summeval_systems.jsonl: the 100 SummEval pools (CNN/DM articles) with their 16
system summaries, each item marked with the system that wrote it ("system" = SummEval system id).

Usage: python3 data/build/summeval_systems.py SUMMEVAL_POOLS_JSONL data/summeval_systems.jsonl
The input is the full conversion described in data/README.md (one pool per article, items
M0 … M23 with text, words, human ratings and quality); nothing else is changed.
"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
    for line in f:
        if not line.strip():
            continue
        pool = json.loads(line)
        for it in pool["items"]:
            it["system"] = it["id"]
        out.write(json.dumps(pool, ensure_ascii=False) + "\n")
