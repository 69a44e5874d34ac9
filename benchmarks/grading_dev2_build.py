"""Builds benchmarks/data/grading_dev2 (issue 40, second held-out set) from three public evaluation dumps.

Sources (none used for grading_dev; see the data folder's README): the one-shot-EM runs of XinghanLi66/rl-sft
(Qwen2.5-Math 1.5B and 7B on MATH-500, Minerva Math and OlympiadBench, Qwen2.5-Math's harness, one prompt
without a box instruction), bkubwimana/tegra_monitor (DeepScaleR-1.5B-Preview on AIME 2024 at seven token
budgets, `<think>` chains, many cut off) and VikhrModels/DeathMath (GPT-4o and o3-mini on Russian olympiad
problems, answers on an "Ответ:" line, a rule-based equality checker's score). Each repository is read with git
from a snapshot (`--mirror DIR`, holding `owner+name/repo` git directories) at the commit named below.

Labels: the source's own verdict, except the rows in `adjudicated.jsonl` (read by hand where the source, this
grader at the build commit and plain math-verify disagreed; `--adjudicate` lists such rows that have no
entry yet). Split: tune2 / heldout2 by the parity of sha1(repo : bench : problem id), so that one problem's
samples (several runs, several budgets) stay on one side.

    .venv/bin/python benchmarks/grading_dev2_build.py --mirror MIRROR [--adjudicate]

MIRROR: a folder of `owner+name/repo` bare git directories (the workplace's `fetch` tool writes them so).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "data" / "grading_dev2"

RLSFT = ("XinghanLi66/rl-sft", "c981ccd10c5db8fd32c7c6b21680ff0f272bb49c")
TEGRA = ("bkubwimana/tegra_monitor", "b9d0fcb624b138983497772f3dc9a0d95c6f75f7")
DEATH = ("VikhrModels/DeathMath", "14e6d0b0eae9c6461f857fec6828786848378680")

# (run folder, prompt tag, model): Qwen2.5-Math's harness, greedy, one sample a problem
RLSFT_RUNS = [("1.5B-eval-promptnobox", "qwen25-math-cot-simple",
               "Qwen2.5-Math-1.5B (one-shot-EM study, run 1.5B-eval-promptnobox: prompt without box)"),
              ("7B-eval-pi1-modify", "qwen25-math-cot", "Qwen2.5-Math-7B (one-shot-EM study, run 7B-eval-pi1-modify)")]
RLSFT_BENCHES = {"math500": 5, "minerva_math": 4, "olympiadbench": 8}  # bench: stride
TEGRA_BUDGETS = {512: 2, 2048: 1, 8192: 2}  # token budget: stride over the 30 problems
DEATH_MODELS = {"gpt-4o/details_20250408_115501.json": ("GPT-4o", 2),  # file: (model, stride)
                "o3-mini-2025-01-31/details_20250408_121611.json": ("o3-mini-2025-01-31", 1)}
NUMBER = re.compile(r"[-–]?\d+(?:\.\d+)?(?:/\d+)?")  # DeathMath golds kept: a number, decimal or fraction


def git_show(mirror: Path, repo: str, commit: str, path: str) -> str:
    """The text of `path` at `commit` of `repo`, from the mirror's `owner+name/repo` git directory."""
    git_dir = mirror / repo.replace("/", "+") / "repo"
    out = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True)
    if out.returncode != 0:
        sys.exit(f"error: {git_dir}: cannot read {commit[:12]}:{path} ({out.stderr.decode().strip()})")
    return out.stdout.decode("utf-8")


def row(src, path, source_id, model, bench, problem, response, answer, verdict, verdict_name) -> dict:
    return {"source_repo": src[0], "source_commit": src[1], "source_path": path, "source_id": str(source_id),
            "model": model, "bench": bench, "problem": problem, "response": response, "answer": answer,
            "label": bool(verdict), "note": f"source verdict ({verdict_name})"}


def rlsft_rows(mirror: Path) -> list[dict]:
    rows = []
    for run, tag, model in RLSFT_RUNS:
        for bench, stride in RLSFT_BENCHES.items():
            path = f"one-shot-em/results/{run}/{bench}/test_{tag}_-1_seed0_t0.0_s0_e-1.jsonl"
            for line in git_show(mirror, *RLSFT, path).splitlines()[::stride]:
                r = json.loads(line)
                rows.append(row(RLSFT, path, r["idx"], model, bench, r["question"], r["code"][0], r["gt"],
                                r["score"][0], "Qwen2.5-Math harness `score`"))
    return rows


def tegra_rows(mirror: Path) -> list[dict]:
    rows = []
    base = "eval/sweep_results/sweep_tokens_{b}/agentica-org/DeepScaleR-1.5B-Preview/aime/" \
           "{b}t_test2024_qwen-instruct_t0.6_k1_s0_e30.jsonl"
    for budget, stride in TEGRA_BUDGETS.items():
        path = base.format(b=budget)
        for line in git_show(mirror, *TEGRA, path).splitlines()[::stride]:
            r = json.loads(line)
            rows.append(row(TEGRA, path, r["id"], f"DeepScaleR-1.5B-Preview, {budget}-token budget", "aime24",
                            r["question"], r["generated_responses"][0], r["gold_answer"],
                            r["answers_correctness"][0], "`answers_correctness`"))
    return rows


def death_rows(mirror: Path) -> list[dict]:
    rows = []
    for name, (model, stride) in DEATH_MODELS.items():
        path = f"results/details/{name}"
        for e in json.loads(git_show(mirror, *DEATH, path))["examples"][::stride]:
            if e["model_response"] and NUMBER.fullmatch(e["correct_answer"].strip()):
                rows.append(row(DEATH, path, e["index"], model, "deathmath", e["task"], e["model_response"],
                                e["correct_answer"].strip().replace("–", "-"), e["score"] == 1.0,
                                "equality checker `score`"))
    return rows


def problem_key(r: dict) -> str:
    return f"{r['source_repo']}:{r['bench']}:{r['source_id']}"


def half(r: dict) -> str:
    return "tune" if int(hashlib.sha1(problem_key(r).encode()).hexdigest(), 16) % 2 == 0 else "heldout"


def load_adjudicated(out: Path) -> dict:
    path = out / "adjudicated.jsonl"
    if not path.is_file():
        return {}
    entries = [json.loads(line) for line in path.open(encoding="utf-8")]
    return {(e["source_path"], e["source_id"]): e for e in entries}


def disagreements(rows: list[dict]) -> list[tuple[dict, bool, bool, object]]:
    """Rows where the source, this grader and plain math-verify do not all agree."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grading_accuracy import plain_math_verify

    from dhpo_suite.grading import GraderPool

    mv = plain_math_verify([[r["answer"], r["response"]] for r in rows])
    with GraderPool(workers=2, timeout=10.0) as pool:
        ours = pool.grade_many([{"response": r["response"], "gold": r["answer"], "problem": r["problem"]}
                                for r in rows])
    return [(r, m, v.correct, v) for r, m, v in zip(rows, mv, ours) if not r["label"] == m == v.correct]


def cli_args(doc: str) -> argparse.Namespace:
    """The builders' command line: `--mirror DIR [--adjudicate]`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="folder of owner+name/repo git snapshots")
    parser.add_argument("--adjudicate", action="store_true",
                        help="list rows where source, grader and math-verify disagree and no entry exists")
    return parser.parse_args()


def build(rows: list[dict], out: Path, split: Callable[[dict], str], adjudicate: bool) -> None:
    """Writes `out`/tune.jsonl and heldout.jsonl (`split(row)` names the half), with the labels of
    `out`/adjudicated.jsonl; with `adjudicate`, lists instead the disagreement rows that have no entry yet
    (the held-out ones without the grader's reading)."""
    adjudicated = load_adjudicated(out)
    if adjudicate:
        todo = [d for d in disagreements(rows) if (d[0]["source_path"], d[0]["source_id"]) not in adjudicated]
        print(json.dumps([{"half": split(r), "source_path": r["source_path"], "source_id": r["source_id"],
                           "source": r["label"], "math_verify": m, "grader": g,
                           "extracted": v.extracted if split(r) == "tune" else None}
                          for r, m, g, v in todo], ensure_ascii=False, indent=0))
        return
    for r in rows:
        entry = adjudicated.get((r["source_path"], r["source_id"]))
        if entry:
            r["label"], r["note"] = entry["label"], entry["note"]
    out.mkdir(parents=True, exist_ok=True)
    for name in ("tune", "heldout"):
        part = [r for r in rows if split(r) == name]
        with (out / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in part)
        print(f"{name}: {len(part)} rows, {sum(not r['label'] for r in part)} wrong")


def main() -> None:
    args = cli_args(__doc__)
    rows = rlsft_rows(args.mirror) + tegra_rows(args.mirror) + death_rows(args.mirror)
    build(rows, OUT, half, args.adjudicate)


if __name__ == "__main__":
    main()
