"""Tests for the CRF++/Wapiti pattern language (spargel.data.templates).

Every expected feature string below is worked out by hand.
"""

import pytest

from spargel.data.errors import DataFormatError
from spargel.data.templates import (
    CRFSUITE_CHUNKING_TEMPLATE,
    Template,
    crfsuite_chunking_template,
)

# a three-token sentence: word, POS
SENT = [["The", "DT"], ["Cat2", "NN"], ["sat", "VBD"]]


def uni(text, columns=SENT, pad=True):
    return Template.parse(text).extract(columns, pad)[0]


def bi(text, columns=SENT, pad=True):
    return Template.parse(text).extract(columns, pad)[1]


# ---------------------------------------------------------------- %x, offsets
def test_x_current_and_relative_with_padding_at_both_ends():
    assert uni("U00:%x[0,0]") == [["U00:The"], ["U00:Cat2"], ["U00:sat"]]
    assert uni("U01:%x[-1,1]") == [["U01:_B-1"], ["U01:DT"], ["U01:NN"]]
    assert uni("U02:%x[-2,0]") == [["U02:_B-2"], ["U02:_B-1"], ["U02:The"]]
    assert uni("U03:%x[1,0]") == [["U03:Cat2"], ["U03:sat"], ["U03:_B+1"]]
    assert uni("U04:%x[2,1]") == [["U04:VBD"], ["U04:_B+1"], ["U04:_B+2"]]
    assert uni("U05:%x[4,0]") == [["U05:_B+2"], ["U05:_B+3"], ["U05:_B+4"]]


def test_whole_line_with_literal_text_is_the_feature():
    got = uni("U01:%x[-1,0]/%x[0,0] and %x[0,1]!")
    assert got[1] == ["U01:The/Cat2 and NN!"]
    # no name, no colon: still the whole line
    assert uni("U%x[0,1]")[0] == ["UDT"]
    # braces and a literal percent survive
    assert uni("U{a}:%%%x[0,0]}")[0] == ["U{a}:%The}"]


def test_absolute_positions():
    assert uni("U:%x[@0,0]") == [["U:The"]] * 3
    assert uni("U:%x[@1,1]") == [["U:NN"]] * 3
    assert uni("U:%x[@-1,0]") == [["U:sat"]] * 3
    assert uni("U:%x[@-3,0]") == [["U:The"]] * 3
    assert uni("U:%x[@-4,0]") == [["U:_B-1"]] * 3
    assert uni("U:%x[@3,0]") == [["U:_B+1"]] * 3
    assert uni("U:%x[@0,0]/%x[0,0]")[2] == ["U:The/sat"]


def test_blanks_inside_brackets_and_signs():
    assert uni("U:%x[ -1 , 0 ]")[1] == ["U:The"]
    assert uni("U:%x[+1,0]")[1] == ["U:sat"]
    assert uni("U:%x[@ -1,0]")[0] == ["U:sat"]


def test_case_folding():
    assert uni("U:%X[0,0]/%x[0,0]") == [["U:the/The"], ["U:cat2/Cat2"], ["U:sat/sat"]]
    # padding markers are never folded
    assert uni("U:%X[-1,0]")[0] == ["U:_B-1"]


# --------------------------------------------------------------------- %t, %m
def test_t_is_a_search_giving_true_false():
    assert uni('U:%t[0,0,"^[A-Z]"]') == [["U:true"], ["U:true"], ["U:false"]]
    assert uni('U:%t[0,0,"[0-9]"]') == [["U:false"], ["U:true"], ["U:false"]]
    assert uni('U:%t[0,0,"at"]') == [["U:false"], ["U:true"], ["U:true"]]
    # upper-case: the folded cell, case-insensitive regex
    assert uni('U:%T[0,0,"^the$"]') == [["U:true"], ["U:false"], ["U:false"]]
    assert uni('U:%T[0,0,"^[A-Z]+$"]') == [["U:true"], ["U:false"], ["U:true"]]
    # outside the sentence: the marker, not a regex result
    assert uni('U:%t[-1,0,"^[A-Z]"]')[0] == ["U:_B-1"]


def test_m_gives_the_first_match_or_empty():
    assert uni('U:%m[0,0,"[a-z]+"]') == [["U:he"], ["U:at"], ["U:sat"]]
    assert uni('U:%m[0,0,"[0-9]+"]') == [["U:"], ["U:2"], ["U:"]]
    assert uni('U:%M[0,0,"^c.."]') == [["U:"], ["U:cat"], ["U:"]]
    assert uni('U:%m[1,1,"^V.*"]') == [["U:"], ["U:VBD"], ["U:_B+1"]]


def test_regex_with_hash_comma_bracket_and_escaped_quote():
    cols = [['a#b', 'x'], ['say "hi",]', 'y']]
    t = Template.parse('U:%t[0,0,"#"]  # a real comment\n'
                       'U:%m[0,0,"\\"[a-z]+\\""]\n'
                       'U:%m[0,0,",\\]"]')
    assert t.patterns == ['U:%t[0,0,"#"]', 'U:%m[0,0,"\\"[a-z]+\\""]', 'U:%m[0,0,",\\]"]']
    assert t.extract(cols)[0] == [["U:true", "U:", "U:"], ["U:false", 'U:"hi"', "U:,]"]]


# ------------------------------------------------------------ kinds, comments
def test_star_gives_both_lists_bigram_only_b():
    t = Template.parse("U00:%x[0,0]\nB01:%x[0,1]\n*02:%x[-1,1]")
    u, b = t.extract(SENT)
    assert u == [["U00:The", "*02:_B-1"], ["U00:Cat2", "*02:DT"], ["U00:sat", "*02:NN"]]
    assert b == [["B01:DT", "*02:_B-1"], ["B01:NN", "*02:DT"], ["B01:VBD", "*02:NN"]]
    assert (t.n_unigram, t.n_bigram, len(t)) == (2, 2, 3)
    assert t.transitions is False


def test_bare_b_is_transitions_only():
    t = Template.parse("U00:%x[0,0]\nB\n")
    assert t.transitions is True
    assert t.extract(SENT)[1] == [[], [], []]
    assert len(t) == 1 and t.patterns == ["U00:%x[0,0]"]
    # lower-case kind letters, and a transitions-only template
    t = Template.parse("b   # transitions\nu0:%x[0,0]")
    assert t.transitions and t.extract(SENT)[0][0] == ["u0:The"]
    t = Template.parse("B")
    assert t.transitions and t.extract(SENT) == ([[], [], []], [[], [], []])
    # a bigram pattern with text but no command is an ordinary observation
    t = Template.parse("B01")
    assert not t.transitions and t.extract(SENT)[1] == [["B01"]] * 3


def test_bare_star_is_transitions_plus_bias():
    t = Template.parse("*")
    assert t.transitions
    assert t.extract(SENT) == ([["*"]] * 3, [[], [], []])


def test_comments_and_empty_lines():
    text = """
# a comment line
   # an indented one

U00:%x[0,0]   # after blanks: a comment
U01:%x[0,0]#not a comment
U02:a # b
"""
    t = Template.parse(text)
    assert t.patterns == ["U00:%x[0,0]", "U01:%x[0,0]#not a comment", "U02:a"]
    assert t.extract(SENT)[0][0] == ["U00:The", "U01:The#not a comment", "U02:a"]


# --------------------------------------------------------------- no padding
def test_pad_false_drops_out_of_sequence_features():
    text = "U0:%x[-1,0]\nU1:%x[0,0]\nU2:%x[0,0]|%x[2,0]\nU3:%x[@-1,1]\nU4:%x[@5,0]\nU5"
    got = uni(text, pad=False)
    assert got == [
        ["U1:The", "U2:The|sat", "U3:VBD", "U5"],
        ["U0:The", "U1:Cat2", "U3:VBD", "U5"],
        ["U0:Cat2", "U1:sat", "U3:VBD", "U5"],
    ]
    # a single-token sentence keeps only what stays inside it
    assert uni(text, columns=[["x", "Y"]], pad=False) == [["U1:x", "U3:Y", "U5"]]
    # bigram lists are filtered the same way
    assert bi("*0:%x[1,0]", pad=False) == [["*0:Cat2"], ["*0:sat"], []]


def test_empty_sequence():
    assert Template.parse("U:%x[0,0]\nB").extract([]) == ([], [])


# ----------------------------------------------------------- column checks
def test_n_columns_required_and_too_few_columns():
    t = Template.parse("U:%x[0,0]\nU:%x[-1,2]\nB")
    assert t.n_columns_required == 3
    with pytest.raises(DataFormatError) as exc:
        t.extract([["a", "b", "c"], ["a", "b"]], source="train.txt", line=10)
    err = exc.value
    assert (err.source, err.line) == ("train.txt", 11)
    assert "column 2" in err.message and "line 2" in err.message
    with pytest.raises(DataFormatError):
        t.check_columns(2)
    t.check_columns(3)
    assert Template.parse("B").n_columns_required == 0


# ---------------------------------------------------------- malformed input
@pytest.mark.parametrize(
    "line, words",
    [
        ("X00:%x[0,0]", "unknown pattern kind"),
        ("U00:%y[0,0]", "unknown command"),
        ("U00:%", "unknown command"),
        ("U00:%x(0,0)", "expected '['"),
        ("U00:%x[0,0", "missing ']'"),
        ("U00:%x[0,0,1]", "takes [row,col]"),
        ("U00:%x[0]", "takes [row,col]"),
        ("U00:%x[a,0]", "not an integer"),
        ("U00:%x[0,1.5]", "not an integer"),
        ("U00:%x[@,0]", "not an integer"),
        ("U00:%x[0,-1]", "negative"),
        ('U00:%t[0,0,"abc]', "unterminated quote"),
        ("U00:%t[0,0]", 'takes [row,col,"regex"]'),
        ('U00:%t[0,0,"a"x]', "unexpected"),
        ('U00:%m[0,0,"a("]', "bad regular expression"),
        ('U00:%x[0,0,"a"]', "takes [row,col]"),
    ],
)
def test_malformed_patterns_name_source_and_line(line, words):
    text = "# header\n\nU0:%x[0,0]\n" + line + "\nB\n"
    with pytest.raises(DataFormatError) as exc:
        Template.parse(text, source="my.tpl")
    err = exc.value
    assert (err.source, err.line) == ("my.tpl", 4)
    assert words in err.message, err.message


def test_empty_template_is_an_error():
    with pytest.raises(DataFormatError) as exc:
        Template.parse("# nothing\n\n", source="t")
    assert "no patterns" in exc.value.message


def test_from_file(tmp_path):
    path = tmp_path / "t.tpl"
    path.write_text("\ufeffU00:%x[0,0]\nB\n", encoding="utf-8")
    t = Template.from_file(path)
    assert t.source == str(path) and t.transitions
    assert t.extract(SENT)[0][0] == ["U00:The"]
    path.write_text("U00:%x[0,0]\nU01:%x[0,0\n")
    with pytest.raises(DataFormatError) as exc:
        Template.from_file(path)
    assert (exc.value.source, exc.value.line) == (str(path), 2)
    path.write_bytes(b"U00:%x[0,0]\nB\nU02:\xff%x[0,0]\n")
    with pytest.raises(DataFormatError) as exc:
        Template.from_file(path)
    assert exc.value.line == 3


# ------------------------------------------------------- crfsuite chunking
def test_crfsuite_chunking_template_matches_the_crfsuite_feature_set():
    t = crfsuite_chunking_template()
    assert t.text == CRFSUITE_CHUNKING_TEMPLATE
    assert (t.n_unigram, t.n_bigram, t.transitions, t.n_columns_required) == (19, 0, True, 2)
    sent = [["He", "PRP"], ["reckons", "VBZ"], ["the", "DT"], ["deficit", "NN"]]
    u, b = t.extract(sent, pad=False)
    assert b == [[], [], [], []]
    # token 1 ("reckons"): offsets -1..+2 exist, -2 does not
    assert u[1] == [
        "U01:w[-1]=He", "U02:w[0]=reckons", "U03:w[1]=the", "U04:w[2]=deficit",
        "U05:w[-1]|w[0]=He|reckons", "U06:w[0]|w[1]=reckons|the",
        "U11:pos[-1]=PRP", "U12:pos[0]=VBZ", "U13:pos[1]=DT", "U14:pos[2]=NN",
        "U16:pos[-1]|pos[0]=PRP|VBZ", "U17:pos[0]|pos[1]=VBZ|DT",
        "U18:pos[1]|pos[2]=DT|NN",
        "U20:pos[-1]|pos[0]|pos[1]=PRP|VBZ|DT",
        "U21:pos[0]|pos[1]|pos[2]=VBZ|DT|NN",
    ]
    # CRFsuite's count per position: all 19 where -2..+2 exist, fewer at the edges
    assert [len(x) for x in u] == [10, 15, 15, 10]
    assert [len(x) for x in t.extract(sent)[0]] == [19] * 4
    assert t.extract(sent)[0][0][0] == "U00:w[-2]=_B-2"


def test_pickle_and_copy_rebuild_from_text():
    import copy
    import pickle

    t = Template.parse('U:%t[0,0,"^[A-Z]"]\n*1:%X[1,0]\nB', source="x.tpl")
    for clone in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert clone == t and clone.source == "x.tpl"
        assert clone.extract(SENT) == t.extract(SENT)


# ---------------------------------------------------------------------------------------
# Wapiti's pattern language
# ---------------------------------------------------------------------------------------

from spargel.data.wapiti_regex import WapitiRegex, WapitiRegexError  # noqa: E402
from spargel.errors import SpargelWarning  # noqa: E402


@pytest.mark.parametrize("regex, s, expected", [
    # classes of the C locale, on bytes; upper case: the complement
    (r"\d", b"a1", (1, 1)), (r"\D", b"12", None), (r"\a", b"1x", (1, 1)), (r"\A", b"x1", (1, 1)),
    (r"\w", b"-_x", (2, 1)), (r"\W", b"ab-", (2, 1)), (r"\l", b"Ab", (1, 1)), (r"\L", b"ab", None),
    (r"\u", b"aB", (1, 1)), (r"\U", b"AB", None), (r"\p", b"ab_", (2, 1)), (r"\P", b".,", None),
    (r"\s", b"a\tb", (1, 1)), (r"\S", b" \t", None),
    (r"\a", "é".encode(), None), (r"\A", "é".encode(), (0, 1)),   # bytes >= 128: no class
    # escapes, '.', '^' and '$' only at the ends
    (r"\.", b"ab.", (2, 1)), (r"\*", b"a*", (1, 1)), (".", b"", None), (".", "é".encode(), (0, 1)),
    ("a^", b"a^", (0, 2)), ("$a", b"$a", (0, 2)), ("^a", b"ba", None), ("a$", b"aba", (2, 1)),
    ("$", b"abc", (3, 0)), ("", b"abc", (0, 0)),
    # '*': as few as possible; '?': the character first
    (r"\d*", b"123", (0, 0)), (r"\d\d*", b"x123", (1, 1)), (r"^\d*$", b"123", (0, 3)),
    ("^.?.?", b"abc", (0, 2)), (".?.?$", b"Hello", (3, 2)),
    # Wapiti's length after a failed optional character counts the failed attempt too
    ("^x?xy", b"xy", (0, 3)),
])
def test_wapiti_regex_semantics(regex, s, expected):
    assert WapitiRegex(regex).match(s) == expected


@pytest.mark.parametrize("regex", ["*a", "a**", "?", "^*", "ab\\"])
def test_wapiti_regex_refuses_what_wapiti_cannot_match(regex):
    with pytest.raises(WapitiRegexError):
        WapitiRegex(regex)


def test_wapiti_regex_time_is_bounded():
    # exponential for a backtracking matcher; (items + 1) x (length + 1) steps here
    r = WapitiRegex("a*" * 20 + "b")
    assert r.match(b"a" * 3000) is None
    assert WapitiRegex("^" + "a?" * 30 + "a" * 30 + "$").test(b"a" * 30)


WAPITI_PATTERNS = """\
# comment
U:a=%x[-1,0]   # trailing comment
u:b=%x[-6,0]/%x[5,0]/%x[-3,0]
*:c=%t[-1,0,"^_x"]/%T[0,0,"^h"]/%t[0,0,"^H"]
U:d=%X[0,0]/%x[@1,0]/%x[@-1,0]/%x[@0,0]/%x[@2,1]
U:e=%m[0,0,"\\d*"]/%m[0,0,"\\d\\d*"]/%M[0,0,"^.?.?"]
U:f=%m[0,0,"^x?xy"]/z
B:h=%x[0,1]
b
"""


def test_wapiti_observations():
    # what Wapiti 1.5 writes into its model for this pattern file and sequence
    t = Template.parse(WAPITI_PATTERNS, format="wapiti")
    uni, bi = t.extract([["Hello", "A"], ["xy", "c"], ["ÉTÉ9", "E"]])
    assert uni[0] == ["u:a=_x-1", "u:b=_x-#/_x+3/_x-3", "*:c=true/false/true",
                      "u:d=hello/Hello/ÉTÉ9/_x-1/c", "u:e=//he", "u:f=/z"]
    assert uni[1] == ["u:a=Hello", "u:b=_x-#/_x+4/_x-2", "*:c=false/false/false",
                      "u:d=xy/Hello/ÉTÉ9/_x-1/c", "u:e=//xy", "u:f=xy"]
    assert uni[2][3:5] == ["u:d=ÉtÉ9/Hello/ÉTÉ9/_x-1/c", "u:e=/9/É"]
    assert bi[1] == ["*:c=false/false/false", "b:h=c"]
    assert t.transitions and t.format == "wapiti"
    # the same lines as a CRF++ template mean something else
    crf = Template.parse('U:c=%T[0,0,"^h"]/%x[@1,0]/%x[-1,0]  #c')
    assert crf.extract([["Hello"], ["x"]])[0][0] == ["U:c=true/x/_B-1"]


def test_wapiti_comment_cuts_inside_quotes():
    with pytest.raises(DataFormatError, match="closing quote"):
        Template.parse('U:g=%t[0,0,"a#b"]', format="wapiti")


def test_pattern_format_selection(tmp_path):
    wapiti_only = 'U:caps=%t[0,0,"\\u"]\n'
    # a '# format:' line, the argument, or a file only Wapiti reads
    marked = Template.parse("# format: wapiti\n" + "U:a=%x[-1,0]\n")
    assert marked.format == "wapiti" and marked.extract([["a"]])[0] == [["u:a=_x-1"]]
    assert Template.parse("U:a=%x[-1,0]\n").format == "crfpp"
    with pytest.warns(SpargelWarning, match="Wapiti"):
        auto = Template.parse(wapiti_only)
    assert auto.format == "wapiti" and auto.extract([["Ab"]])[0] == [["u:caps=true"]]
    # a template read as Wapiti's keeps saying so in its text (what a model file stores)
    assert Template.parse(auto.text).format == "wapiti"
    assert Template.parse("U:a=%x[0,0]", format="wapiti").text.startswith("# format: wapiti\n")
    import pickle
    assert pickle.loads(pickle.dumps(auto)).format == "wapiti"
    # a bad Python regex without Wapiti's classes stays an error
    with pytest.raises(DataFormatError, match="bad regular expression"):
        Template.parse('U:x=%t[0,0,"a("]')
    with pytest.raises(ValueError):
        Template.parse("U:a=%x[0,0]", format="yaml")
