# syntax=docker/dockerfile:1
# voiced, CPU build: docker build --build-arg VERSION=$(git describe --always) -t voiced .
# The build stage runs the same scripts CI runs (scripts/install-deps.sh via make setup, then
# make build). No model weights are in the image: mount them at /models (see README "Deploying").
#
# CUDA variant (see README): name a CUDA runtime base and a directory holding the ONNX Runtime GPU
# build (libonnxruntime.so.1 and its libonnxruntime_providers_*.so at the directory's root):
#   docker build -t voiced:cuda \
#     --build-arg RUNTIME_BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 \
#     --build-context ort=./onnxruntime-gpu .
# then run with --gpus all and `serve --device cuda`.

ARG GO_IMAGE=golang:1.26.8-bookworm
ARG RUNTIME_BASE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Dependencies first, so source edits do not redo them.
COPY Makefile go.mod go.sum ./
COPY scripts/ scripts/
RUN make setup
COPY . .
# Declared here, not above: a build argument is in every later RUN's environment, and a new
# VERSION (every commit) would otherwise redo make setup.
ARG VERSION=dev
# The Go build cache outlives the layer (BuildKit and podman): a source edit recompiles only what changed.
RUN --mount=type=cache,target=/root/.cache/go-build \
    make build VERSION=${VERSION} ORT_RUNTIME_LIB=/usr/local/lib/voiced-ort/libonnxruntime.so.1 \
        SILERO_RUNTIME_MODEL=/usr/local/share/voiced/silero_vad.onnx \
 && mkdir -p /out && cp bin/voiced /out/ \
 && cp "$(go list -m -f '{{.Dir}}' github.com/streamer45/silero-vad-go)/testfiles/silero_vad.onnx" /out/

# The ONNX Runtime library: the CPU build make setup fetched, unless --build-context ort=DIR names another.
FROM scratch AS ort
COPY --from=build /src/third_party/onnxruntime/libonnxruntime.so.1 /

FROM ${RUNTIME_BASE}
ARG DEBIAN_FRONTEND=noninteractive
# Runtime libraries only: espeak-ng (Kokoro's G2P), libopus (WebRTC audio, Ogg Opus), libmp3lame
# (mp3 speech), ffmpeg (AAC speech; m4a, webm, flac, Vorbis uploads), the echo canceller and noise
# suppressor (libwebrtc-audio-processing, libspeexdsp: audio/aec).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libespeak-ng1 espeak-ng-data libopus0 libmp3lame0 ffmpeg libwebrtc-audio-processing1 libspeexdsp1 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin voiced \
 && mkdir -p /models /data && chown voiced /data
COPY --from=ort / /usr/local/lib/voiced-ort/
RUN ln -sf libonnxruntime.so.1 /usr/local/lib/voiced-ort/libonnxruntime.so \
 && echo /usr/local/lib/voiced-ort > /etc/ld.so.conf.d/voiced-ort.conf && ldconfig
COPY --from=build /out/voiced /usr/local/bin/voiced
COPY --from=build /out/silero_vad.onnx /usr/local/share/voiced/silero_vad.onnx
USER voiced
WORKDIR /data
VOLUME ["/models", "/data"]
EXPOSE 8200
ENV VOICED_BIND=0.0.0.0:8200 VOICED_SPEECH_ASSETS=/models VOICED_DATA_DIR=/data VOICED_LOG_FORMAT=json
ENTRYPOINT ["voiced"]
CMD ["serve"]
