"""Constrained decoding on CoNLL-2002 Spanish NER (IOB2 tags): how many test sequences
break the BIO rules without and with ``constraints="bio"``, and the chunk F1 of both
(conlleval's, :func:`spargel.metrics.chunk_f1`). Modest trainings: 60 OWL-QN iterations
at ``l1 = 0.1`` of

* the command line's default template (word and POS at -1, 0, +1; transitions);
* a simple one (word and POS, previous and next word; transitions);
* the same without transitions (no ``B`` line);
* the simple one with label triples at order 2;

and, trained under the constraints (``constrain_training=True``; without the one training
sentence whose first tag is ``I-LOC``, which they forbid), the last three.

    python bench/constrained_conll2002.py

The data set is read from the shared data folder beside the checkout
(``../shared/data/conll2002_spanish``); the script says so and stops when it is absent.
Results: ``docs/guide.md``, "Constrained decoding".
"""

import time
import warnings

from _common import data_dir

from spargel import CRF, read_conll
from spargel.chain.constraints import invalid_sequences
from spargel.data.templates import default_template
from spargel.metrics import chunk_f1

SIMPLE = "U00:%x[0,0]\nU01:%x[0,1]\nU02:%x[-1,0]\nU03:%x[1,0]\n"


def main():
    warnings.simplefilter("ignore")
    d = data_dir("conll2002_spanish")
    train = list(read_conll(d / "esp.train", encoding="latin-1"))
    test = list(read_conll(d / "esp.testb", encoding="latin-1"))
    Xt, yt = [s.columns for s in test], [s.labels for s in test]
    runs = [("default template", default_template(2), 1), ("simple + transitions", SIMPLE + "B\n", 1),
            ("simple, no transitions", SIMPLE, 1), ("simple + transitions + triples", SIMPLE + "B\nT\n", 2)]
    print(f"{'model':34s} {'training':12s} {'invalid free -> bio':>20s} {'F1 free -> bio':>18s} {'fit s':>6s}")
    for constrained in (False, True):
        sents = [s for s in train if not constrained or invalid_sequences([s.labels], "bio") == 0]
        X, y = [s.columns for s in sents], [s.labels for s in sents]
        for name, tpl, order in runs:
            if constrained and name == "default template":
                continue
            t0 = time.perf_counter()
            crf = CRF(template=tpl, order=order, l1=0.1, max_iter=60, constraints="bio",
                      constrain_training=constrained).fit(X, y)
            fit = time.perf_counter() - t0
            cons = crf.predict(Xt)
            crf.constraints = None
            free = crf.predict(Xt)
            print(f"{name:34s} {'constrained' if constrained else 'free':12s} "
                  f"{invalid_sequences(free, 'bio'):9d} -> {invalid_sequences(cons, 'bio'):<8d} "
                  f"{100 * chunk_f1(yt, free):7.2f} -> {100 * chunk_f1(yt, cons):<7.2f} {fit:6.1f}", flush=True)


if __name__ == "__main__":
    main()
