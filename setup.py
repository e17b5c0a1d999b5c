"""The optional C extensions; everything else is in pyproject.toml.

`zarrkit.kvstore._fileio` batches the file store's small reads and writes without the GIL
(Linux only); `zarrkit.codecs._many` decodes runs of blosc or zstd chunks (a shard's inner
chunks) without the GIL. Both are optional: where they cannot be compiled, the same work is
done in Python, only slower with many small chunks.
"""

import sys

from setuptools import Extension, setup

extensions = [Extension("zarrkit.codecs._many", ["src/zarrkit/codecs/_many.c"], optional=True)]
if sys.platform.startswith("linux"):
    extensions.append(Extension("zarrkit.kvstore._fileio", ["src/zarrkit/kvstore/_fileio.c"],
                                optional=True))  # no compiler: a warning, and no extension

setup(ext_modules=extensions)
