"""Issue 26 lever 3, the question side: what the vector leg embeds for a question, on LoCoMo dev.

    python scripts/quality/locomo_levers.py collect ../shared/datasets/locomo --speaker prefix-text   # once
    python scripts/quality/locomo_question_forms.py ../shared/datasets/locomo

Each form of the question is embedded with the product's model (MiniLM, cached), ranked by exact
cosine over its conversation's turns (as written: "Speaker: text"), and put in place of the
collected vector leg in locomo_levers.py's simulation of recall at today's defaults. Forms: as
asked; the leading question words stripped ("What did Caroline research?" -> "Caroline research");
"Name: " in front when the question names a speaker (the turns' own form); both. Printed: the
vector leg alone and hybrid, R@5 / R@10 / nDCG@10 per category, and each form's hybrid against
"as asked": per-question R@10 and per conversation (a rule, not a tuned parameter: it has to
help in each).
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Callable

import locomo_levers as levers
import numpy as np

# a question's leading words: the interrogative and its auxiliaries ("How many times has", "What kind of")
QUESTION_WORDS = re.compile(
    r"^(what|when|where|who|whom|whose|which|why|how(\s+(many|much|long|often|did|does|do|is|was|has))?|"
    r"did|does|do|is|are|was|were|would|could|can|has|have|had)\b"
    r"(\s+(did|does|do|is|are|was|were|has|have|had|would|might|kind of|type of|types of))*\s*", re.I)


def stripped(text: str) -> str:
    return QUESTION_WORDS.sub("", text).rstrip("?").strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--out", default="results/levers")
    args = ap.parse_args()
    args.speaker, args.tag = "prefix-text", ""
    sim, cs, m, emb, _ = levers.load_sim(args)
    rows_of = {c: np.asarray([i for i, t in enumerate(cs.turns) if t.conversation == c]) for c in cs.conversations}
    ids_of = {c: [cs.turns[i].id for i in rows_of[c]] for c in cs.conversations}
    speakers = {c: sorted({t.speaker for t in cs.turns if t.conversation == c}) for c in cs.conversations}

    def named(q: str, text: str) -> str | None:
        return next((s for s in speakers[sim.q[q]["conversation"]] if re.search(rf"\b{re.escape(s)}\b", text)), None)

    def prefixed(q: str, text: str) -> str:
        name = named(q, text)
        return f"{name}: {text}" if name else text

    forms: dict[str, Callable[[str, str], str]] = {
        "as asked": lambda q, t: t,
        "question words stripped": lambda q, t: stripped(t),
        "Name: question": prefixed,
        "Name: stripped": lambda q, t: prefixed(q, stripped(t)),
    }
    current = levers.CURRENT[args.speaker]

    print(levers.HEAD.format("question form"))
    asked: dict[str, list[str]] | None = None
    for name, form in forms.items():
        vec = {}
        for q in sim.q:
            v = np.asarray(emb.embed_query(form(q, cs.questions[q].text)), dtype=float)
            c = sim.q[q]["conversation"]
            s = m[rows_of[c]] @ (v / max(float(np.linalg.norm(v)), 1e-12))
            vec[q] = [ids_of[c][i] for i in np.argsort(-s, kind="stable")[:levers.DEPTH]]
        hyb = levers.rank_with_legs(sim, current, vector={q: [[t, 0.0] for t in vec[q]] for q in vec})
        print(f"| {name}: vector leg | " + " | ".join(levers.cells(vec, sim)) + " |")
        print(f"| {name}: hybrid | " + " | ".join(levers.cells(hyb, sim)) + " |", flush=True)
        if asked is None:
            asked = hyb
            continue
        up, down, mean, lo, hi = levers.paired_r10(sim, hyb, asked)
        per = "; ".join(f"{c} {levers.cells(hyb, sim, ids)[0]} (as asked {levers.cells(asked, sim, ids)[0]})"
                        for c in sorted(cs.conversations) for ids in [[x for x in sim.judged if sim.q[x]["conversation"] == c]])
        print(f"|   against as asked: R@10 up {up}, down {down}, mean {mean:+.2f} points, 95% [{lo:+.2f}, {hi:+.2f}]; {per} | | | | |")


if __name__ == "__main__":
    main()
