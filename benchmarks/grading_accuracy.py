"""Grader accuracy per answer type: plain math-verify vs the grader before (a git ref) vs now, in one run.

Cases: the tables in tests/grading/tables.py, (gold, response, expected, reason), one per answer type
(real benchmark golds, other graders' public test tables, model-style outputs). For each table it
prints false negatives (a correct answer refused) and false positives (a wrong answer accepted) of
  * plain math-verify 0.9.0 (`parse` + `verify`, antlr4 4.13.2; tests/grading/plain_math_verify.py),
  * the grader at `--ref` (default: the commit before this issue's work), extracted with `git archive`
    and run in a child interpreter,
  * the grader in this working tree,
and the share of verdicts whose answer came from the no-marker fallback (`answer_source`). A second table
counts the same errors per answer category of the gold (integers, fractions, decimals, scientific notation,
expressions, tuples, intervals, sets, equations, units, text; `category`), plain math-verify vs now.

`--fuzz K` adds a false-positive hunt over every K-th real gold of the 7 sets: its near miss
(`rewrites.near_miss`) and, for an integer gold g, answers that contain g but are not g (`\\frac{1}{g}`,
`g^{2}`, `[0,g)`, `x_{g}`, `AZgA`, `g+1`, `g \\times 10^3`, `\\sqrt{g}`, `2g`, `g!`, `\\frac{g}{7}`; golds
0, 1 and 2 are skipped there, where some of these equal g), each in six response shapes (boxed, answer
line, `$...$` and plain text without a marker). Every acceptance is a false positive.

`--dev` grades instead the development set of real model outputs (benchmarks/data/grading_dev, issue 40):
misses and false accepts per answer category and per response shape, this grader vs plain math-verify, on
the tune half and the held-out half (`--half tune`: one of them; `--show-dev`: list the grader's errors).
`--dev-set grading_dev2` reads the second held-out set instead (issue 40: competition math and reasoning-model
outputs from three other dumps, benchmarks/grading_dev2_build.py), with the same two halves; `grading_dev3` the third
(gpt-3.5-turbo answering MGSM in six languages, ToRA on GSM8K; benchmarks/grading_dev3_build.py); `grading_mgsm` MGSM's
worked exemplars in eleven languages, each with its own answer and another's (benchmarks/grading_mgsm_build.py).

    .venv/bin/python benchmarks/grading_accuracy.py [--ref fd0b393] [--show] [--fuzz 3 [--fuzz-languages]]
    .venv/bin/python benchmarks/grading_accuracy.py --dev [--dev-set grading_dev2] [--half tune --show-dev]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "grading"))
from tables import TABLES  # noqa: E402

BEFORE_REF = "fd0b393"  # main before issue 14


def cases() -> list[tuple[str, str, str, bool]]:
    return [(name, g, r, e) for name, table in TABLES.items() for g, r, e, _ in table]


def plain_math_verify(pairs: list[list[str]]) -> list[bool]:
    out = subprocess.run([sys.executable, str(ROOT / "tests/grading/plain_math_verify.py")],
                         input=json.dumps(pairs), capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


def project(pairs: list[list[str]]) -> list[dict]:
    from dhpo_suite.grading import GraderPool

    with GraderPool(workers=2, timeout=10.0) as pool:
        verdicts = pool.grade_many([(r, g) for g, r in pairs])
    return [{"correct": v.correct, "source": getattr(v, "answer_source", None)} for v in verdicts]


def project_at(ref: str, pairs: list[list[str]]) -> list[dict]:
    """The grader as it was at `ref`, run from an extracted copy of the package."""
    archive = subprocess.run(["git", "archive", ref, "dhpo_suite"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        tarfile.open(fileobj=BytesIO(archive)).extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": tmp}
        out = subprocess.run([sys.executable, __file__, "--child"], input=json.dumps(pairs), env=env,
                             capture_output=True, text=True, check=True, cwd=tmp)
    return json.loads(out.stdout.strip().splitlines()[-1])


SHAPES = ("so we get {}.", "Therefore the value is ${}$.", "{}",
          "Final Answer: The final answer is ${}$. I hope it is correct.",
          "The answer is $\\boxed{{{}}}$.", "We find $x = {}$ in the end.")
LANGUAGE_SHAPES = ("Solución: ...\nRespuesta: {}", "Donc la réponse est ${}$.", "Lösung ...\nAntwort：{}",
                   "解：...\n答案：{}", "所以最终答案是 {}", "答えは{}です。", "Ответ — {}.", "Đáp án: {}",
                   "**Respuesta final:** ${}$", "Jibu ni {}.",
                   "回答：{}。", "Ответ: {} штук.",  # --fuzz-languages: answer lines in other languages (grading_dev3)
                   "Réponse : {} $.", "Die Antwort ist also {} Euro.", "సమాధానం {}.")  # and its held-out misses
PARTS = ("\\frac{{1}}{{{g}}}", "{g}^{{2}}", "[0,{g})", "x_{{{g}}}", "AZ{g}A", "{g}+1", "{g} \\times 10^3",
         "\\sqrt{{{g}}}", "2{g}", "{g}!", "\\frac{{{g}}}{{7}}")
BENCHES = ("aime24", "aime25", "amc23", "gsm8k", "math500", "minerva_math", "olympiadbench")


def fuzz(stride: int, shapes: tuple[str, ...] = SHAPES) -> None:
    """False positives among wrong answers built from every `stride`-th real gold (see the docstring)."""
    import re

    from dhpo_suite.grading import GraderPool
    from dhpo_suite.testing.grading_rewrites import near_miss

    bench_dir = Path(os.environ.get("DHPO_BENCHMARKS_DIR", ROOT.parent / "shared" / "benchmarks"))
    items = []
    for bench in BENCHES:
        rows = [json.loads(line) for line in (bench_dir / f"{bench}.jsonl").open(encoding="utf-8")]
        for row in rows[::stride]:
            gold = row["answer"]
            golds = [gold, *row.get("answer_alt", [])]
            wrong = [near_miss(gold)]
            if re.fullmatch(r"\d+", gold) and int(gold) > 2:
                wrong += [part.format(g=gold) for part in PARTS]
            items += [(shape.format(answer), golds) for answer in wrong for shape in shapes]
    with GraderPool(workers=2, timeout=10.0) as pool:
        verdicts = pool.grade_many(items)
    accepted = [(item, v) for item, v in zip(items, verdicts) if v.correct]
    sources = {s: sum(v.answer_source == s for _, v in accepted) for s in ("boxed", "marker", "fallback")}
    print(f"\nfuzz: {len(items)} wrong answers from every {stride}th real gold; accepted (false positives): "
          f"{len(accepted)} {sources}")
    for (response, golds), v in accepted[:20]:
        print(f"  FP gold {golds[0]!r}: {response[:100]!r} ({v.reason[:80]})")


CATEGORIES = ("integers", "fractions", "decimals", "scientific", "expressions", "matrices", "tuples", "intervals",
              "sets", "equations", "units", "text")
DEV_SETS = ("grading_dev", "grading_dev2", "grading_dev3", "grading_mgsm")  # grading_mgsm: one half (tune), README


def category(gold: str) -> str:
    """The answer category of a gold (issue 27's list), read from its written form."""
    import re

    if re.search(r"\\begin\{[pbv]?matrix\}|^\[[^\[\]]*;[^\[\]]*\]$", gold.strip()):
        return "matrices"
    g = re.sub(r"\\[,!;]|\s+", " ", gold).strip().strip("$").strip()
    g = re.sub(r"(?<=\d), ?(?=\d{3}(?!\d))", "", g) if re.fullmatch(r"[-\\$]*\d{1,3}(?:, ?\d{3})+", g) else g
    if re.fullmatch(r"\\text\{\s*\(?[A-Za-z][A-Za-z ]*\)?\s*\}|[A-Za-z]{4,}|\(?[A-E]\)?", g):
        return "text"
    if re.search(r"\\%|%|\\\$|\^\s*\{?\\circ|\\(?:text|mbox|mathrm)\s*\{\s*[A-Za-z/. ]+\}"
                 r"|\d\s*(?:cm|m|km|kg|s|g)\b", g):
        return "units"
    if re.search(r"(?<![<>!\\])=|<|>|\\[lg]eq?\b|\\neq", g):
        return "equations"
    if re.fullmatch(r"[(\[].*,.*[)\]]", g) and (re.search(r"\\infty|\\cup", g) or g[0] != "(" or g[-1] != ")"):
        return "intervals"
    if g.startswith("\\{") or "," in re.sub(r"\{[^{}]*\}|\([^()]*\)", "", g):
        return "sets"
    if re.fullmatch(r"\(.*,.*\)", g):
        return "tuples"
    if re.search(r"\d[eE][-+]?\d|\\times\s*10\^|\\cdot\s*10\^", g):
        return "scientific"
    if re.fullmatch(r"-?\d*\.\d+", g):
        return "decimals"
    if re.fullmatch(r"-?(?:\\[dt]?frac\s*\{?\d+\}?\s*\{?\d+\}?|\d+\s*/\s*\d+)", g):
        return "fractions"
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+|-?\d+", g):
        return "integers"
    return "expressions"


def per_category(rows, expected, mv, after) -> None:
    """Misses (false negatives) and false accepts per answer category, plain math-verify vs now."""
    print("\n| answer category | cases | math-verify FN / FP | now FN / FP |\n|---|---|---|---|")
    cats = [category(g) for _, g, _, _ in rows]
    for name in CATEGORIES:
        idx = [i for i, c in enumerate(cats) if c == name]
        if not idx:
            continue
        exp = [expected[i] for i in idx]
        cells = [f"{fn} / {fp}" for fn, fp in (errors([got[i] for i in idx], exp) for got in (mv, after))]
        print(f"| {name} | {len(idx)} | " + " | ".join(cells) + " |")


def errors(correct: list[bool], expected: list[bool]) -> tuple[int, int]:
    fn = sum(e and not c for c, e in zip(correct, expected))
    fp = sum(c and not e for c, e in zip(correct, expected))
    return fn, fp


def shape(response: str) -> str:
    """The response's shape: boxed, or unboxed, and long (> 3,000 characters)."""
    import re

    boxed = "boxed" if re.search(r"\\(?:boxed|fbox)\b", response) else "unboxed"
    return f"{boxed}, {'long' if len(response) > 3000 else 'short'}"


def dev(halves_wanted: list[str], show: bool, dev_set: str = "grading_dev") -> None:
    """Misses and false accepts on a real-output development set, per half (module docstring)."""
    from dhpo_suite.grading import GraderPool

    folder = ROOT / "benchmarks" / "data" / dev_set
    halves = {name: [json.loads(line) for line in (folder / f"{name}.jsonl").open(encoding="utf-8")]
              for name in halves_wanted if (folder / f"{name}.jsonl").is_file()}  # grading_mgsm: tune only
    if not halves:
        sys.exit(f"error: {folder} holds no {' or '.join(halves_wanted)}.jsonl")
    for name, rows in halves.items():
        mv = plain_math_verify([[r["answer"], r["response"]] for r in rows])
        with GraderPool(workers=2, timeout=10.0) as pool:
            now = pool.grade_many([{"response": r["response"], "gold": r["answer"], "problem": r["problem"]}
                                   for r in rows])
        expected = [r["label"] for r in rows]
        ours = [v.correct for v in now]
        print(f"\n### {dev_set}, {name} half: {len(rows)} real outputs, {expected.count(False)} wrong "
              f"(misses / false accepts)\n")
        print("| answer category | rows | math-verify 0.9.0 | this grader |\n|---|---|---|---|")
        groups = [("category", lambda r: category(r["answer"]), CATEGORIES),
                  ("shape", lambda r: shape(r["response"]), None), ("source", lambda r: r["source_repo"], None)]
        for _, key, order in groups:
            keys = [key(r) for r in rows]
            for group in order or sorted(set(keys)):
                idx = [i for i, k in enumerate(keys) if k == group]
                if idx:
                    cells = [errors([got[i] for i in idx], [expected[i] for i in idx]) for got in (mv, ours)]
                    print(f"| {group} | {len(idx)} | " + " | ".join(f"{fn} / {fp}" for fn, fp in cells) + " |")
        cells = [errors(got, expected) for got in (mv, ours)]
        print(f"| **all** | {len(rows)} | " + " | ".join(f"**{fn} / {fp}**" for fn, fp in cells) + " |")
        rules = [v.answer_rule or "none" for v in now]
        print(f"\nanswer rules used: { {rule: rules.count(rule) for rule in sorted(set(rules))} }")
        if show:
            for r, v, m in zip(rows, now, mv):
                if v.correct != r["label"]:
                    print(f"WRONG expected {r['label']} (mv {m}) [{r['source_repo']} {r['source_id']}] gold "
                          f"{r['answer']!r} got {v.extracted!r} via {v.answer_rule}: {r['response'][-200:]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=BEFORE_REF, help="git ref of the 'before' grader")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--show", action="store_true", help="list every case the grader gets wrong")
    parser.add_argument("--fuzz", type=int, default=0, metavar="K", help="false-positive hunt on every K-th gold")
    parser.add_argument("--fuzz-languages", action="store_true",
                        help="with --fuzz: wrong answers on answer lines in other languages instead")
    parser.add_argument("--dev", action="store_true", help="the real-output development set (issue 40)")
    parser.add_argument("--dev-set", choices=DEV_SETS, default="grading_dev",
                        help="with --dev: which set under benchmarks/data (grading_dev2: the second held-out set)")
    parser.add_argument("--half", choices=("tune", "heldout"), help="with --dev: only this half")
    parser.add_argument("--show-dev", action="store_true", help="with --dev: list the grader's errors")
    args = parser.parse_args()
    if args.dev:
        return dev([args.half] if args.half else ["tune", "heldout"], args.show_dev, args.dev_set)
    if args.child:
        print(json.dumps(project(json.load(sys.stdin))))
        return
    rows = cases()
    pairs = [[g, r] for _, g, r, _ in rows]
    expected = [e for *_, e in rows]
    mv = plain_math_verify(pairs)
    before = [v["correct"] for v in project_at(args.ref, pairs)]
    now = project(pairs)
    after = [v["correct"] for v in now]
    print(f"{len(rows)} cases in {len(TABLES)} tables; FN = correct answer refused, FP = wrong answer "
          f"accepted; before = grader at {args.ref}\n")
    print("| answer type | cases | math-verify FN / FP | before FN / FP | after FN / FP |")
    print("|---|---|---|---|---|")
    totals = {k: [0, 0] for k in ("mv", "before", "after")}
    for name in TABLES:
        idx = [i for i, row in enumerate(rows) if row[0] == name]
        exp = [expected[i] for i in idx]
        cells = []
        for key, got in (("mv", mv), ("before", before), ("after", after)):
            fn, fp = errors([got[i] for i in idx], exp)
            totals[key][0] += fn
            totals[key][1] += fp
            cells.append(f"{fn} / {fp}")
        print(f"| {name} | {len(idx)} | " + " | ".join(cells) + " |")
    print(f"| **total** | {len(rows)} | " + " | ".join(f"**{fn} / {fp}**" for fn, fp in totals.values())
          + " |")
    per_category(rows, expected, mv, after)
    sources = [v["source"] for v in now]
    fallback = sum(s == "fallback" for s in sources)
    print(f"\nanswer_source now: boxed {sources.count('boxed')}, marker {sources.count('marker')}, "
          f"fallback {fallback} ({fallback / len(sources):.1%}), none {sources.count(None)}")
    if args.show:
        for row, got, m in zip(rows, after, mv):
            if got != row[3]:
                print(f"WRONG [{row[0]}] expected {row[3]} (math-verify {m}): gold {row[1]!r} | {row[2][:150]!r}")
    if args.fuzz:
        fuzz(args.fuzz, LANGUAGE_SHAPES if args.fuzz_languages else SHAPES)


if __name__ == "__main__":
    main()
