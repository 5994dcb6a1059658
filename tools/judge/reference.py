#!/usr/bin/env python3
"""SciPy's answers to the judge's reference cases.

Reads the cases printed by `node dist/tools/judge/cases.js` (stdin, or the file named first) and prints them
with SciPy's answers: for each case, scipy.stats.mannwhitneyu's statistic and pvalue for every alternative,
with and without the continuity correction, by the methods auto and asymptotic, and exact where the samples
are small enough for SciPy's exact recursion (n*m <= 900); and scipy.stats.norm.sf and norm.isf at the
given points. SciPy's NaN is written as null. `make judge-reference` runs it.
"""
import json
import math
import platform
import sys

import numpy
import scipy
from scipy import stats

EXACT_LIMIT = 900


def number(value):
    value = float(value)
    return None if math.isnan(value) else value


def answers(x, y):
    out = []
    methods = ["auto", "asymptotic"] + (["exact"] if len(x) * len(y) <= EXACT_LIMIT else [])
    for alternative in ["two-sided", "greater", "less"]:
        for continuity in [True, False]:
            for method in methods:
                result = stats.mannwhitneyu(
                    x, y, use_continuity=continuity, alternative=alternative, method=method
                )
                out.append(
                    {
                        "alternative": alternative,
                        "continuity": continuity,
                        "method": method,
                        "statistic": number(result.statistic),
                        "pvalue": number(result.pvalue),
                    }
                )
    return out


def main():
    source = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    cases = json.load(source)
    reference = {
        "generator": "tools/judge/cases.ts",
        "answeredBy": "tools/judge/reference.py",
        "scipy": scipy.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "seed": cases["seed"],
        "cases": [dict(case, answers=answers(case["x"], case["y"])) for case in cases["cases"]],
        "normalSf": [{"z": z, "sf": number(stats.norm.sf(z))} for z in cases["z"]],
        "normalIsf": [{"p": p, "isf": number(stats.norm.isf(p))} for p in cases["p"]],
    }
    # One case or point a line, so that a change reads in a diff.
    lines = []
    for key, value in reference.items():
        if isinstance(value, list):
            rows = ",\n".join("    " + json.dumps(row, allow_nan=False) for row in value)
            lines.append(f"  {json.dumps(key)}: [\n{rows}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    sys.stdout.write("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    main()
