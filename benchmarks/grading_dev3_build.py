"""Builds benchmarks/data/grading_dev3 (a third held-out set for the grader) from two public evaluation dumps.

Sources (none used for grading_dev or grading_dev2; see the data folder's README): LightChen233/cross-lingual-
prompting (gpt-3.5-turbo on MGSM, reasoning written in the problem's own language: German, Spanish, French,
Japanese, Russian, Chinese; asked to end with "Answer: [num]", which it often writes as `Antwort:`, `回答：`,
`Ответ:`) and microsoft/ToRA (ToRA-70B and ToRA-Code-34B on GSM8K: Python blocks, their printed output and a
boxed sentence). Each repository is read with git from a snapshot (`--mirror DIR`, holding `owner+name/repo`
git directories) at the commit named below; `message` and `origin` of the first are JSON or Python literals, read with
`ast.literal_eval` (never run).

Labels: the source's own verdict (cross-lingual-prompting: its `clsp_metric` rule on one response, the last
number after the last "Answer:" equal to the gold at two decimals; ToRA: its extracted `pred` equal to `gt`),
except the rows in `adjudicated.jsonl` (read by hand where the source, this grader at the build commit and plain
math-verify disagreed; `--adjudicate` lists such rows that have no entry yet). Split: tune / heldout by the
parity of sha1(repo : the file's id), so that one MGSM problem stays on one side in all six languages.

    .venv/bin/python benchmarks/grading_dev3_build.py --mirror MIRROR [--adjudicate]

MIRROR: a folder of `owner+name/repo` bare git directories (the workplace's `fetch` tool writes them so).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from grading_dev2_build import build, cli_args, git_show, half, row

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "data" / "grading_dev3"

CLSP = ("LightChen233/cross-lingual-prompting", "affd839ba89745cf181a405395a1b410c41871d5")
TORA = ("microsoft/ToRA", "213c1c995038c73fab10343814df7a42f990f026")

CLSP_LANGUAGES = ("de", "es", "fr", "ja", "ru", "zh")  # problem and reasoning in this language
CLSP_STRIDE = 6  # every 6th of the 250 MGSM problems: 42 a language
TORA_MODELS = {"tora-70b-v1.0": ("ToRA-70B (Llama-2, tool-integrated)", 20),  # folder: (model, stride)
               "tora-code-34b-v1.0": ("ToRA-Code-34B (CodeLlama, tool-integrated)", 20)}


def clsp_verdict(response: str, gold: str) -> bool:
    """cross-lingual-prompting's `utils/clsp_metric.py` on one response: the last number after the last
    "Answer:", commas dropped, equal to the gold when both are truncated to hundredths."""
    numbers = re.findall(r"-?\d+\.?\d*", response.split("Answer:")[-1].replace(",", ""))
    return bool(numbers) and int(float(numbers[-1]) * 100) == int(float(gold.replace(",", "")) * 100)


def literal(value):
    """Some files hold `message`/`origin` as JSON, some as the Python literal of it (a string)."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def clsp_rows(mirror: Path) -> list[dict]:
    rows = []
    for lang in CLSP_LANGUAGES:
        path = f"mgsm/output/clsp/{lang}/{lang}.jsonl"
        for index, line in list(enumerate(git_show(mirror, *CLSP, path).splitlines()))[::CLSP_STRIDE]:
            r = json.loads(line)
            messages, origin = literal(r["message"]), literal(r["origin"])
            response = messages[-1]["content"]
            # the file's `id` numbers blocks of ten problems (id = line // 10); the line is the MGSM index
            rows.append(row(CLSP, path, index, "gpt-3.5-turbo (cross-lingual self-consistent prompting)",
                            f"mgsm_{lang}", origin["text"], response, origin["answer"],
                            clsp_verdict(response, origin["answer"]), "`clsp_metric` rule on this response"))
    return rows


def tora_verdict(pred: str, gold: str) -> bool:
    """ToRA's `math_equal` for numbers: equal within a relative 1e-4."""
    try:
        p, g = float(pred.replace(",", "")), float(gold.replace(",", ""))
    except ValueError:
        return pred.strip() == gold.strip()
    return abs(p - g) <= 1e-4 * max(abs(g), 1e-12)


def tora_rows(mirror: Path) -> list[dict]:
    rows = []
    for folder, (model, stride) in TORA_MODELS.items():
        path = f"src/outputs/llm-agents/{folder}/gsm8k/test_tora_-1_seed0_t0.0_s0_e1319.jsonl"
        for line in git_show(mirror, *TORA, path).splitlines()[::stride]:
            r = json.loads(line)
            rows.append(row(TORA, path, r["idx"], model, "gsm8k", r["question"], r["code"][0], str(r["gt"]),
                            tora_verdict(str(r["pred"][0]), str(r["gt"])), "ToRA `pred` equals `gt`"))
    return rows


def split(r: dict) -> str:
    """dev2's parity rule (`grading_dev2_build.half`) on sha1(repo : group): the group is the file's own `id`,
    for cross-lingual-prompting a block of ten MGSM problems (line // 10), the same in all six languages, so
    one problem keeps one side in every language; for ToRA the GSM8K problem, the same for both models."""
    group = int(r["source_id"]) // 10 if r["source_repo"] == CLSP[0] else r["source_id"]
    return half({"source_repo": r["source_repo"], "bench": "", "source_id": str(group)})


def main() -> None:
    args = cli_args(__doc__)
    build(clsp_rows(args.mirror) + tora_rows(args.mirror), OUT, split, args.adjudicate)


if __name__ == "__main__":
    main()
