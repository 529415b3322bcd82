#!/usr/bin/env bash
# Builds the image of ./Containerfile with podman and runs it: the demo on the embedded database in
# the DATA_DIR volume (published port, the README's request, a restart keeping the data), the
# service and the workers alone on PostgreSQL (read-only root, JWT checked, health check, SIGTERM).
# Prints each thing verified; exits non-zero at the first that fails. podman cannot start health
# check timers without systemd: it says so ("unable to get systemd connection"), the check is then
# run once by hand (podman healthcheck run). Run by .ci/run; needs podman
# (Debian's), and PostgreSQL on 127.0.0.1:5432 for the second part. What it shows, and what it does
# not: docs/how-to/deploy.md.
#
# No registry serves base images here: unless CONTAINER_BASE names one, the base is made from
# Debian's packages with debootstrap (once; kept as localhost/debian-minbase:bookworm).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=localhost/process-task-backend:smoke
BASE=${CONTAINER_BASE:-localhost/debian-minbase:bookworm}
PG_URL=${CONTAINER_SMOKE_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/container_smoke}
NAMES=(pt-smoke-demo pt-smoke-api pt-smoke-worker)
VOLUME=pt-smoke-data
verified=()

ok() { verified+=("$1"); echo "ok: $1"; }
fail() { echo "FAILED: $1" >&2; exit 1; }
cleanup() {
  for name in "${NAMES[@]}"; do podman rm -f -v -t 0 "$name" >/dev/null 2>&1 || true; done
  podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# A free TCP port on the loopback interface.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits until URL answers 2xx (up to $2 seconds), else prints the container's log and fails.
wait_http() {
  local url=$1 seconds=$2 name=$3
  for _ in $(seq 1 "$seconds"); do
    if curl -sf -o /dev/null "$url"; then return 0; fi
    if [ "$(podman inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != "true" ]; then break; fi
    sleep 1
  done
  podman logs "$name" 2>&1 | tail -n 30 >&2
  fail "$url did not answer (container $name)"
}

echo "== podman"
command -v podman >/dev/null || fail "podman is not installed (apt-get install podman buildah runc debootstrap)"
podman --version

echo "== base image ($BASE)"
if ! podman image exists "$BASE"; then
  [ -z "${CONTAINER_BASE:-}" ] || fail "CONTAINER_BASE=$BASE is not in podman's store"
  rootfs=$(mktemp -d /var/tmp/debian-minbase.XXXXXX)
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian > "$rootfs.log" 2>&1 || { tail -n 20 "$rootfs.log"; fail "debootstrap"; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import --message "debootstrap --variant=minbase bookworm" - "$BASE" >/dev/null
  rm -rf "$rootfs" "$rootfs.log"
fi
ok "base image $BASE: $(podman image inspect -f '{{.Size}}' "$BASE") bytes"

# The OCI runtime podman chose may not run here: crun refuses a cgroup v1/v2 hybrid, and without
# CAP_SYS_RESOURCE no runtime may raise the open-file and process limits to podman's defaults. Then
# runc with the limits this shell has (open files) or lower (processes) is tried.
RUNTIME=()
probe=$(podman run --rm "$BASE" true 2>&1) || {
  echo "podman's default runtime cannot start a container here: $probe"
  RUNTIME=(--runtime runc --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
  probe=$(podman run --rm "${RUNTIME[@]}" "$BASE" true 2>&1) || fail "no OCI runtime starts a container here: $probe"
}
ok "a container starts (podman run ${RUNTIME[*]:-with its defaults})"

echo "== build"
# The host's CA bundle, for a network whose TLS is inspected by a proxy (as here): a build secret,
# never kept in a layer.
SECRET=()
CA=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
if [ -f "$CA" ]; then SECRET=(--secret "id=ca_certs,src=$CA"); fi
start=$SECONDS
podman build "${RUNTIME[@]}" --format docker --build-arg "BASE=$BASE" "${SECRET[@]}" -t "$IMAGE" -f Containerfile . > /var/tmp/container-smoke-build.log 2>&1 \
  || { tail -n 40 /var/tmp/container-smoke-build.log; fail "podman build (log: /var/tmp/container-smoke-build.log)"; }
ok "podman build --format docker -f Containerfile: $IMAGE in $((SECONDS - start)) s, $(podman image inspect -f '{{.Size}}' "$IMAGE") bytes"

user=$(podman image inspect -f '{{.Config.User}}' "$IMAGE")
[ "$user" = app ] || fail "the image runs as '$user', not app"
health=$(podman image inspect -f '{{.Config.Healthcheck.Test}}' "$IMAGE")
[[ $health == *"/health"* ]] || fail "the image has no HEALTHCHECK on /health: $health"
volumes=$(podman image inspect -f '{{.Config.Volumes}}' "$IMAGE")
[[ $volumes == *"/data"* ]] || fail "DATA_DIR /data is not a volume: $volumes"
version=$(podman run --rm --no-healthcheck "${RUNTIME[@]}" --entrypoint /app/node_modules/node/bin/node "$IMAGE" --version)
[[ $version == v24.* ]] || fail "the image's runtime is $version, not Node 24"
devdeps=$(podman run --rm --no-healthcheck "${RUNTIME[@]}" --entrypoint /bin/sh "$IMAGE" -c 'ls node_modules/typescript node_modules/vite node_modules/mocha 2>/dev/null | wc -l')
[ "$devdeps" = 0 ] || fail "the image holds devDependencies (typescript, vite or mocha)"
ok "image: user app (uid $(podman run --rm --no-healthcheck "${RUNTIME[@]}" --entrypoint /usr/bin/id "$IMAGE" -u)), HEALTHCHECK on /health, VOLUME /data, Node $version, no devDependencies"

echo "== the demo on the embedded database, DATA_DIR in a volume, port published"
port=$(free_port)
podman volume create "$VOLUME" >/dev/null
demo() { podman run -d --name pt-smoke-demo "${RUNTIME[@]}" -p "127.0.0.1:$port:3000" -v "$VOLUME:/data" "$IMAGE" dist/src/demo.js >/dev/null; }
demo
wait_http "http://127.0.0.1:$port/health" 180 pt-smoke-demo
for _ in $(seq 1 60); do podman logs pt-smoke-demo 2>/dev/null | grep -q 'export TOKEN=' && break; sleep 1; done
token=$(podman logs pt-smoke-demo 2>/dev/null | sed -n 's/^ *export TOKEN=//p' | tail -n 1)
[ -n "$token" ] || fail "the demo printed no token"
request() {
  curl -s -X POST "http://127.0.0.1:$port/task-backend/tasks/demo/api/request" -H "Authorization: Bearer $token" -H 'X-TENANT-ID: demo' \
    -H 'Content-Type: application/json' -d '{"apiDefinitionExternalId":"agreement-access-points","queryParameters":{"publicId":"AGR-1001"}}'
}
answer=$(request)
[[ $answer == *'"publicId":"AP-0011"'*'"publicId":"AP-0028"'* ]] || fail "the README's request answered $answer"
ok "demo in the container: /health over the published port 127.0.0.1:$port, the README's request (graph walk and transform process) answered $answer"
status=$(podman inspect -f '{{.State.Health.Status}}' pt-smoke-demo 2>/dev/null || true)
podman healthcheck run pt-smoke-demo >/dev/null || fail "podman healthcheck run: unhealthy"
ok "podman healthcheck run pt-smoke-demo: healthy (state before: ${status:-none})"
podman stop -t 40 pt-smoke-demo >/dev/null
code=$(podman inspect -f '{{.State.ExitCode}}' pt-smoke-demo)
[ "$code" = 0 ] || fail "the demo exited $code on SIGTERM"
podman rm -v pt-smoke-demo >/dev/null
demo
wait_http "http://127.0.0.1:$port/health" 180 pt-smoke-demo
answer=$(request)
[[ $answer == *'"publicId":"AP-0011"'* ]] || fail "after a restart on the same volume, the token or the data are gone: $answer"
ok "podman stop: exit 0; a new container on the same volume keeps the data and the demo's signing secret (the token still answers)"
podman rm -f -v -t 0 pt-smoke-demo >/dev/null

echo "== the service and the workers alone on PostgreSQL, read-only root file system"
db=${PG_URL##*/}
PGOPTIONS=--client-min-messages=warning psql "${PG_URL%/*}/postgres" -qc "drop database if exists $db" -c "create database $db" >/dev/null
secret=$(head -c 48 /dev/urandom | base64 | tr -d '\n')
api_port=$(free_port)
podman run -d --name pt-smoke-api "${RUNTIME[@]}" --network host --read-only --tmpfs /tmp \
  -e PORT="$api_port" -e DATABASE_URL="$PG_URL" -e JWT_SECRET="$secret" "$IMAGE" >/dev/null
wait_http "http://127.0.0.1:$api_port/ready" 120 pt-smoke-api
ready=$(curl -s "http://127.0.0.1:$api_port/ready")
[[ $ready == *'"database":{"status":"up"}'* ]] || fail "/ready answered $ready"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/api-definitions" -H 'X-TENANT-ID: smoke')
[ "$code" = 401 ] || fail "a request without a token answered $code, not 401"
jwt=$(SECRET="$secret" python3 -c '
import base64, hashlib, hmac, json, os, time
b = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
head = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
body = b(json.dumps({"sub": "smoke", "roles": ["admin"], "tenants": ["smoke"], "iat": int(time.time()), "exp": int(time.time()) + 600}).encode())
sig = b(hmac.new(os.environ["SECRET"].encode(), f"{head}.{body}".encode(), hashlib.sha256).digest())
print(f"{head}.{body}.{sig}")')
listed=$(curl -s "http://127.0.0.1:$api_port/api-definitions" -H "Authorization: Bearer $jwt" -H 'X-TENANT-ID: smoke')
[[ $listed == *'"total":0'* ]] || fail "GET /api-definitions with a token answered $listed"
if podman logs pt-smoke-api 2>&1 | grep -qF "$secret"; then fail "the JWT secret is in the log"; fi
ok "service (dist/src/main.js) on PostgreSQL, --read-only: /ready $ready; 401 without a token, 200 with one; the secret not in its log"

worker_port=$(free_port)
podman run -d --name pt-smoke-worker "${RUNTIME[@]}" --network host --read-only --tmpfs /tmp \
  -e PORT="$worker_port" -e DATABASE_URL="$PG_URL" -e CAMUNDA_URL=http://127.0.0.1:9/engine-rest "$IMAGE" dist/src/worker.js >/dev/null
wait_http "http://127.0.0.1:$worker_port/health" 120 pt-smoke-worker
ready=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$worker_port/ready")
[[ $ready == *camunda7*' 503' ]] || fail "the worker's /ready, its engine unreachable, answered $ready"
ok "workers alone (dist/src/worker.js) on PostgreSQL: /health 200; /ready 503 naming camunda7 (no engine listens on its CAMUNDA_URL)"

for name in pt-smoke-api pt-smoke-worker; do
  podman stop -t 40 "$name" >/dev/null
  code=$(podman inspect -f '{{.State.ExitCode}}' "$name")
  [ "$code" = 0 ] || { podman logs "$name" 2>&1 | tail -n 20 >&2; fail "$name exited $code on SIGTERM"; }
  podman logs "$name" 2>&1 | grep -q '"message":"stopped"' || fail "$name did not log its graceful stop"
done
ok "podman stop (SIGTERM): service and workers stopped gracefully, exit 0"
PGOPTIONS=--client-min-messages=warning psql "${PG_URL%/*}/postgres" -qc "drop database if exists $db" >/dev/null

echo "== container smoke: ${#verified[@]} checks verified"
