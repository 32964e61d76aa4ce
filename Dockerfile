# Control-plane image (scheduler, webhook, autoscaler): the tessera binary, pure Go and
# static (cgo off), on distroless, running as the distroless nonroot user (65532).
# `make images REGISTRY=...` builds it (hack/images.sh), or
#   docker build -t $REGISTRY/tessera:$(git describe --tags --always) .
# The node agent is its own binary, built with cgo for NVML: see Dockerfile.node-agent.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/tessera-gpu/tessera/internal/version.Version=${VERSION}" \
      -o /out/tessera ./cmd/tessera

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tessera /usr/local/bin/tessera
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tessera"]
