# study-export as a container image (docs/install.md). Build from a clone:
#   docker build -t study-export .
#   docker run --rm --read-only --tmpfs /tmp -v "$PWD:/work" study-export init
#   docker run --rm --read-only --tmpfs /tmp -v "$PWD:/work" study-export run
#
# Stage 1 makes the package exactly as `npm pack` makes it for anyone else (prepack compiles
# src/ into dist/); stage 2 installs that tarball, with the dependency tree pinned by its
# npm-shrinkwrap.json and no compiler, into a slim Node 20 image.
FROM node:20 AS build
WORKDIR /src
COPY package.json npm-shrinkwrap.json ./
# Scripts off: nothing of the tool exists yet to prepare, and no native add-on is needed.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /pkg && mv /pkg/study-export-*.tgz /pkg/study-export.tgz

FROM node:20-slim
COPY --from=build /pkg/study-export.tgz /tmp/study-export.tgz
RUN npm install --global --omit=dev --no-audit --no-fund /tmp/study-export.tgz \
 && rm /tmp/study-export.tgz \
 && npm cache clean --force
# Not root. The program writes nothing outside the working folder (pipelines/, out/) and
# $TMPDIR, so the root file system can be read-only: mount a writable volume on /tmp.
RUN mkdir /work && chown node:node /work
USER node
ENV TMPDIR=/tmp
WORKDIR /work
# The installed command: its first line re-executes node with the heap settings
# (--max-old-space-size=1024 --initial-old-space-size=64, bin/study-export.js).
ENTRYPOINT ["study-export"]
CMD ["--help"]
