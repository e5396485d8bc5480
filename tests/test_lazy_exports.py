"""The packages' public names are imported on first use: ``import spargel`` and
``import spargel.gaussian`` load no compiled code, and every listed name resolves."""

import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import spargel
import spargel.gaussian

SRC = Path(__file__).resolve().parents[1] / "src"


def test_import_loads_no_numba():
    code = "import sys, spargel, spargel.gaussian; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)},
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("package", [spargel, spargel.gaussian])
def test_every_public_name_resolves_to_its_module(package):
    assert package.__dir__() == package.__all__
    for name in package.__all__:
        value = getattr(package, name)
        if name == "__version__":
            continue
        if name in getattr(package, "_SUBMODULES", ()):
            assert value is import_module(f"{package.__name__}.{name}")
        else:
            assert value is getattr(import_module(package._LAZY[name]), name)
        assert vars(package)[name] is value            # kept after the first read


@pytest.mark.parametrize("package", [spargel, spargel.gaussian])
def test_unknown_name_is_an_attribute_error(package):
    with pytest.raises(AttributeError, match=f"module '{package.__name__}' has no attribute 'no_such_name'"):
        getattr(package, "no_such_name")
    assert not hasattr(package, "_no_such_private")
