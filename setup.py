"""The optional C extension; everything else is in pyproject.toml.

`zarrkit.kvstore._fileio` batches the file store's small reads and writes without the GIL
(Linux only). It is optional: where it cannot be compiled, the file store does the same work
in Python, only slower with many small chunks.
"""

import sys

from setuptools import Extension, setup

extensions = []
if sys.platform.startswith("linux"):
    extensions.append(Extension("zarrkit.kvstore._fileio", ["src/zarrkit/kvstore/_fileio.c"],
                                optional=True))  # no compiler: a warning, and no extension

setup(ext_modules=extensions)
