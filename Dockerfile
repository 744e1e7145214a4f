# ragstream: the streaming evaluation agent, as a small image for a sidecar or a Deployment
# (deploy/kubernetes/, deploy/compose/; docs/deploy.md).
FROM python:3.11-slim AS build
# A C compiler for the C extensions (ragstream/trec/_scan.c for `ragstream eval`,
# ragstream/events/_scan.c for the engine, ragstream/drift/_kernels.c for its drift
# detectors, ragstream/metrics/_ragged.c for `ragstream eval`'s metrics; built by setup.py); only this stage has it, the image below gets the built
# modules. The build fails if one did not compile (setup.py marks them optional, which
# would otherwise leave the slower pure-Python paths).
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY ragstream ./ragstream
# with the otlp extra: topics of OpenTelemetry traces in otlp_proto (docs/opentelemetry.md).
# Every Kafka codec comes with the core dependencies (aiokafka's lz4, snappy and zstd
# extras, pyproject.toml); the build fails if aiokafka cannot read one of them, since a
# compressed batch it cannot read would stop its partition.
RUN pip install --no-cache-dir --prefix=/install ".[otlp]" \
    && PYTHONPATH=/install/lib/python3.11/site-packages \
       python -c "import ragstream.trec._scan, ragstream.events._scan, ragstream.drift._kernels, ragstream.metrics._ragged" \
    && PYTHONPATH=/install/lib/python3.11/site-packages \
       python -c "from aiokafka import codec; assert codec.has_gzip() and codec.has_snappy() and codec.has_lz4() and codec.has_zstd()"

FROM python:3.11-slim
COPY --from=build /install /usr/local
# A numeric user, so that Kubernetes' runAsNonRoot can verify it; the manifests run as the
# same uid and gid. Nothing is written to the image's filesystem: it runs with a read-only
# root (no bytecode written, state kept in memory and in Kafka).
RUN groupadd --system --gid 10001 ragstream \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin ragstream
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
EXPOSE 9464
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2)"
ENTRYPOINT ["ragstream"]
CMD ["run"]
