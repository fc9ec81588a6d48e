# Multi-stage build: a static pwsd binary on a distroless, non-root base.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The context keeps .git (see .dockerignore) so that Go stamps the commit
# into the binary: GET /version and pwsd_build_info report it.
RUN git config --global --add safe.directory /src && \
	CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/pwsd ./cmd/pwsd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pwsd /usr/local/bin/pwsd
USER nonroot:nonroot
EXPOSE 8080
ENV PWSD_ADDR=:8080
ENTRYPOINT ["/usr/local/bin/pwsd"]
