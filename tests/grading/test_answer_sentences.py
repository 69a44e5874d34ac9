"""Answer lines in other languages that the grader missed on grading_dev3's held-out half and MGSM's exemplars
(benchmarks/RESULTS.md, "A third held-out set"), each typed here both ways (the right value accepted, another
refused) with the negatives that bound it. These misses were seen on held-out rows: the fixes are post hoc for
grading_dev3, and its held-out counts after them are no unbiased estimate.

1. a decimal comma after an answer word of a decimal-comma language (`Réponse: 75,00 $.` is 75), one or two
   digits after the comma only; English `1,234`, a tuple `(1,5)`, a list `1,5,7` and a German `1,500` (three
   digits: 1.5 in German, 1500 in the English habit models carry over) read as before;
2. "the answer is" with an adverb between (`Die Antwort ist also 18 Euro.`, `La réponse est donc 18 €.`,
   `Таким образом, ответ: 18`), a short list in `answer_line.ANSWER_WORDS`;
3. a bare answer word with only a number after it, at a line's or a sentence's start (Telugu
   `... 5+6=11. సమాధానం 11.`), never mid-sentence and never a numbered heading (`Respuesta 1. La ...`)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.grading.answer_line import decimal_commas, language

# (gold, response, expected verdict, expected answer_rule, why)
CASES = [
    # 1. decimal comma
    ("75", "15 x 5,00 $ = 75,00 $\n\nRéponse: 75,00 $.", True, "answer line", "French, a dollar sign after"),
    ("7500", "15 x 5,00 $ = 75,00 $\n\nRéponse: 75,00 $.", False, "answer line", "75,00 is no 7500"),
    ("75", "15 x $5,00 = $75,00\n\nОтвет: $75,00.", True, "answer line", "Russian, a dollar sign before"),
    ("1.5", "Ответ: 1,5", True, "answer line", "Ответ: 1,5 is one and a half"),
    ("15", "Ответ: 1,5", False, "answer line", "not fifteen"),
    ("12.5", "Antwort: 12,50 €", True, "answer line", "German cents and a euro sign"),
    ("1250", "Antwort: 12,50 €", False, "answer line", "the comma is no thousands separator here"),
    ("12.5", "Antwort:\n\n12,50 €", True, "answer line", "the value on the line after the word"),
    ("18", "Antwort: 18 €", True, "answer line", "a euro sign after a whole number"),
    ("1234", "Answer: 1,234", True, "answer line", "English: a comma groups thousands"),
    ("1.234", "Answer: 1,234", False, "answer line", "English 1,234 is no decimal"),
    ("1.5", "Answer: 1,5", False, "answer line", "no decimal comma without a word of its language"),
    ("(1,5)", "Ответ: (1,5)", True, "answer line", "a tuple keeps its comma"),
    ("1.5", "Ответ: (1,5)", False, "answer line", "a tuple is no decimal"),
    ("1.5", "Antwort: 1,5,7", False, "answer line", "a comma list is no decimal"),
    ("1500", "Antwort: 1,500 €", True, "answer line", "three digits: thousands, as before"),
    ("1.5", "Antwort: 1,500 €", False, "answer line", "a German 1,500 is not taken for 1.5"),
    # 2. "the answer is" with an adverb
    ("18", "9 x 2 = 18.\n\nDie Antwort ist also 18 Euro.", True, "answer line", "German also"),
    ("81", "9 x 2 = 18.\n\nDie Antwort ist also 18 Euro.", False, "answer line", "German also, another value"),
    ("18", "9 x 2 = 18 €.\n\nLa réponse est donc 18 €.", True, "answer line", "French donc and a euro sign"),
    ("19", "9 x 2 = 18 €.\n\nLa réponse est donc 18 €.", False, "answer line", "French donc, another value"),
    ("18", "9 x 2 = 18.\n\nТаким образом, ответ: 18", True, "answer line", "Russian таким образом"),
    ("17", "9 x 2 = 18.\n\nТаким образом, ответ: 18", False, "answer line", "Russian, another value"),
    ("18", "9 x 2 = 18.\nLa respuesta es entonces 18.", True, "answer line", "Spanish entonces"),
    ("18", "9 x 2 = 18.\nLa risposta è quindi 18.", True, "answer line", "Italian quindi"),
    ("18", "9 x 2 = 18.\nA resposta é portanto 18.", True, "answer line", "Portuguese portanto"),
    ("3", "Die Antwort ist also 18 Euro für 3 Tage.", False, "answer line", "a number that is not the answer"),
    # 3. a bare answer word and its number
    ("11", "5+6=11. సమాధానం 11.", True, "answer line", "Telugu, at a sentence's start"),
    ("12", "5+6=11. సమాధానం 11.", False, "answer line", "Telugu, another value"),
    ("11", "5+6=11.\nసమాధానం 11", True, "answer line", "Telugu, at a line's start"),
    ("3", "Respuesta 1. La primera parte da 3.\nRespuesta 2. La segunda da 4.", False, None, "numbered headings"),
    ("2", "Hay 2 cajas y la respuesta 2 no sirve, son 5", False, None, "mid-sentence"),
]


def test_cases_both_ways(pool):
    """Every case at once; a failure lists each case whose verdict or rule differs, with why it matters."""
    got = pool.grade_many([(response, gold) for gold, response, *_ in CASES])
    differ = [(why, v.correct, v.answer_rule, v.extracted) for (_, _, expected, rule, why), v in zip(CASES, got)
              if (v.correct, v.answer_rule) != (expected, rule)]
    assert differ == []


def test_the_decimal_comma_rule_and_its_language():
    assert decimal_commas("75,00 $ und 1,5 kg") == "75.00 $ und 1.5 kg"
    assert decimal_commas("(1,5) 1,5,7 1,5, 2,5 1,234 0,204") == "(1,5) 1,5,7 1,5, 2,5 1,234 0,204"
    assert [language(p) for p in ("Réponse :", "**Antwort:**", "Таким образом, ответ:", "答案：", "Answer:")] == \
        ["fr", "de", "ru/uk", "zh", None]


def test_grade_cli_reads_decimal_commas_and_sentences(tmp_path):
    """The path a user runs: `dhpo-suite grade` on rows of these three kinds, one of them wrong."""
    rows = [{"response": "15 x 5,00 $ = 75,00 $\n\nRéponse: 75,00 $.", "answer": "75"},
            {"response": "9 x 2 = 18.\n\nDie Antwort ist also 18 Euro.", "answer": "18"},
            {"response": "5+6=11. సమాధానం 11.", "answer": "11"},
            {"response": "Ответ: 1,5", "answer": "15"}]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(app, ["grade", str(src), "--workers", "1"])
    assert result.exit_code == 0, result.stderr
    graded = [json.loads(line) for line in (tmp_path / "rows.graded.jsonl").open(encoding="utf-8")]
    assert [g["correct"] for g in graded] == [True, True, True, False]
    assert [g["extracted"] for g in graded] == ["75.00 $", "18 Euro", "11", "1.5"]
