FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY indexing indexing
COPY service service
COPY migrations migrations
COPY data data
# torch is pinned and installed first; pass TORCH_PIP_ARGS (e.g. an --index-url of CPU wheels) to keep the
# image small, since the default Linux wheel carries CUDA libraries
ARG TORCH_PIP_ARGS=""
# EXTRA_PIP: more requirements, e.g. "qdrant-client==1.20.0" for the Qdrant backend (docker-compose.yml sets it)
ARG EXTRA_PIP=""
RUN pip install --no-cache-dir $TORCH_PIP_ARGS "torch==2.13.0" && pip install --no-cache-dir -e . $EXTRA_PIP
ENV HINDSIGHT_HOME=/state
# the backend self-check's verdicts (keyed by CPU flags and library versions) kept in the volume, so that a new
# container on the same kind of machine does not probe again (docs/cpu-checks.md)
ENV HINDSIGHT_BACKEND_CHECK_DIR=/state/backend-checks
EXPOSE 8000
CMD ["hindsight", "serve", "--host", "0.0.0.0", "--port", "8000"]
