"""Builds benchmarks/data/grading_mgsm (issue 40, answer lines in other languages) from MGSM's exemplars.

MGSM (Shi et al. 2022, "Language models are multilingual chain-of-thought reasoners") ships eight worked answers
in each of its eleven languages (`mgsm/exemplars.py` of google-research/url-nlp, CC-BY-4.0), written by its
translators; its native chain-of-thought prompt shows them to the model, which answers in the same form ("...
5 + 6 = 11. La respuesta es 11."). Each becomes two rows: the exemplar with its own final answer (label true)
and the same text with the final answer of the next exemplar whose answer differs (label false: a grader that
accepts it read some other number than the final sentence's). The file is read as literals (`ast`), never run.

    .venv/bin/python benchmarks/grading_mgsm_build.py --mirror MIRROR    # as grading_dev2_build.py's
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "data" / "grading_mgsm"
SOURCE = ("google-research/url-nlp", "4b1e7a43efb517abadd16041e8b47f3be975c76e", "mgsm/exemplars.py")


def read_exemplars(mirror: Path) -> tuple[list[int], dict[str, dict[str, dict[str, str]]]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grading_dev2_build import git_show

    names = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(git_show(mirror, *SOURCE)).body
             if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    return names["EXEMPLAR_NUMBER_ANSWERS"], names["MGSM_EXEMPLARS"]


def rows(answers: list[int], exemplars: dict[str, dict[str, dict[str, str]]]) -> list[dict]:
    out = []
    for lang, items in exemplars.items():
        for key, item in items.items():
            index = int(key) - 1
            other = next(answers[(index + k) % len(answers)] for k in range(1, len(answers))
                         if answers[(index + k) % len(answers)] != answers[index])
            for gold, label, note in ((answers[index], True, "the exemplar's own final answer"),
                                      (other, False, "another exemplar's final answer (the text states another)")):
                out.append({"source_repo": SOURCE[0], "source_commit": SOURCE[1], "source_path": SOURCE[2],
                            "source_id": f"{lang}/{key}" + ("" if label else "/other"),
                            "model": "human (MGSM translators' exemplar)", "bench": f"mgsm_{lang}",
                            "problem": item["q"], "response": item["a"], "answer": str(gold), "label": label,
                            "note": note})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="folder of owner+name/repo git directories")
    built = rows(*read_exemplars(parser.parse_args().mirror))
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "tune.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in built)
    print(f"{len(built)} rows -> {OUT / 'tune.jsonl'}")


if __name__ == "__main__":
    main()
