# Magpie — small image for an always-on box (amd64 or arm64).
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 builds from source where no prebuilt binary fits.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY channels ./channels
COPY scripts ./scripts
# `npm ci` builds dist/ (type-checked output and the esbuild bundle) through the prepare script.
RUN npm ci --no-fund --no-audit && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# bubblewrap sandboxes shell, git and command jobs (the container needs user namespaces; see README → Sandbox).
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates bubblewrap && rm -rf /var/lib/apt/lists/*
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config/magpie.example.yaml ./config/magpie.example.yaml
RUN ln -s /app/dist/bundle/main.js /usr/local/bin/magpie && chmod +x /app/dist/bundle/main.js \
  && mkdir -p /app/data && chown -R node:node /app/data
USER node
VOLUME ["/app/data"]
EXPOSE 8787
# Liveness, not readiness: "unhealthy" is what a restart is for (an orchestrator or autoheal acts on it), and a
# restart fixes a wedged process, not a chat platform being down — /readyz is 503 while a channel reconnects,
# /healthz only while the event loop is stuck past http.maxEventLoopBlockMs. A probe sent during the stall hangs
# until --timeout and counts as a failure too; three in a row (--retries) mark the container unhealthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD node -e "fetch('http://127.0.0.1:8787/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
CMD ["node", "dist/bundle/main.js", "start"]
