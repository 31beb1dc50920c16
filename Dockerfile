# syntax=docker/dockerfile:1
# claimbridge's container image, for building with Docker, Podman or Buildah:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(make -s version) --build-arg COMMIT=$(git rev-parse HEAD) \
#     -t ghcr.io/claimbridge/claimbridge:$(make -s version) .
#
# `make image` builds the same image without a container engine (e2e/image): the same binary
# path, user, entrypoint and labels, on an equivalent distroless-style base. The image test
# (e2e/image) checks that this file and that build agree.

ARG GO_VERSION=1.26.8

# Build stage: a static binary (no cgo), stamped with the version and commit.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -mod=readonly \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/claimbridge ./cmd/claimbridge

# Runtime stage: distroless static (no shell, no package manager), as the nonroot user. Every
# path claimbridge writes is a mounted volume, so the root filesystem can be read-only.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="claimbridge" \
      org.opencontainers.image.description="Mutating admission webhook that moves GPU, TPU and NIC pods onto Kubernetes DRA" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.source="https://github.com/claimbridge/claimbridge" \
      org.opencontainers.image.url="https://github.com/claimbridge/claimbridge"
COPY --from=build --chmod=0555 /out/claimbridge /usr/local/bin/claimbridge
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/usr/local/bin/claimbridge"]
