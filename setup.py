"""The compiled BM25 core (``vaulteval/index/bm25_compiled.pyx``), built where a compiler and Cython are at hand.

Everything else is declared in pyproject.toml. The extension is optional: without a compiler the package
installs as pure Python and ``vaulteval.index.search`` scores with ``bm25_plain`` and numpy instead.
"""

import sys

from setuptools import Extension, setup

# No fused multiply-add: the compiled scores must round exactly as the Python ones do.
FLAGS = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off"]

setup(ext_modules=[Extension("vaulteval.index.bm25_compiled", ["vaulteval/index/bm25_compiled.pyx"],
                             extra_compile_args=FLAGS, optional=True)])
