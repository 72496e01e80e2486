# Multi-stage build of the crawler binary into a small runtime image.
#   docker build -t layercrawl .
#   docker run --rm -v "$PWD/out:/data" layercrawl crawl --seeds /data/seeds.txt --out /data/crawl
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/crawler ./cmd/crawler

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
