"""The tiny chunking corpus behind tests/data/tiny_chunks.* (python make_tiny_chunks.py).

The model files and outputs beside it were made from it by the tools themselves:

    wapiti train -p tiny_chunks.wapiti_pattern -1 0.5 -i 100 tiny_chunks_train.txt tiny_chunks.wapiti
    wapiti label -m tiny_chunks.wapiti tiny_chunks_test.txt tiny_chunks.wapiti.out
    crf_learn -t -c 4 -f 1 tiny_chunks.crfpp_template tiny_chunks_train.txt tiny_chunks.crfpp.model
    crf_test -m tiny_chunks.crfpp.model tiny_chunks_test.txt > tiny_chunks.crfpp.out

(Wapiti 1.5 from Jekub/Wapiti, CRF++ 0.58 from taku910/crfpp; crf_learn -t writes both
the binary model ``tiny_chunks.crfpp.model`` (10408 bytes, what crf_test read) and the
text model ``tiny_chunks.crfpp.model.txt`` beside it; both are kept. crf_learn is
deterministic here: rerunning the command writes the same bytes.)
"""
import random
rng = random.Random(7)
DT = ["the", "a", "every", "The", "A"]
JJ = ["big", "red", "old", "quiet", "new"]
NN = ["dog", "cat", "house", "tree", "car", "idea"]
NNP = ["Anna", "Bob", "Paris", "Kyoto"]
VB = ["sees", "likes", "runs", "sleeps", "builds"]
IN = ["in", "near", "with", "on"]
def np_():
    if rng.random() < 0.3:
        w = [(rng.choice(NNP), "NNP")]
    else:
        w = [(rng.choice(DT), "DT")] + [(rng.choice(JJ), "JJ") for _ in range(rng.randint(0, 2))] + [(rng.choice(NN), "NN")]
    return [(a, b, ("B-NP" if i == 0 else "I-NP")) for i, (a, b) in enumerate(w)]
def sent():
    out = np_() + [(rng.choice(VB), "VBZ", "B-VP")]
    if rng.random() < 0.7:
        out += np_()
    if rng.random() < 0.5:
        out += [(rng.choice(IN), "IN", "B-PP")] + np_()
    if rng.random() < 0.6:
        out += [(".", ".", "O")]
    return out
def write(name, n):
    with open(name, "w") as fh:
        for _ in range(n):
            for w in sent():
                fh.write(" ".join(w) + "\n")
            fh.write("\n")
write("tiny_chunks_train.txt", 40)
write("tiny_chunks_test.txt", 15)
