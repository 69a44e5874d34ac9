"""Grader cases from REAL model outputs, one table per rule of issue 27: (gold, response, expected, reason).

Each rule of the extraction (the committed-answer fallback, `<answer>` tags, money `$`, invented chat
turns and problem headers, empty boxes, `$$` pairing, percentages) is backed here by real responses in
both directions. Sources:

* `data/cs336_qwen25math_gsm8k.jsonl`: 19 generations of Qwen2.5-Math-1.5B (r1_zero prompt, GSM8K test,
  T=1, 1024 tokens) with their gold answers, published in damek/assignment5-alignment at commit 4d7f95b,
  `cs336_alignment/outputs/math_baseline.md` (parsed unchanged: question, generation, "GT Answer", and
  the author's annotation). Expected verdicts are read from the response by a person (the author's
  annotation where it is unambiguous); row 4 is left out: its stated total equals the gold, but inside
  an invented dialogue, and its author marked it wrong.
* issue 27's short reproductions of real outputs from other projects' evaluation dumps (each named in
  the reason), with their counterparts in the other direction.
"""

from __future__ import annotations

import json
from pathlib import Path

_DATA = Path(__file__).with_name("data")
_CS336 = "cs336 Qwen2.5-Math-1.5B GSM8K #{}"


def _cs336() -> list[tuple[str, str, bool, str]]:
    rows = [json.loads(line) for line in (_DATA / "cs336_qwen25math_gsm8k.jsonl").open(encoding="utf-8")]
    expected = {  # index: (expected, why), read from the response
        0: (True, "boxed 3 after a code block and its output"),
        1: (False, "boxed 225000, gold 70000"),
        2: (True, "'$ 3 \\cdot 60 \\cdot 3 = 540 $ meters per week', then invented User:/Assistant: turns"),
        3: (False, "<answer> 40 cups </answer>, gold 20"),
        5: (False, "<answer> lists 160, 80 and 20 sheep, gold 260"),
        6: (False, "355 miles, gold 45"),
        7: (False, "<answer> 205! then rambling, gold 366"),
        8: (False, "$400, gold 694"),
        9: (False, "4.7 years, gold 13"),
        10: (False, "total time 110 minutes, gold 160"),
        11: (True, "money $ signs: '... x $10/hour = $460.' states 460"),
        12: (False, "'$5,000 + $125 = $5,125': money $ paired as math gave 125 (a false accept), gold 125"),
        13: (False, "<answer> 15 miles </answer>, gold 25"),
        14: (False, "average guess 43.75, gold 80"),
        15: (False, "He scored $5$ points, gold 9; the last sentence states nothing"),
        16: (False, "4 pieces, gold 26"),
        17: (False, "<answer> 3 </answer>, gold 15"),
        18: (True, "'Jean can fill 14 bags with 2 lollipops in each bag': the value after the connective"),
    }
    return [(rows[i]["answer"], rows[i]["response"], exp, f"{_CS336.format(i)}: {why}")
            for i, (exp, why) in expected.items()]


ISSUE_27 = "issue 27 (real output, reproduced short)"

COMMITTED = [  # the no-marker fallback answers only from a committed last sentence
    ("60", "Problem: In triangle $ABC$, angle $A$ is 60° and $AB = 5$. Find $BC$.\nLet me think. We have angle "
     "$A = 60°$ and", False, ISSUE_27 + ": a cut-off response's restatement of the problem"),
    ("1", "Let me run it.\n```python\nprint(f(1,))\n```\nTypeError: f() missing 1 required positional argument: "
     "(1,)", False, ISSUE_27 + ": the 1 of (1,) in a Python error message"),
    ("4", "Since $n$ is even, we only need to check the small cases. We did this after checking all 4 cases",
     False, "docs/grading.md known limit before issue 27: an unrelated last number, no statement"),
    ("14", "So, 28 ÷ 2 = 14 bags. Therefore, Jean can fill 14 bags with 2 lollipops in each bag.", True,
     _CS336.format(18) + ", without its tags"),
    ("2", "So, 28 ÷ 2 = 14 bags. Therefore, Jean can fill 14 bags with 2 lollipops in each bag.", False,
     _CS336.format(18) + ": the 2 after the stated value is no answer"),
    ("42", "so the total is 42.", True, "Math-Verify test_all.py style sentence"),
]

EXTRACTION = [  # empty boxes, `$$` pairing, invented problems, answer lines in prose
    ("12", r"The answer is $\boxed{12}$. \boxed{}", True, ISSUE_27 + ": an empty box after a complete one"),
    ("12", r"The answer is $\boxed{13}$. \boxed{}", False, ISSUE_27 + ", other value"),
    ("12", "Thus $\\boxed{12}$.\n\nSubproblem 2: What is $3+4$?\nSolution: $\\boxed{7}$", True,
     ISSUE_27 + ": an invented Subproblem after the answer (Minerva's own problems are written so)"),
    ("7", "Thus $\\boxed{12}$.\n\nSubproblem 2: What is $3+4$?\nSolution: $\\boxed{7}$", False,
     ISSUE_27 + ": the invented problem's answer is no answer"),
    ("12", "Thus $\\boxed{12}$.\n\n**Problem 2:** What is $3+4$?\n\n$\\boxed{7}$", True,
     ISSUE_27 + ": an invented **Problem 2:**"),
    ("1000", r"Final answer: The steady-state angular velocity \(\omega_{ss}\) is 1000 radians per second.",
     True, ISSUE_27 + ": 'X is N unit' answer line states N"),
    ("1000", r"Final answer: The steady-state angular velocity \(\omega_{\text{ss}}\) is 100 radians per second.",
     False, ISSUE_27 + ", other value"),
    ("5", "She has 5 apples left.\n\nQuestion: Tom has 3 apples and buys 4 more. How many does he have?\n"
     "Answer: 7", True, ISSUE_27 + ": a base model answers in prose, then invents a Question: with its Answer:"),
    ("7", "She has 5 apples left.\n\nQuestion: Tom has 3 apples and buys 4 more. How many does he have?\n"
     "Answer: 7", False, ISSUE_27 + ": the invented question's answer is no answer"),
    ("7", "Natalia sold 48+24 = 72 clips altogether in April and May.\n#### 72\n\nQ: Tom has 3 apples and buys "
     "4 more.\nA: 3 + 4 = 7\n#### 7", False, "GSM8K few-shot Q:/A: continuation (why GSM8K evaluators stop at 'Q:')"),
    ("72", "Natalia sold 48+24 = 72 clips altogether in April and May.\n#### 72\n\nQ: Tom has 3 apples and buys "
     "4 more.\nA: 3 + 4 = 7\n#### 7", True, "GSM8K few-shot Q:/A: continuation, the real answer"),
    ("5", "We compute $$x = 2 + 3$$ and the value is $5$.", True, ISSUE_27 + ": a $$ block before inline math"),
    ("2", "We compute $$x = 2 + 3$$ and the value is $5$.", False, ISSUE_27 + ": no fragment of the block"),
]

PERCENT = [  # a percentage keeps its meaning unless the gold is a plain number
    (r"\frac{40}{9}", r"The answer is $4 4/9\%$.", False, ISSUE_27 + ": a percentage read as a plain number"),
    (r"\frac{40}{9}", r"The answer is $\boxed{4\frac{4}{9}}$.", True, "the same value without the percent"),
    (r"\frac{2}{45}", r"The answer is $\boxed{4 4/9\%}$.", True, "the percentage equals the gold as a fraction"),
    ("10", r"The answer is $\boxed{10\%}$.", True,
     "NeMo-Skills test_math_equal.py: a plain gold of a 'what percent' question"),
    (r"\frac{\sqrt{3}}{2}", r"The answer is $\boxed{\frac{\sqrt{3}}{2}\%}$.", False, "a percentage of a symbolic gold"),
]

MINERVA = "minerva_math gold {} (../shared/benchmarks)"

EQUATIONS_UNITS = [  # golds math-verify misreads, compared side by side; units that differ refuse a value
    (r"m \frac{d v}{d t}+b v=f", r"So the equation of motion is $\boxed{bv + m\frac{dv}{dt} = f}$.", True,
     MINERVA.format(119) + ": terms reordered"),
    (r"m \frac{d v}{d t}+b v=f", r"So the equation of motion is $\boxed{m\frac{dv}{dt} - bv = f}$.", False,
     MINERVA.format(119) + ": a sign differs"),
    (r"\frac{d x}{d t}=k x-a", r"Therefore $\boxed{\frac{dx}{dt} = -a + kx}$.", True,
     MINERVA.format(64) + ": the right side reordered (equivalent under math-verify, same letters)"),
    (r"\frac{d x}{d t}=k x-a", r"Therefore $\boxed{\frac{dx}{dt} = kx + a}$.", False, MINERVA.format(64)),
    (r"I \frac{d \omega}{d t}+2 B \omega=T", r"$\boxed{I \frac{d\omega}{dt} + 2B\omega = T}$", True,
     MINERVA.format(125)),
    (r"I \frac{d \omega}{d t}+2 B \omega=T", r"$\boxed{I \frac{d\omega}{dt} + 2b\omega = T}$", False,
     MINERVA.format(125) + ": b is not B (math-verify lower-cases both)"),
    (r"\frac{d^{2} v_{o}}{d t^{2}}+\frac{v_{o}}{L C}=\frac{v_{i}}{L C}",
     r"$\boxed{\frac{d^2 v_o}{dt^2} + \frac{v_o}{LC} = \frac{v_i}{LC}}$", True, MINERVA.format(131)),
    (r"\frac{d^{2} v_{o}}{d t^{2}}+\frac{v_{o}}{L C}=\frac{v_{i}}{L C}",
     r"$\boxed{\frac{d^2 v_o}{dt^2} + \frac{v_o}{LC} = \frac{v_o}{LC}}$", False, MINERVA.format(131)),
    (r"864 \mbox{ inches}^2", "The area is 864 square inches.", True, "MATH gold 864 \\mbox{ inches}^2, unit in words"),
    (r"864 \mbox{ inches}^2", r"The area is $\boxed{864 \text{ cm}^2}$.", False, "MATH gold, another unit"),
    (r"15\mbox{ cm}^2", r"so the area is $\boxed{15 \mathrm{~cm}^{2}}$", True,
     "MATH gold 15\\mbox{ cm}^2, Minerva-style unit"),
    (r"15\mbox{ cm}^2", r"so the area is $\boxed{15 \mathrm{~m}^{2}}$", False, "MATH gold, square metres"),
    ("0.5", r"The wavelength is $\boxed{0.5 \, \mu\text{m}}$.", True, "a unit prefix \\mu before \\text{m}"),
    ("1.6", r"The image is $\boxed{1.6 \mathrm{~cm}}$ across.", True, MINERVA.format(0) + " (gold 1.6, in cm)"),
]

REAL_TABLES = {
    "real_cs336_gsm8k": _cs336(),
    "real_committed": COMMITTED,
    "real_extraction": EXTRACTION,
    "real_percent": PERCENT,
    "real_equations_units": EQUATIONS_UNITS,
}
