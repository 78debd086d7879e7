# reseller-gateway: one Fastify process run with tsx (no build step). Configure it through the environment
# (README, .env.example); with DATABASE_URL unset it would keep an embedded database in /app/data.
FROM node:20-slim

ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/data

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. tsx is a runtime dependency; dev tools are not
# needed to run the server or the admin CLI.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY . .
# DATA_DIR must be writable by the non-root user (a named volume mounted here inherits this ownership).
RUN mkdir -p /app/data && chown node:node /app/data

USER node
EXPOSE 3000

# /readyz answers 200 when the database answers and the server is not shutting down.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"

# The command of `npm start` (tsx src/main.ts), started without npm in front. npm runs it through `sh -c`, and when we
# checked, a SIGTERM sent to npm (what `docker stop` sends to PID 1) stopped npm and left the server running, to be
# killed without its graceful shutdown. tsx passes SIGTERM on, so the server finishes its in-flight requests.
CMD ["/app/node_modules/.bin/tsx", "src/main.ts"]
