"""Build of the C extensions: `ragstream eval`'s TREC reader (`ragstream.trec._trec_reader`),
the streaming engine's event scanner (`ragstream.events._event_scanner`), the drift
detectors' loops (`ragstream.drift._kernels`), and the metric kernels over CSR rankings
(`ragstream.metrics._ragged`).

All metadata is in pyproject.toml; this file only declares the C extensions, which
`pip install .` and `pip install -e .` compile (setuptools puts them next to the sources for
an editable install). The first reads a TREC run in one pass instead of numpy's many passes
over the whole file: 5x or more over pytrec_eval instead of 2-3x. The second reads retrieval
events without a Python object per document (docs/events.md): one process of the pipeline
went from about 16 000 to 22 000-25 000 events/s (docs/benchmarks.md). The third runs
ADWIN's and Page-Hinkley's per-value loops, the same operations as their Python code (the
same bits), a tenth of the engine's time otherwise (docs/drift.md). The fourth computes
`ragstream eval`'s metrics where each query lies in the joined CSR arrays, the same
operations as the numpy kernels (the same bits), instead of padding them into matrices
first (docs/eval.md); the first calls it through `ragstream/metrics/_ragged.h` to evaluate
each query as soon as it has joined it. All are optional: without a C compiler the install
still succeeds, `ragstream eval` uses the numpy path and kernels, the engine msgspec and
the detectors their Python code (same results, slower); the tests check that they were
built.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ragstream.trec._trec_reader",
            sources=["ragstream/trec/_trec_reader.c"],
            depends=["ragstream/metrics/_ragged.h"],  # it calls the metric kernels
            optional=True,
        ),
        Extension(
            "ragstream.events._event_scanner",
            sources=["ragstream/events/_event_scanner.c"],
            optional=True,
        ),
        Extension(
            "ragstream.drift._kernels",
            sources=["ragstream/drift/_kernels.c"],
            optional=True,
        ),
        Extension(
            "ragstream.metrics._ragged",
            sources=["ragstream/metrics/_ragged.c"],
            depends=["ragstream/metrics/_ragged.h"],
            optional=True,
        ),
    ]
)
