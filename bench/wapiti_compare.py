"""spargel's Wapiti pattern language against Wapiti 1.5 itself.

Given a Wapiti source folder that has been built (``make`` in a checkout of Jekub/Wapiti,
which ships ``dat/`` and ``src/pattern.c``):

1. observations: for each of Wapiti's own pattern files (``dat/chpattern.txt``,
   ``dat/nppattern.txt``, ``dat/pattern.txt``) ``wapiti train -i 1`` writes a model whose
   observation list holds every string its patterns produce on the training data; the
   set spargel's ``Template(format="wapiti")`` produces on the same data must be equal;
2. random pattern files (every command, offsets far outside the sequences, @ offsets,
   random regexes, comments) on part of ``dat/chtrain.txt``: the same comparison;
3. regexes: a small C driver of ``src/pattern.c``'s matcher (written here, compiled with
   ``cc``) and :class:`spargel.data.wapiti_regex.WapitiRegex` must return the same start
   and length on random regexes and strings.

    python bench/wapiti_compare.py --wapiti path/to/Wapiti [--cases 30000]

Prints the counts; exits 1 on any difference, and skips (exit 0, a message) when the
folder, its ``wapiti`` binary or a C compiler is missing.
"""

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spargel.data.conll import read_conll  # noqa: E402
from spargel.data.templates import Template  # noqa: E402
from spargel.data.wapiti_regex import WapitiRegex, WapitiRegexError  # noqa: E402

RUNS = [("chpattern.txt", "chtrain.txt"), ("nppattern.txt", "nptrain.txt"),
        ("pattern.txt", "train.txt")]

DRIVER = r"""
#include "pattern.c"
int main(void) {
    static char line[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        if (tab == NULL) return 2;
        *tab = 0;
        uint32_t len = 0;
        int32_t pos = rex_match(line, tab + 1, &len);
        printf("%d %u\n", pos, pos < 0 ? 0 : len);
    }
    return 0;
}
"""


def model_strings(path):
    """The string lists (#qrk# sections: labels, then observations) of a Wapiti model."""
    lines = Path(path).read_bytes().split(b"\n")
    sections, i = [], 0
    while i < len(lines):
        if lines[i].startswith(b"#qrk#"):
            n = int(lines[i][5:])
            items = []
            for line in lines[i + 1:i + 1 + n]:
                size, _, rest = line.partition(b":")
                items.append(rest[:int(size)].decode("utf-8", "surrogateescape"))
            sections.append(items)
            i += 1 + n
        else:
            i += 1
    return sections


def spargel_strings(template, data):
    out = set()
    for s in read_conll(data):
        uni, bi = template.extract(s.columns)
        for row in uni + bi:
            out.update(row)
    if template.transitions:  # Wapiti's bare 'b' / '*' pattern is an observation too
        out.add("*" if "*" in template.patterns else "b")
    return out


def compare_observations(wapiti, tmp):
    total_diff = 0
    for pattern, train in RUNS:
        model = tmp / f"{pattern}.model"
        subprocess.run([str(wapiti / "wapiti"), "train", "-i", "1", "-p", str(wapiti / "dat" / pattern),
                        str(wapiti / "dat" / train), str(model)], check=True, capture_output=True)
        theirs = set(model_strings(model)[-1])
        tpl = Template.from_file(wapiti / "dat" / pattern, format="wapiti")
        mine = spargel_strings(tpl, wapiti / "dat" / train)
        diff = len(theirs ^ mine)
        total_diff += diff
        print(f"{pattern} on {train}: Wapiti {len(theirs)} observations, spargel {len(mine)}, "
              f"differences {diff}")
        for s in sorted(theirs - mine)[:5]:
            print(f"  only Wapiti: {s!r}")
        for s in sorted(mine - theirs)[:5]:
            print(f"  only spargel: {s!r}")
    return total_diff


def _random_regex(rng):
    atoms = ["a", "e", "A", ".", "-", "$", "^", "\\.", "\\-"] + [f"\\{c}" for c in "dDaAwWlLuUpPsS"]
    while True:
        r = "^" if rng.random() < 0.3 else ""
        for _ in range(rng.randint(0, 4)):
            r += rng.choice(atoms) + rng.choice(["", "", "*", "?"])
        if rng.random() < 0.3:
            r += "$"
        try:
            WapitiRegex(r)
            return r
        except WapitiRegexError:
            pass


def compare_random_patterns(wapiti, tmp, n_files, seed=36):
    """Random pattern files (every command, relative and @ offsets far outside the
    sequences, random regexes, comments) on the first 300 sentences of chtrain.txt."""
    rng = random.Random(seed)
    lines = (wapiti / "dat" / "chtrain.txt").read_text().split("\n")
    cut = [i for i, line in enumerate(lines) if not line.strip()][299]
    data = tmp / "small.txt"
    data.write_text("\n".join(lines[:cut + 1]) + "\n")
    total = 0
    for k in range(n_files):
        rows = []
        for j in range(12):
            parts = []
            for _ in range(rng.randint(1, 3)):
                letter = rng.choice("xXtTmM")
                off = (f"@{rng.randint(-3, 3)}" if rng.random() < 0.25 else str(rng.randint(-7, 7)))
                col = rng.randint(0, 1)
                arg = f',"{_random_regex(rng)}"' if letter in "tTmM" else ""
                parts.append(f"%{letter}[{off},{col}{arg}]")
            kind = rng.choice("uU*bB")
            comment = "  # note" if rng.random() < 0.3 else ""
            rows.append(f"{kind}:p{j}=" + "/".join(parts) + comment)
        pat = tmp / f"random{k}.txt"
        pat.write_text("# random patterns\n" + "\n".join(rows) + "\n")
        model = tmp / f"random{k}.model"
        subprocess.run([str(wapiti / "wapiti"), "train", "-i", "1", "-p", str(pat), str(data), str(model)],
                       check=True, capture_output=True)
        theirs = set(model_strings(model)[-1])
        mine = spargel_strings(Template.from_file(pat, format="wapiti"), data)
        diff = len(theirs ^ mine)
        total += diff
        if diff:
            print(f"  random pattern file {k}: {diff} differences, e.g. "
                  f"{sorted(theirs - mine)[:2]} / {sorted(mine - theirs)[:2]}")
    print(f"random pattern files: {n_files} files of 12 patterns, observation differences {total}")
    return total


def compare_regexes(wapiti, tmp, n_cases, seed=36):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("regexes: skipped (no C compiler)")
        return 0
    (tmp / "driver.c").write_text(DRIVER)
    exe = tmp / "driver"
    subprocess.run([cc, "-O1", "-std=c99", "-I", str(wapiti / "src"), "-o", str(exe), str(tmp / "driver.c"),
                    str(wapiti / "src" / "tools.c"), "-lm"], check=True, capture_output=True)
    rng = random.Random(seed)
    atoms = ["a", "b", "A", ".", "x", "1", "-", "$", "^", "\\.", "\\*", "\\?", "\\\\", "\\$"] + \
            [f"\\{c}" for c in "dDaAwWlLuUpPsS"]
    chars = "abxAB1-. _$^*?\\\t\x7f\xe9"
    cases = []
    while len(cases) < n_cases:
        r = "^" if rng.random() < 0.3 else ""
        for _ in range(rng.randint(0, 6)):
            r += rng.choice(atoms) + rng.choice(["", "", "*", "?"])
        if rng.random() < 0.3:
            r += "$"
        s = "".join(rng.choice(chars) for _ in range(rng.randint(0, 10))).replace("\t", " ")
        try:
            WapitiRegex(r)
        except WapitiRegexError:
            continue
        cases.append((r, s))
    data = "".join(f"{r}\t{s}\n" for r, s in cases).encode("latin-1")
    out = subprocess.run([str(exe)], input=data, capture_output=True, check=True).stdout.decode().split("\n")
    diff = 0
    for (r, s), line in zip(cases, out):
        m = WapitiRegex(r).match(s.encode("latin-1"))
        if ("-1 0" if m is None else f"{m[0]} {m[1]}") != line:
            diff += 1
            if diff <= 5:
                print(f"  regex {r!r} on {s!r}: Wapiti {line}, spargel {m}")
    print(f"regexes: {len(cases)} random regex / string pairs, differences {diff}")
    return diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wapiti", required=True, help="a built Wapiti source folder")
    ap.add_argument("--cases", type=int, default=30000, help="random regex cases")
    ap.add_argument("--pattern-files", type=int, default=20, help="random pattern files")
    args = ap.parse_args()
    wapiti = Path(args.wapiti)
    if not (wapiti / "wapiti").is_file() or not (wapiti / "dat").is_dir():
        print(f"skipped: no built Wapiti (wapiti binary and dat/) in {wapiti}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        diff = (compare_observations(wapiti, tmp) + compare_random_patterns(wapiti, tmp, args.pattern_files)
                + compare_regexes(wapiti, tmp, args.cases))
    print(f"total differences: {diff}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
