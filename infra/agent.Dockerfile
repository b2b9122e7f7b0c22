# The Kafka agent's image, for infra/agents.yaml (ECS Fargate, arm64). From the checkout's root:
#   docker build --platform linux/arm64 -f infra/agent.Dockerfile -t tidelog-agent .
FROM public.ecr.aws/docker/library/python:3.12-slim-bookworm

RUN useradd --system --uid 10001 --home-dir /home/tidelog --create-home tidelog
WORKDIR /src
COPY pyproject.toml README.md ./
COPY core ./core
COPY infra ./infra
COPY functions ./functions
RUN pip install --no-cache-dir ".[kafka]" && rm -rf /src

USER tidelog
WORKDIR /home/tidelog
EXPOSE 9092
# tidelog agent stops on SIGTERM: it leaves the registry and closes its connections.
STOPSIGNAL SIGTERM
CMD ["tidelog", "agent", "--host", "0.0.0.0", "--kafka-port", "9092"]
