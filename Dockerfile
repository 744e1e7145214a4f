# ragstream: the streaming evaluation agent, as a small image for a sidecar or a Deployment
# (deploy/kubernetes/, deploy/compose/; docs/deploy.md).
#
# Debian 12's slim image at an exact point release, with Debian's own Python 3.11 from the
# archive: the test suite rebuilds this base from Debian's archive with mmdebstrap and builds
# this file on it (tests/deploy/test_image.py), so the image it tests is the image shipped.
FROM docker.io/library/debian:12.15-slim AS build
# A C compiler and Python's headers for the C extensions (ragstream/trec/_trec_reader.c for
# `ragstream eval`, ragstream/events/_event_scanner.c for the engine,
# ragstream/drift/_kernels.c for its drift detectors, ragstream/metrics/_ragged.c for
# `ragstream eval`'s metrics; built by setup.py); only this stage has them, the image below
# gets the virtual environment.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       ca-certificates gcc libc6-dev python3 python3-dev python3-venv \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/ragstream
WORKDIR /src
# A certificate bundle of the site's own for pip (a build behind a TLS-inspecting proxy
# mounts it for the build: `--volume`, `--build-arg PIP_CERT=...`; docs/deploy.md); unset,
# pip trusts its own bundle. Nothing of it is written to a layer.
ARG PIP_CERT
# The dependencies first (the core's and the otlp extra's, read from pyproject.toml): a
# layer that is built again only when pyproject.toml changes.
COPY pyproject.toml ./
RUN /opt/ragstream/bin/python -P -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['otlp']))" >/tmp/requirements.txt \
    && /opt/ragstream/bin/pip install --no-cache-dir -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt
COPY setup.py README.md ./
COPY ragstream ./ragstream
# With the otlp extra: topics of OpenTelemetry traces in otlp_proto (docs/opentelemetry.md).
# Every Kafka codec comes with the core dependencies (aiokafka's lz4, snappy and zstd
# extras, pyproject.toml). The checks run with `python -P` (the working directory, /src
# with the uncompiled sources, not on sys.path) against the installed package: the build
# fails if a C extension did not compile (setup.py marks them optional, which would
# otherwise leave the slower pure-Python paths), or if aiokafka cannot read a codec (a
# compressed batch it cannot read would stop its partition).
RUN /opt/ragstream/bin/pip install --no-cache-dir ".[otlp]" \
    && /opt/ragstream/bin/python -P -c "import ragstream.trec._trec_reader, ragstream.events._event_scanner, ragstream.drift._kernels, ragstream.metrics._ragged" \
    && /opt/ragstream/bin/python -P -c "from aiokafka import codec; assert codec.has_gzip() and codec.has_snappy() and codec.has_lz4() and codec.has_zstd()"

FROM docker.io/library/debian:12.15-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/ragstream /opt/ragstream
# A numeric user, so that Kubernetes' runAsNonRoot can verify it; the manifests run as the
# same uid and gid. Nothing is written to the image's filesystem: it runs with a read-only
# root (no bytecode written, state kept in memory and in Kafka).
RUN groupadd --system --gid 10001 ragstream \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin ragstream
# RAGSTREAM_HTTP__HOST: `run` and `demo` serve on every address of the container (the demo
# binds 127.0.0.1 outside a container), so a published port reaches them.
ENV PATH=/opt/ragstream/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    RAGSTREAM_HTTP__HOST=0.0.0.0
USER 10001:10001
EXPOSE 9464
# The port the agent serves on: RAGSTREAM_HTTP__PORT when set (`run` and `demo` read it),
# else the default 9464.
HEALTHCHECK CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('RAGSTREAM_HTTP__PORT', '9464'), timeout=2)"]
ENTRYPOINT ["ragstream"]
CMD ["run"]
