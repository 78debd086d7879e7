# reseller-gateway: one Fastify process, run as compiled JavaScript (`node dist/main.js`, no TypeScript loader).
# Configure it through the environment (docs/configuration.md, .env.example); with DATABASE_URL unset it would keep an embedded
# database in /app/data. Build, prune and run are described in docs/operations.md, "Production build".
FROM node:20-slim

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. The build needs the dev dependencies
# (TypeScript), so they are installed here and pruned after the build. --include=dev keeps them should
# NODE_ENV=production be set before this line (it is set below, for run time: npm omits dev dependencies under it);
# --ignore-scripts because the package's `prepare` builds dist/ and the sources are not copied yet (esbuild's install
# check is the only dependency script skipped; esbuild serves dev tools only, tsx among them, all pruned below).
COPY package.json package-lock.json ./
RUN npm ci --include=dev --ignore-scripts --no-audit --no-fund

COPY . .
# A full build of dist/ (.dockerignore keeps the host's dist/ out), then the dev dependencies go: what runs is node,
# dist/ and the runtime dependencies.
# DATA_DIR must be writable by the non-root user (a named volume mounted here inherits this ownership), and so must
# the embedded database's snapshot cache (src/db/embedded.ts), which makes every first start after the first fast.
RUN npm run build \
  && npm prune --omit=dev --no-audit --no-fund \
  && npm cache clean --force \
  && mkdir -p /app/data /app/node_modules/.cache/reseller-gateway \
  && chown node:node /app/data /app/node_modules/.cache/reseller-gateway

ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/data

USER node
EXPOSE 3000

# /readyz answers 200 when the database answers and the server is not shutting down. Docker only marks the container
# unhealthy (compose's proxy waits for healthy before it starts); it does not restart it. Under an orchestrator that
# replaces unhealthy containers (Swarm), point the check at /healthz instead: a database outage is not fixed by a
# restart (docs/operations.md, "Health endpoints").
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"

# The server itself, started without npm in front: npm runs a script through `sh -c`, and when we checked, a SIGTERM
# sent to npm (what `docker stop` sends to PID 1) stopped npm and left the server running, to be killed without its
# graceful shutdown. node receives SIGTERM directly and finishes its in-flight requests (compose adds `init: true`, so
# a real init is PID 1 and forwards it). `npm start` would also check the build first, which the image has done.
CMD ["node", "dist/main.js"]
