# Multi-stage build of the crawler binary into a small runtime image.
#   docker build --build-arg REVISION="$(git rev-parse HEAD)" -t layercrawl .
#   mkdir -p out && cp examples/seeds.txt out/
#   docker run --rm --user "$(id -u):$(id -g)" -v "$PWD/out:/data" \
#     layercrawl crawl --seeds /data/seeds.txt --out /data/crawl
#
# The image runs as the unprivileged user 10001, which owns /data inside the
# image but cannot write a host directory bind-mounted there (that
# directory belongs to the host user). --user "$(id -u):$(id -g)" runs the
# crawler as the host user, so it can write the mounted directory and the
# files it leaves behind belong to that user. Without a bind mount (a named
# volume, or no volume) the default user works as is.
#
# The build context carries no .git (.dockerignore), so go build cannot
# stamp the commit; REVISION, when given, is linked in instead and
# `docker run --rm layercrawl version` prints it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG REVISION=
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.revision=${REVISION}" -o /out/crawler ./cmd/crawler

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --create-home crawler
COPY --from=build /out/crawler /usr/local/bin/crawler
USER crawler
WORKDIR /data
ENTRYPOINT ["crawler"]
CMD ["help"]
