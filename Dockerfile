# ragstream: the streaming evaluation agent, as a small image for a sidecar or a Deployment.
FROM python:3.11-slim AS build
# A C compiler for the compiled scanner of `ragstream eval` (ragstream/trec/_scan.c, built
# by setup.py); only this stage has it, the image below gets the built module.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY ragstream ./ragstream
RUN pip install --no-cache-dir --prefix=/install . \
    && PYTHONPATH=/install/lib/python3.11/site-packages python -c "import ragstream.trec._scan"

FROM python:3.11-slim
COPY --from=build /install /usr/local
RUN useradd --system --uid 10001 ragstream
USER ragstream
EXPOSE 9464
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2)"
ENTRYPOINT ["ragstream"]
CMD ["run"]
