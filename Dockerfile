# crier's container image: the bot as a non-root user, its data in the /data volume.
#
#   docker build -t crier .
#   docker run -d --name crier -v crier-data:/data -e DISCORD_TOKEN=... crier
#
# compose.yaml runs it with PostgreSQL. BASE_IMAGE is any Debian bookworm with Python 3.11+
# and its venv module (the same one for both stages). Two optional build secrets, never
# kept in a layer, for networks that need them:
#   --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt   a CA bundle (TLS re-signed)
#   --secret id=pip,src=/etc/pip.conf                       a pip configuration (a mirror)
ARG BASE_IMAGE=python:3.11-slim-bookworm

# --- build: the wheel, and a virtualenv with it and its dependencies ---------------------------
FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/crier
WORKDIR /src
COPY pyproject.toml README.md ./
COPY migrations ./migrations
COPY scheduler ./scheduler
COPY bot ./bot
RUN --mount=type=secret,id=ca --mount=type=secret,id=pip \
    --mount=type=cache,target=/root/.cache/pip \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi; \
    if [ -s /run/secrets/pip ]; then export PIP_CONFIG_FILE=/run/secrets/pip; fi; \
    /opt/crier/bin/pip wheel --no-deps --wheel-dir /wheels . \
    && /opt/crier/bin/pip install "$(echo /wheels/crier-*.whl)[postgres,metrics]" \
    && /opt/crier/bin/pip uninstall --yes pip setuptools

# --- run: the base, the virtualenv, a user ---------------------------------------------------
FROM ${BASE_IMAGE}
RUN groupadd --system --gid 10001 crier \
    && useradd --system --uid 10001 --gid crier --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin crier \
    && mkdir /data && chown crier:crier /data
COPY --from=build /opt/crier /opt/crier
# DATABASE_URL: the SQLite file in the volume (compose.yaml sets PostgreSQL's instead).
# HTTP_ADDRESS: /healthz (the health check below) and /metrics, and the dashboard when
# DISCORD_CLIENT_SECRET is set, on the container's own interfaces: nothing is reachable from
# outside unless a port is published (with --network host, set 127.0.0.1:PORT instead).
ENV PATH=/opt/crier/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DATABASE_URL=sqlite:////data/crier.db \
    HTTP_ADDRESS=0.0.0.0:8080
VOLUME /data
WORKDIR /data
USER crier
EXPOSE 8080
# SIGTERM (docker stop): the bot hands its shards over and exits 0; give it 30 s
# (docker stop -t 30, compose.yaml's stop_grace_period).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=15s --start-period=60s --retries=3 CMD ["crier", "health"]
ENTRYPOINT ["crier"]
CMD ["run"]
