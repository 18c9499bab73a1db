# Dockerfile — anytime on Debian 12: install the build dependencies with the
# project's own script, build, and run `anytime serve`. Compiled artifacts
# (optimised ORT graphs) live in a volume so that a restarted container starts
# from them instead of re-optimising; see docs/deployment.md.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive \
    ANYTIME_ORT_CACHE=/opt/anytime/ort \
    ANYTIME_CACHE_DIR=/var/cache/anytime \
    HF_HOME=/var/cache/huggingface

WORKDIR /src/anytime
COPY . .
# install-deps.sh uses apt-get (Debian packages), npm (the pinned ONNX Runtime
# SDK, sha256-checked) and needs nothing else from the network.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates \
    && scripts/install-deps.sh build \
    && cmake -S . -B build -DAT_BUILD_TESTS=OFF -DAT_BUILD_BENCH=OFF \
    && make -C build -j"$(nproc)" \
    && install -m 0755 build/anytime /usr/local/bin/anytime \
    && rm -rf /var/lib/apt/lists/*

# The artifact cache (and, if you mount one, the Hugging Face cache).
VOLUME ["/var/cache/anytime"]
EXPOSE 8080
ENTRYPOINT ["anytime"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
