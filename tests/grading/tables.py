"""Grader case tables, one per answer type: (gold, response, expected, reason).

Both directions in every table: equivalent forms that must be accepted and near misses that must be
refused. Sources (cases transcribed, never code): the real golds of `../shared/benchmarks` (MATH-500
ids, OlympiadBench, AMC23), Math-Verify's public tests (huggingface/Math-Verify `tests/test_all.py`,
`tests/test_mixed_number_extraction.py`: its number, sets, latex-notation, relations, matrix, edge-case
and additional-case tables), and real model-style outputs (MATH CoT "Final Answer: The final answer is
$X$. I hope it is correct.", several boxes, intermediate boxes, no box). The response is the whole
model output: extraction is part of what is graded. `benchmarks/grading_accuracy.py` prints the
before/after per table; `test_tables.py` asserts zero false positives and at least plain math-verify's
accuracy per table.
"""

from __future__ import annotations

MV = "Math-Verify test_all.py"
CHEAT = "I hope it is correct."

THOUSANDS = [  # MATH golds write thousands as `10,\!080`
    (r"10,\!080", r"The number of arrangements is $\boxed{10080}$.", True, "math500 c&p/508 gold, plain digits"),
    (r"10,\!080", r"So there are $\boxed{10,080}$ ways.", True, "math500 c&p/508, comma thousands"),
    (r"10,\!080", r"So there are $\boxed{10,\!080}$ ways.", True, "math500 c&p/508, same form"),
    (r"10,\!080", r"so we get $\boxed{10{,}080}$", True, "math500 c&p/508, {,} separator"),
    (r"11,\! 111,\! 111,\! 100", r"The answer is $\boxed{11111111100}$.", True, "math500 nt/417"),
    (r"11111111100", r"is $\boxed{11,\! 111,\! 111,\! 100}$", True, MV + " additional cases"),
    (r"32349", r"is $\boxed{32,\! 349}$", True, MV + " additional cases"),
    (r"\$32,\!348", r"She pays $\boxed{\$32,348}$ in total.", True, "math500 algebra/2626, dollars"),
    (r"\$32,\!348", r"She pays $\boxed{32348}$ dollars.", True, "math500 algebra/2626, bare number"),
    (r"900,\!000,\!000", r"Final Answer: The final answer is $900,\!000,\!000$. " + CHEAT, True,
     "MATH CoT gold with two separators"),
    (r"3,\!250", r"Thus the total is $\boxed{3250}$.", True, "MATH gold 3,\\!250"),
    (r"7425000", r"$\boxed{7,425,000}$", True, MV + " number extraction"),
    (r"10,\!080", r"So there are $\boxed{10,\!081}$ ways.", False, "last digit differs"),
    (r"10,\!080", r"$\boxed{1,080}$", False, "a digit group lost"),
    (r"32349", r"is $\boxed{32, 349}$", False, MV + ": `32, 349` with a space is a list"),
    (r"\$32,\!348", r"$\boxed{\$32,384}$", False, "digits swapped"),
    (r"11,\! 111,\! 111,\! 100", r"$\boxed{11111111000}$", False, "one digit differs"),
    (r"3,\!250", r"$\boxed{3,\!25}$", False, "a malformed group is not 3250"),
    (r"900,\!000,\!000", r"$\boxed{900, 000}$", False, "a list of two numbers"),
]

ARITHMETIC = [  # numeric expressions: exact rational arithmetic
    (r"\frac{5}{6}", r"$\boxed{\frac12+\frac13}$", True, "sum of non-dyadic fractions"),
    (r"\frac{40}{9}", r"$\boxed{4 + 4/9}$", True, "integer plus slash fraction"),
    (r"\frac{14}{3}", r"$=2+\frac{5}{3}+1=\boxed{2+\frac{5}{3}+1}$", True, MV + " latex notation (14/3)"),
    (r"\frac{1}{2}", r"$\boxed{\frac{1}{3}+\frac{1}{6}}$", True, "sum to a simpler fraction"),
    (r"\frac{2}{3}", r"$\boxed{2\cdot\frac{1}{3}}$", True, "product"),
    (r"1", r"$\boxed{\frac{1}{3}\times 3}$", True, "product to an integer"),
    (r"\frac{1}{4}", r"$\boxed{\left(\frac{1}{2}\right)^{2}}$", True, "power of a fraction"),
    (r"0.3", r"$\boxed{0.1+0.2}$", True, "decimals add exactly"),
    (r"10", r"Answer \( (9+1) \)", True, MV + " latex notation"),
    (r"\frac{7}{12}", r"$\boxed{\frac{1}{3}+\frac{1}{4}}$", True, "sum, denominators 3 and 4"),
    (r"-\frac{1}{6}", r"$\boxed{\frac{1}{3}-\frac{1}{2}}$", True, "negative difference"),
    (r"\frac{5}{6}", r"$\boxed{\frac12+\frac13}$ ", True, "trailing space"),
    (r"\frac{5}{7}", r"$\boxed{\frac12+\frac13}$", False, "wrong sum"),
    (r"4", r"$\boxed{4 + 4/9}$", False, "integer part only"),
    (r"\frac{40}{9}", r"$\boxed{4 - 4/9}$", False, "difference, not sum"),
    (r"\frac{2}{3}", r"$\boxed{\frac{1}{3}+\frac{1}{3}+10^{-12}}$", False, "off by 1e-12"),
    (r"0.3", r"$\boxed{0.1+0.21}$", False, "decimals add to 0.31"),
    (r"1", r"$\boxed{\frac{1}{3}\times 4}$", False, "product 4/3"),
    (r"\frac{1}{4}", r"$\boxed{\left(\frac{1}{2}\right)^{3}}$", False, "cube, not square"),
    (r"4", r"$\boxed{\frac{34}{16}+\frac{\sqrt{1358}}{16}}$", False, MV + " complex expressions"),
]

FINAL_ANSWER = [  # which answer a response states last
    (r"28\%", r"... $= 28 \%. Final Answer: The final answer is $28 \%$. " + CHEAT, True,
     "MATH CoT answer line with percent"),
    (r"34", r"Final Answer: The largest $n$ is 34.", True, MV + " additional cases: answer line with prose"),
    (r"12000023", r"... the only one is 12,000,023. Final Answer: The final answer is 12,000,023. " + CHEAT,
     True, MV + " edge cases: plain number with commas on the answer line"),
    (r"10455", r"so the interest is $\boxed{200}$. After the second CD she has $10,455. Final Answer: "
     r"The final answer is $10455$. " + CHEAT, True, MV + " additional cases: intermediate box, answer line"),
    (r"14400", r"$1 \times 5! \times 5! = 120 \times 120 = \boxed{14400}$. Final Answer: The final answer "
     r"is $14400$. " + CHEAT, True, MV + " additional cases: box and answer line agree"),
    (r"(-6,10)", r"The solution is \( x \in (-6, 10) \). Final Answer: The final answer is \((-6, 10)\). "
     + CHEAT, True, MV + " additional cases: answer line with \\( \\)"),
    (r"\left( \frac{4}{5}, \frac{1}{5} \right)", r"Thus, $(t,u) = \boxed{\left( \frac{4}{5}, \frac{1}{5} "
     r"\right)}.$ Final Answer: The final answer is $\left( \frac{4}{5}, \frac{1}{5} \right)$. " + CHEAT,
     True, MV + " edge cases"),
    (r"9", r"Answer $ 9 $", True, MV + " latex notation"),
    (r"9", "Answer \\[ \n 9 \n \\]", True, MV + " latex notation: block math over lines"),
    (r"7", r"We first get $\boxed{3}$ for the inner sum. Adding the outer terms, the answer is $7$.", True,
     "intermediate box, final stated answer later"),
    (r"5", r"**Answer:** $x = 5$", True, "markdown answer line"),
    (r"\frac{3}{4}", "The probability is $\\frac{3}{4}$.\n\n**Final Answer**\n\\[\n\\boxed{\\frac{3}{4}}\n\\]",
     True, "final answer heading then box"),
    (r"5", "Final Answer: The final answer is $5$. " + CHEAT + "\n\nProblem:\nFind $y$.\n\nSolution:\n"
     r"So $y = \boxed{7}$.", True, "base model goes on with a made-up next problem"),
    (r"28", r"Final Answer: The final answer is $27$. " + CHEAT, False, "answer line, wrong value"),
    (r"34", r"Final Answer: The largest $n$ is 35.", False, "answer line with prose, wrong value"),
    (r"3", r"We first get $\boxed{3}$ for the inner sum. Adding the outer terms, the answer is $7$.", False,
     "the intermediate box is not the answer"),
    (r"200", r"so the interest is $\boxed{200}$. Final Answer: The final answer is $10455$. " + CHEAT, False,
     "intermediate box against the final stated answer"),
    (r"7", "Final Answer: The final answer is $5$. " + CHEAT + "\n\nProblem:\nFind $y$.\n\nSolution:\n"
     r"So $y = \boxed{7}$.", False, "the made-up problem's answer is not the answer"),
    (r"12000023", r"Final Answer: The final answer is 12,000,003. " + CHEAT, False, "digit differs"),
    (r"2", r"Final Answer: The final answer is $x^2$. " + CHEAT, False, "the exponent is not the answer"),
    (r"(7,6)", r"Therefore the solution is the empty set, $\boxed{\emptyset}$.", False,
     MV + " edge cases: empty set is not (7,6)"),
]

SETS = [  # several answers: sets, lists, several boxes
    (r"\{1,2,3\}", r"The solutions are $\boxed{1}, \boxed{2}, \boxed{3}$.", True, "three boxes vs a set"),
    (r"1,2,3", r"The solutions are $\boxed{3}$, $\boxed{1}$ and $\boxed{2}$.", True, "boxes in another order"),
    (r"-2,1", r"the only integer roots are $\boxed{-2,1}$.", True, MV + " latex notation"),
    (r"-2,1", r"the only integer roots are $\boxed{1, -2}$.", True, "list order"),
    (r"\{1\pm\sqrt{5},-2\}", r"so the answer is $\boxed{\{1\pm\sqrt{5},-2\}}.$", True, "math500 ia/2015"),
    (r"\{1\pm\sqrt{5},-2\}", r"$\boxed{-2, 1+\sqrt{5}, 1-\sqrt{5}}$", True, "math500 ia/2015, expanded"),
    (r"(1,3)", r"${1,3}$", True, MV + " additional cases"),
    (r"69,84", r"The two values are \boxed{69} and \boxed{84}.", True, "OlympiadBench two answers"),
    (r"\{1,2,3\}", r"$\boxed{\{3, 2, 1\}}$", True, "set order"),
    (r"(0,9) \cup (9,36)", r"$\boxed{(0,9)\cup(9,36)}$", True, "math500 ia/1992 union"),
    (r"\{1,2,3\}", r"The solutions are $\boxed{1}, \boxed{2}$.", False, "one solution missing"),
    (r"\{1,2,3\}", r"The solutions are $\boxed{1}, \boxed{2}, \boxed{4}$.", False, "one solution wrong"),
    (r"\{1,2,3\}", r"The solutions are $\boxed{1}, \boxed{2}, \boxed{3}, \boxed{4}$.", False, "one extra"),
    (r"(3,1)", r"${1,3}$", False, MV + " additional cases: ordered pair vs set"),
    (r"-2,1", r"the only integer roots are $\boxed{-2,2}$.", False, "one root wrong"),
    (r"\{1\pm\sqrt{5},-2\}", r"$\boxed{-2, 1+\sqrt{5}}$", False, "math500 ia/2015, one root missing"),
    (r"(0,9) \cup (9,36)", r"$\boxed{(0,36)}$", False, "math500 ia/1992, the hole is lost"),
    (r"1,2,3", r"First $\boxed{1}$. " + "More work here. " * 40 + r"Finally $\boxed{2}$ and $\boxed{3}$.",
     False, "an early box is an intermediate result"),
]

RELATIONS = [  # equations and inequalities vs bare values
    (r"x \geq 5", r"Therefore $x \geq 5$ is the solution.", True, MV + " relations"),
    (r"x < 3", r"We find that $x \lt 3$.", True, MV + " relations"),
    (r"x \leq 2", r"Thus $x <= 2$ is our answer.", True, MV + " relations"),
    (r"x \leq 5", r"$\boxed{5 \geq x}$", True, MV + " relations: flipped"),
    (r"11", r"$\boxed{x=11}$", True, MV + " relations: bare number vs equation"),
    (r"11", r"$\boxed{x\approx11}$", True, MV + " relations: approximate equality"),
    (r"k=1", r"$\boxed{1}$", True, MV + " relations"),
    (r"x = 11", r"$\boxed{x = 5+5+1 = 7 =11}$", True, MV + " relations: the last side counts"),
    (r"x \in [-2,7]", r"$\boxed{[-2,7]}$", True, "math500 algebra/101, interval alone"),
    (r"x \in [-2,7]", r"$\boxed{x \in [-2, 7]}$", True, "math500 algebra/101, same form"),
    (r"(2,\infty)", r"$\boxed{(2, \infty)}$", True, "math500 ia/183"),
    (r"2x+4y-3=0", r"$\boxed{y=-\frac{1}{2}x+\frac{3}{4}}$", True, MV + " relations: same line"),
    (r"[5,\infty)", r"$\boxed{x \geq 5}$", True, "interval gold, inequality answer"),
    (r"x \geq 5", r"$\boxed{[5, \infty)}$", True, "inequality gold, interval answer"),
    (r"(-\infty, 3)", r"$\boxed{x < 3}$", True, "open interval gold"),
    (r"x > 5", r"Therefore $x < 5$ is the solution.", False, MV + " relations"),
    (r"x \geq 5", r"The solution is $x \leq 5$", False, MV + " relations"),
    (r"7 = 11a+c", r"$\boxed{11a+c}$", False, MV + " relations: side of an equation"),
    (r"a +3z = 0", r"$\boxed{0}$", False, MV + " relations: incomplete equation"),
    (r"2x + z = 1", r"$\boxed{1}$", False, MV + " relations"),
    (r"5", r"$\boxed{x \geq 5}$", False, "inequality is not the value"),
    (r"11", r"$\boxed{x=12}$", False, "equation with another value"),
    (r"11", r"$\boxed{x\approx 12}$", False, "approximately another value"),
    (r"[5,\infty)", r"$\boxed{x > 5}$", False, "strict inequality vs closed end"),
    (r"(-\infty, 3)", r"$\boxed{x \leq 3}$", False, "closed end vs open interval"),
    (r"x < 1", r"$\boxed{x > -1}$", False, MV + " relations"),
    (r"(2,\infty)", r"$\boxed{[2, \infty)}$", False, "math500 ia/183, closed end"),
]

TIMES = [
    (r"12:00", r"The clock shows $\boxed{12:00}$.", True, "time gold (worker used to raise on it)"),
    (r"12:00", r"The clock shows $\boxed{12{:}00}$.", True, "LaTeX colon"),
    (r"4:30 \text{ p.m.}", r"She arrives at $\boxed{\text{4:30 p.m.}}$", True, "text-wrapped time"),
    (r"4:30 \text{ p.m.}", r"$\boxed{4:30 \text{ PM}}$", True, "PM in capitals"),
    (r"4:30 \text{ p.m.}", r"$\boxed{4:30\text{pm}}$", True, "pm without points"),
    (r"4:30 \text{ p.m.}", r"$\boxed{16:30}$", True, "24-hour clock"),
    (r"9:05 \text{ a.m.}", r"The train leaves at \boxed{9:05 a.m.}", True, "a.m. time in plain text"),
    (r"9:00 \text{ a.m.}", r"$\boxed{9 \text{ a.m.}}$", True, "hour with its meridiem"),
    (r"12:00", r"$\boxed{12\!:\!00}$", True, "spaced colon"),
    (r"12:00 \text{ noon}", r"$\boxed{12:00 \text{ p.m.}}$", True, "noon is 12 p.m."),
    (r"12:00", r"The clock shows $\boxed{12:30}$.", False, "minutes differ"),
    (r"12:00", r"$\boxed{1200}$", False, "a number is not a time"),
    (r"4:30 \text{ p.m.}", r"$\boxed{4:30 \text{ a.m.}}$", False, "a.m. vs p.m."),
    (r"4:30 \text{ p.m.}", r"$\boxed{4:31 \text{ p.m.}}$", False, "one minute later"),
    (r"4:30 \text{ p.m.}", r"$\boxed{5:30 \text{ p.m.}}$", False, "one hour later"),
    (r"4:30 \text{ p.m.}", r"$\boxed{\frac{4}{30}}$", False, "a ratio is not a time"),
    (r"12:00 \text{ noon}", r"$\boxed{12:00 \text{ midnight}}$", False, "midnight is not noon"),
    (r"9:00 \text{ a.m.}", r"$\boxed{9}$", False, "a bare hour is no time"),
    (r"9:05 \text{ a.m.}", r"\boxed{9:50 a.m.}", False, "minutes swapped"),
]

MIXED_NUMBERS = [
    (r"\frac{40}{9}", r"$\boxed{4\frac{4}{9}}$", True, "LaTeX mixed number"),
    (r"\frac{40}{9}", r"The answer is 4 4/9.", True, "Math-Verify test_mixed_number_extraction"),
    (r"6\frac{1}{4}", r"$\boxed{\frac{25}{4}}$", True, "mixed-number gold vs improper fraction"),
    (r"6\frac{1}{4}", r"$\boxed{6.25}$", True, "mixed-number gold vs decimal"),
    (r"6\frac{1}{4}", r"$\boxed{6 \frac14}$", True, "spaced, short frac"),
    (r"-\frac{5}{2}", r"$\boxed{-2\frac{1}{2}}$", True, "negative mixed number"),
    (r"\frac{71}{6}", r"$\boxed{11\tfrac{5}{6}}$", True, "tfrac mixed number (11 5/6)"),
    (r"\frac{40}{9}", r"$\boxed{4\frac{4}{9}}$ ", True, "trailing space"),
    (r"\frac{16}{9}", r"$\boxed{4\frac{4}{9}}$", False, "mixed number is a sum, not a product"),
    (r"4", r"The answer is 4 4/9.", False, "Math-Verify: whole-number prefix only"),
    (r"6\frac{1}{4}", r"$\boxed{\frac{6}{4}}$", False, "whole part lost"),
    (r"6\frac{1}{4}", r"$\boxed{6.4}$", False, "digits read as a decimal"),
    (r"-\frac{5}{2}", r"$\boxed{-\frac{3}{2}}$", False, "sign applied to the whole only"),
    (r"\frac{103}{9}", r"$\boxed{11.0 4/9}$", False, "Math-Verify: decimal whole part is no mixed number"),
]

MATRICES = [
    (r"\begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix}",
     r"The identity matrix is $ \begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix} $.", True, MV + " matrix, no box"),
    (r"\begin{bmatrix}0 & 0 \\0 & 0\end{bmatrix}",
     r"Here is a zero matrix: $\boxed{\begin{pmatrix}0 & 0 \\0 & 0\end{pmatrix}}$", True, MV + " bmatrix"),
    (r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}",
     r"$\boxed{\begin{pmatrix} -\frac{1}{3} \\ \frac{2}{3} \\ \frac{5}{3} \end{pmatrix}}$", True,
     "math500 precalculus/1300, frac entries"),
    (r"\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}",
     r"$\boxed{\begin{pmatrix}-1&0\\0&-1\end{pmatrix}}$", True, "math500 precalculus/920"),
    (r"\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}",
     r"$\boxed{\begin{pmatrix} 0.2 \\ -3.6 \end{pmatrix}}$", True, "math500 precalculus/398, decimals"),
    (r"\begin{pmatrix} -2 \\ -14 \\ -7 \end{pmatrix}",
     "Thus\n\\[\n\\boxed{\\begin{pmatrix} -2 \\\\ -14 \\\\ -7 \\end{pmatrix}}\n\\]", True, "math500 pc/263"),
    (r"\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix}",
     r"The matrix is $\begin{pmatrix}1 & 2 \\ 3 & 5\end{pmatrix}$", False, MV + " matrix: one entry"),
    (r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}",
     r"$\boxed{\begin{pmatrix} -\frac{1}{3} \\ \frac{2}{3} \\ \frac{4}{3} \end{pmatrix}}$", False,
     "math500 precalculus/1300, last entry"),
    (r"\begin{pmatrix} -2 \\ -14 \\ -7 \end{pmatrix}",
     r"$\boxed{\begin{pmatrix} -2 & -14 & -7 \end{pmatrix}}$", False, "row vs column vector"),
    (r"\begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix}",
     r"The identity matrix is $ \begin{pmatrix}1 & 0 \\ 0 & 2\end{pmatrix} $.", False, "no box, one entry"),
    (r"1", r"The identity matrix is $ \begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix} $.", False,
     "a matrix is not its last entry"),
    (r"\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}", r"$\boxed{\begin{pmatrix} 0.2 \\ 3.6 \end{pmatrix}}$",
     False, "math500 precalculus/398, sign"),
]

MULTIPLE_CHOICE = [
    (r"27", r"The answer is $\boxed{\textbf{(B) } 27}$.", True, "AMC value gold vs choice box"),
    (r"27", r"$\boxed{\textbf{(B)}\ 27}$", True, "choice label with \\ space"),
    (r"27", r"$\boxed{(B)\ 27}$", True, "plain label"),
    (r"\text{(C)}", r"$\boxed{\text{(C)}}.$", True, MV + " additional cases"),
    (r"\text{(C)}", r"$\boxed{C}$", True, "math500 precalculus/819, bare letter"),
    (r"\text{(C)}", r"$\boxed{\textbf{(C)}}$", True, "bold label"),
    (r"\text{(E)}", r"$\boxed{\text{E}}$", True, "math500 precalculus/452"),
    (r"\text{E}", r"$E$", True, MV + " additional cases"),
    (r"27", r"The answer is $\boxed{\textbf{(B) } 28}$.", False, "choice with the wrong value"),
    (r"27", r"$\boxed{\textbf{(B)}}$", False, "a label alone is not the value"),
    (r"\text{(C)}", r"$\boxed{D}$", False, "wrong letter"),
    (r"\text{(C)}", r"$\boxed{\textbf{(D) } 27}$", False, "wrong letter with a value"),
    (r"2", r"$\boxed{\textbf{(A) } 1}$", False, "label letter is not a number"),
]

APPROX = [
    (r"11", r"$\boxed{x\approx11}$", True, MV + " relations"),
    (r"7.78", r"$\frac{7}{9} \times 10 = \frac{70}{9} \approx 7.78$. So $\boxed{\frac{70}{9} \approx 7.78}$",
     True, MV + " additional cases: rounded gold"),
    (r"\frac{1}{3}", r"$\boxed{x=\frac{1}{3}\approx 0.33}$", True, "exact value before the approximation"),
    (r"1.6", r"$\boxed{\approx 1.62}$", True, "approximation prefix"),
    (r"\frac{70}{9}", r"$\boxed{\frac{70}{9} \approx 7.78}$", True, "exact gold, exact stated"),
    (r"2\sqrt{10}", r"$\boxed{2\sqrt{10}\approx 6.32}$", True, "irrational with a rough decimal"),
    (r"11", r"$\boxed{x\approx 12}$", False, "approximately another value"),
    (r"0.34", r"$\boxed{\frac{1}{3} \approx 0.33}$", False, "rounded gold, other value"),
    (r"\frac{70}{9}", r"$\boxed{\approx 7.78}$", False, "two digits of an exact non-integer"),
    (r"\frac{1}{3}", r"$\boxed{x=\frac{1}{4}\approx 0.33}$", False, "stated exact value is wrong"),
    (r"2\sqrt{10}", r"$\boxed{2\sqrt{11}\approx 6.32}$", False, "wrong exact value, same rounding"),
]

NO_MARKER = [  # responses without a box or answer phrase: the fallback must never accept a wrong answer
    (r"2", r"AZYUK2A", False, MV + " number extraction: digit inside a word"),
    (r"2", r"$\frac{1+\sqrt{5}}{2}$", False, MV + " complex expressions: a denominator is no answer"),
    (r"(0,9)", r"$[0,9)$", False, MV + " sets handling: the end point is no answer"),
    (r"1", r"$-[0,1)$", False, MV + " sets handling"),
    (r"9", r"$2^{9}$", False, "an exponent is no answer"),
    (r"3", r"the roots are $x_3$ and $x_4$", False, "a subscript is no answer"),
    (r"4", r"$\sqrt{4}+1$", False, "part of an expression"),
    (r"5", r"Therefore $x \geq 5$ is the solution.", False, "an inequality is not its bound"),
    (r"2", r"The probability is 1/2", False, "a denominator is no answer"),
    (r"2", r"We have 2.5 liters left", False, "a decimal's integer part is no answer"),
    (r"42", r"so the total is 42.", True, "plain sentence, last number"),
    (r"120", r"Therefore the volume is $120$ cubic units.", True, "last math segment"),
    (r"1000.99", r"the number is not 10 which is 1,000.99", True, MV + " number extraction"),
    (r"\frac{14}{3}", r"$2+\frac{5}{3}+1=\frac{14}{3}$", True, "equation chain, last side"),
    (r"x \geq 5", r"Therefore $x \geq 5$ is the solution.", True, MV + " relations, no box"),
]

TABLES = {
    "thousands": THOUSANDS,
    "arithmetic": ARITHMETIC,
    "final_answer": FINAL_ANSWER,
    "sets": SETS,
    "relations": RELATIONS,
    "times": TIMES,
    "mixed_numbers": MIXED_NUMBERS,
    "matrices": MATRICES,
    "multiple_choice": MULTIPLE_CHOICE,
    "approx": APPROX,
    "no_marker": NO_MARKER,
}
