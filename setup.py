"""Build of the compiled scanner of `ragstream eval` (`ragstream.trec._scan`).

All metadata is in pyproject.toml; this file only declares the C extension, which
`pip install .` and `pip install -e .` compile (setuptools puts it next to the sources for
an editable install). It reads a TREC run in one pass instead of numpy's many passes over
the whole file: 5x or more over pytrec_eval instead of 2-3x (docs/benchmarks.md). It is
optional: without a C compiler the install still succeeds and `ragstream eval` uses the
numpy path (same results, slower); the tests check that it was built.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ragstream.trec._scan",
            sources=["ragstream/trec/_scan.c"],
            optional=True,
        ),
        Extension(
            "ragstream.events._scan",
            sources=["ragstream/events/_scan.c"],
            optional=True,
        ),
    ]
)
