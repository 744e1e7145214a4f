# ragstream: the streaming evaluation agent, as a small image for a sidecar or a Deployment.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY ragstream ./ragstream
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
RUN useradd --system --uid 10001 ragstream
USER ragstream
EXPOSE 9464
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2)"
ENTRYPOINT ["ragstream"]
CMD ["run"]
