# The controller image: Node 24 LTS, production dependencies only, non-root, read-only root filesystem.
FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
COPY package.json ./
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "--optimize-for-size", "--max-opt=1", "--no-node-snapshot", "--single-threaded", "dist/src/main.js"]
