# Herald's image: the CLI with the board built in. One image for `herald server` and
# `herald worker` (see docker-compose.yml). The database comes from DATABASE_URL.
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY . .
# The board, so `herald server` serves it at / without building at start.
RUN npm run build

USER node
EXPOSE 3000
ENV HOST=0.0.0.0 PORT=3000
ENTRYPOINT ["node", "bin/herald.js"]
CMD ["server"]
