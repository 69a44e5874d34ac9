"""Answer lines in other languages (issue 40's general form of `Ответ: 18`): models answer in the prompt's
language (MGSM-style sets), and before this the grader read no answer at all from `Respuesta: 18`.

Each language both ways: the right value accepted, a wrong value on the line refused (the line is read, not
a number before it). Responses and expected values are typed by hand; the words are the ordinary word for
"answer" in each language (as MGSM's own prompts and exemplars write it: `Respuesta`, `Réponse`, `Antwort`,
`答案`, `答え`, `Ответ`, `Jibu`, `คำตอบ`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.grading.answer_line import ANSWER_WORDS
from dhpo_suite.grading.extract import extract_rule

# (language, response ending in the right value 18, the same response ending in a wrong value)
LANGUAGES = [
    ("es", "Solución: 10 + 8 = 18.\nRespuesta: 18", "Solución: 10 + 8 = 18.\nRespuesta: 19"),
    ("fr", "Au total, 10 + 8 = 18.\nRéponse : 18.", "Au total, 10 + 8 = 18.\nRéponse : 16."),
    ("de", "Lösung: 10 + 8 = 18.\nAntwort: 18", "Lösung: 10 + 8 = 18.\nAntwort: 81"),
    ("it", "Quindi 10 + 8 = 18.\nRisposta: 18", "Quindi 10 + 8 = 18.\nRisposta: 17"),
    ("pt", "Então 10 + 8 = 18.\nResposta: 18", "Então 10 + 8 = 18.\nResposta: 28"),
    ("pl", "Zatem 10 + 8 = 18.\nOdpowiedź: 18", "Zatem 10 + 8 = 18.\nOdpowiedź: 8"),
    ("tr", "Yani 10 + 8 = 18.\nCevap: 18", "Yani 10 + 8 = 18.\nCevap: 10"),
    ("id", "Jadi 10 + 8 = 18.\nJawaban: 18", "Jadi 10 + 8 = 18.\nJawaban: 20"),
    ("ms", "Jadi 10 + 8 = 18.\nJawapan: 18", "Jadi 10 + 8 = 18.\nJawapan: 180"),
    ("nl", "Dus 10 + 8 = 18.\nAntwoord: 18", "Dus 10 + 8 = 18.\nAntwoord: 1.8"),
    ("sv", "Alltså 10 + 8 = 18.\nSvar: 18", "Alltså 10 + 8 = 18.\nSvar: 2"),
    ("cs", "Tedy 10 + 8 = 18.\nOdpověď: 18", "Tedy 10 + 8 = 18.\nOdpověď: -18"),
    ("ru", "Решение: 10 + 8 = 18.\nОтвет: 18", "Решение: 10 + 8 = 18.\nОтвет: 80"),
    ("uk", "Отже, 10 + 8 = 18.\nВідповідь: 18", "Отже, 10 + 8 = 18.\nВідповідь: 12"),
    ("el", "Άρα 10 + 8 = 18.\nΑπάντηση: 18", "Άρα 10 + 8 = 18.\nΑπάντηση: 11"),
    ("ar", "إذن 10 + 8 = 18.\nالإجابة: 18", "إذن 10 + 8 = 18.\nالإجابة: 13"),
    ("hi", "इसलिए 10 + 8 = 18.\nउत्तर: 18", "इसलिए 10 + 8 = 18.\nउत्तर: 14"),
    ("zh", "解：10+8=18。\n答案：18", "解：10+8=18。\n答案：15"),
    ("zh final", "所以 10+8=18。\n\n最终答案：$18$", "所以 10+8=18。\n\n最终答案：$\\frac{1}{18}$"),
    ("ja", "10+8=18なので、\n答え：18", "10+8=18なので、\n答え：24"),
    ("ko", "10+8=18이므로\n정답: 18", "10+8=18이므로\n정답: 36"),
    ("vi", "Vậy 10 + 8 = 18.\nĐáp án: 18", "Vậy 10 + 8 = 18.\nĐáp án: 9"),
    ("vi đáp số", "Vậy 10 + 8 = 18.\nĐáp số: 18", "Vậy 10 + 8 = 18.\nĐáp số: 19"),
    ("sw", "Kwa hiyo 10 + 8 = 18.\nJibu: 18", "Kwa hiyo 10 + 8 = 18.\nJibu: 81"),
    ("th", "ดังนั้น 10 + 8 = 18\nคำตอบ: 18", "ดังนั้น 10 + 8 = 18\nคำตอบ: 17"),
    # "the answer is" forms, anywhere on a line
    ("zh is", "10+8=18，所以最终答案是 18", "10+8=18，所以最终答案是 20"),
    ("zh is, glued", "因此答案是18。", "因此答案是16。"),
    ("ja is", "10+8=18。答えは18です。", "10+8=18。答えは19です。"),
    ("ko is", "따라서 정답은 18입니다.", "따라서 정답은 17입니다."),
    ("es is", "Por lo tanto, la respuesta es 18.", "Por lo tanto, la respuesta es 16."),
    ("fr is", "Donc la réponse est 18.", "Donc la réponse est 15."),
    ("de is", "Die Antwort ist 18.", "Die Antwort ist 19."),
    ("de lautet", "Die endgültige Antwort lautet $18$.", "Die endgültige Antwort lautet $17$."),
    ("it is", "Quindi la risposta è 18.", "Quindi la risposta è 17."),
    ("pt is", "Logo, a resposta é 18.", "Logo, a resposta é 16."),
    # the final sentences of MGSM's own exemplars (google-research/url-nlp mgsm/exemplars.py)
    ("ru dash", "10 + 8 = 18. Ответ — 18.", "10 + 8 = 18. Ответ — 8."),
    ("sw is", "10 + 8 = 18. Jibu ni 18.", "10 + 8 = 18. Jibu ni 10."),
    ("th is", "ดังนั้น 10 + 8 = 18 คำตอบคือ 18", "ดังนั้น 10 + 8 = 18 คำตอบคือ 10"),
    ("bn is, danda", "10 + 8 = 18। উত্তর হল 18।", "10 + 8 = 18। উত্তর হল 28।"),
    ("ja counter", "10+8=18。答えは18個です。", "10+8=18。答えは8個です。"),
    ("ko counter", "10+8=18이므로 정답은 18개입니다.", "10+8=18이므로 정답은 10개입니다."),
    # markdown and colons
    ("es bold", "10 + 8 = 18\n\n**Respuesta final:** 18", "10 + 8 = 18\n\n**Respuesta final:** 19"),
    ("de full-width colon", "10 + 8 = 18\nAntwort：18", "10 + 8 = 18\nAntwort：19"),
    ("zh heading", "10+8=18\n\n## 最终答案\n\n18", "10+8=18\n\n## 最终答案\n\n19"),
    ("es after a box", "Así $\\boxed{17}$.\n\nRespuesta: 18", "Así $\\boxed{18}$.\n\nRespuesta: 17"),
]

# (gold, response, expected verdict, expected answer_rule, why): a label that is not "answer" is no answer line
NEGATIVE = [
    ("18", "Step 1: 10 + 8.\nStep 3: 18", False, None, "a step label is no answer line, even with a value"),
    ("18", "So $\\boxed{18}$.\nCheck: 2+2=4", True, "box", "a check line after the box does not replace it"),
    ("18", "So $\\boxed{18}$.\nStep 3: 17", True, "box", "a step line after the box does not replace it"),
    ("18", "So $\\boxed{18}$.\nSolución: 17", True, "box", "'solution' is not 'answer'"),
    ("18", "So $\\boxed{18}$.\nLösung: 17", True, "box", "'Lösung' (solution) is not 'Antwort'"),
    ("18", "So $\\boxed{18}$.\n解：17", True, "box", "解 (solution) is not 答 (answer)"),
    ("18", "So $\\boxed{18}$.\nRespuestas: 17", True, "box", "exact words only: no plural"),
    ("18", "So $\\boxed{18}$.\nEsta respuesta es 17 veces mejor", True, "box", "'la respuesta es', not 'esta ...'"),
    ("18", "答案：18万", False, "answer line", "万 (ten thousand) is part of the value: 180,000"),
    ("18", "答案是2的18次方", False, "answer line", "2 to the 18th power is not 18"),
    ("18", "Respuesta: 18\n\nVerificación: 2 + 16 = 18, comprobado: 5", True, "answer line",
     "a later label that is not 'answer' keeps the answer line"),
    # an English answer line after a box behaves as before (a later line that states a value wins)
    ("18", "Thus $\\boxed{17}$.\n\nAnswer: 18", True, "answer line", "English answer line after a box"),
    ("17", "Thus $\\boxed{17}$.\n\nAnswer: 18", False, "answer line", "English answer line after a box, wrong"),
    ("18", "Thus $\\boxed{18}$.\n\nFinal Answer: The final answer is $18$. I hope it is correct.", True,
     "answer line", "English Final Answer line"),
]

ITEMS = [(right, "18") for _, right, _ in LANGUAGES] + [(wrong, "18") for _, _, wrong in LANGUAGES]
ITEMS += [(response, gold) for gold, response, *_ in NEGATIVE]


@pytest.fixture(scope="module")
def verdicts(pool):
    return pool.grade_many(ITEMS)


@pytest.mark.parametrize("index", range(len(LANGUAGES)), ids=[lang for lang, *_ in LANGUAGES])
def test_language_both_ways(verdicts, index):
    right, wrong = verdicts[index], verdicts[len(LANGUAGES) + index]
    assert right.correct is True and right.answer_rule == "answer line", (LANGUAGES[index], right)
    assert wrong.status == "ok" and wrong.correct is False, (LANGUAGES[index], wrong)
    assert wrong.answer_rule == "answer line", (LANGUAGES[index], wrong)


@pytest.mark.parametrize("index", range(len(NEGATIVE)), ids=[case[4] for case in NEGATIVE])
def test_not_an_answer_line(verdicts, index):
    gold, response, expected, rule, why = NEGATIVE[index]
    verdict = verdicts[2 * len(LANGUAGES) + index]
    assert verdict.correct is expected, (why, verdict)
    assert verdict.answer_rule == rule, (why, verdict)


@pytest.mark.parametrize("row", ANSWER_WORDS, ids=[row[0] for row in ANSWER_WORDS])
def test_every_word_of_the_table(row):
    """Each word of the table labels a line (`WORD: 18`, `WORD：18`, `**WORD:** 18`), each "final answer"
    word also a heading, each "is" form a sentence: all read 18."""
    _, answer, final, is_forms = row
    texts = [f"10 + 8 = 18 and 2 + 5 = 7.\n{w}{colon}18" for w in answer + final for colon in (": ", "：", " : ")]
    texts += [f"2 + 5 = 7.\n**{w.capitalize()}:** 18" for w in answer + final]
    texts += [f"2 + 5 = 7.\n\n## {w}\n\n18" for w in final]
    texts += [f"2 + 5 = 7. {w} 18" for w in is_forms]
    for text in texts:
        assert extract_rule(text) == ("18", "answer line"), text


def test_grade_cli_reads_answer_lines_in_other_languages(tmp_path):
    """The path a user runs: `dhpo-suite grade` on MGSM-style rows (es, zh, ja, fr; a decimal comma, an "is"
    form with an adverb, Telugu's bare word) of which two are wrong."""
    rows = [{"response": "Roger tiene 5 + 6 = 11 pelotas.\nRespuesta: 11", "answer": "11"},
            {"response": "解：5+6=11。\n答案：11", "answer": "11"},
            {"response": "5+6=11なので、答えは11です。", "answer": "11"},
            {"response": "Il a 5 + 6 = 11 balles.\nRéponse : 12", "answer": "11"},
            {"response": "15 x 5,00 $ = 75,00 $\n\nRéponse: 75,00 $.", "answer": "75"},  # a decimal comma
            {"response": "9 x 2 = 18.\n\nDie Antwort ist also 18 Euro.", "answer": "18"},
            {"response": "5+6=11. సమాధానం 11.", "answer": "11"},
            {"response": "Ответ: 1,5", "answer": "15"}]
    src = tmp_path / "mgsm.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(app, ["grade", str(src), "--workers", "1"])
    assert result.exit_code == 0, result.stderr
    graded = [json.loads(line) for line in (tmp_path / "mgsm.graded.jsonl").open(encoding="utf-8")]
    assert [g["correct"] for g in graded] == [True, True, True, False, True, True, True, False]
    assert [g["extracted"] for g in graded] == ["11", "11", "11", "12", "75.00 $", "18 Euro", "11", "1.5"]
    assert {g["answer_rule"] for g in graded} == {"answer line"}


def test_mgsm_exemplars(pool):
    """MGSM's own worked exemplars in eleven languages (benchmarks/data/grading_mgsm, labels from the source's
    answer list): each read right with its own answer and refused with another's. Telugu's bare final sentence
    ("సమాధానం 11.", no "is" and no colon) is read where the number ends it; two exemplars glue words to it
    ("సమాధానం 9.బొమ్మలున్నాయి.") and are not read: those rows only have to be refused."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "grading_mgsm" / "tune.jsonl"
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    verdicts = pool.grade_many([{"response": r["response"], "gold": r["answer"], "problem": r["problem"]}
                                for r in rows])
    assert len(rows) == 176 and sum(r["label"] for r in rows) == 88
    wrong = [r["source_id"] for r, v in zip(rows, verdicts) if v.correct is not r["label"]]
    assert sorted(wrong) == ["te/3", "te/4"], wrong
    assert not any(v.correct for r, v in zip(rows, verdicts) if not r["label"])
