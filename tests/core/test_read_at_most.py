"""``core/files.read_at_most``: a file read whole within a bound, in chunks, and the
model file readers that refuse what goes past it."""

import io

import pytest

from spargel.core import files
from spargel.core.files import read_at_most
from spargel.errors import ModelFileError


class Reads(io.BytesIO):
    """A file that remembers the size of every read asked of it."""

    def __init__(self, data):
        super().__init__(data)
        self.asked = []

    def read(self, n=-1):
        self.asked.append(n)
        return super().read(n)


@pytest.mark.parametrize("size, limit", [(0, 0), (0, 5), (5, 5), (6, 5), (30, 5), (17, 16), (16, 16), (40, 16)])
def test_at_most_one_byte_past_the_limit_in_chunks(monkeypatch, size, limit):
    monkeypatch.setattr(files, "READ_CHUNK", 4)
    data = bytes(range(size))
    fh = Reads(data)
    out = read_at_most(fh, limit)
    assert out == data[:limit + 1]
    assert all(0 < n <= 4 for n in fh.asked)           # never one read of the whole bound


def test_from_where_the_file_stands():
    fh = io.BytesIO(b"header:payload")
    fh.seek(7)
    assert read_at_most(fh, 100) == b"payload"


def test_a_foreign_model_file_that_grows_past_its_bound_is_refused(tmp_path, monkeypatch):
    from spargel.chain import foreign_files
    path = tmp_path / "model.txt"
    path.write_bytes(b"x" * 10)
    assert foreign_files.read_limited(path, "Wapiti", 10) == (str(path), b"x" * 10)
    with pytest.raises(ModelFileError, match="larger than any Wapiti model read here"):
        foreign_files.read_limited(path, "Wapiti", 9)
    # a file that grows between its size and its reading
    monkeypatch.setattr(foreign_files.os.path, "getsize", lambda name: 5)
    with pytest.raises(ModelFileError, match="grew past 9 bytes while being read"):
        foreign_files.read_limited(path, "Wapiti", 9)
