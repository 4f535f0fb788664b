# syntax=docker/dockerfile:1
# The llm-gateway image: two stages, so uv and any build leftovers never reach the runtime image.
#   docker build -t llm-gateway .
#   docker run --rm -e GATEWAY_DATABASE_URL=postgresql+asyncpg://... llm-gateway migrate
#   docker run --rm -p 8000:8000 -e GATEWAY_DATABASE_URL=... llm-gateway
# Pin the base by digest in your registry mirror for reproducible builds.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# The same uv the Makefile bootstraps; installed from PyPI into this stage only.
ARG UV_VERSION=0.13.9
RUN pip install --no-cache-dir "uv==${UV_VERSION}"
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv
WORKDIR /src
# Dependencies first, from the lock only, so code changes reuse this layer.
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --no-install-project
COPY server ./server
COPY admin ./admin
COPY gateway ./gateway
COPY notifications ./notifications
COPY accounts ./accounts
COPY chat_service ./chat_service
COPY guardrails ./guardrails
COPY governance ./governance
COPY tool_servers ./tool_servers
COPY llm_service ./llm_service
COPY mcp_client ./mcp_client
COPY adapters ./adapters
COPY db ./db
COPY migrations ./migrations
# The project itself as a regular (non-editable) install: the runtime stage needs no sources.
RUN uv sync --frozen --no-dev --no-editable

FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 gateway \
    && useradd --system --uid 10001 --gid gateway --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin gateway
# Owned by root and read-only to the gateway user: the process cannot modify its own code.
COPY --from=build /app/.venv /app/.venv
ENV PATH="/app/.venv/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /app
USER 10001:10001
EXPOSE 8000
# `llm-gateway serve` is the default; migrations are a separate command (`... llm-gateway migrate`,
# the Helm chart's pre-install/pre-upgrade Job). Inside a container it must listen on 0.0.0.0.
# It runs one worker process per CPU the container may use (`docker run --cpus`); append
# `--workers N` to choose (docs/deployment.md, Workers).
ENTRYPOINT ["llm-gateway"]
CMD ["serve", "--config", "/etc/llm-gateway/gateway.yaml", "--host", "0.0.0.0", "--port", "8000"]
