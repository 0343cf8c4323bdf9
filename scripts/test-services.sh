#!/usr/bin/env bash
# Starts the PostgreSQL and Redis servers the tests use (Debian packages, loopback only) and prints
# the variables that point the tests at them. Usage: eval "$(scripts/test-services.sh)"
set -euo pipefail
if command -v pg_lsclusters >/dev/null; then
  read -r ver cluster _ < <(pg_lsclusters -h | head -1)
  if [[ -n "${ver:-}" ]]; then
    pg_ctlcluster "$ver" "$cluster" start >/dev/null 2>&1 || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 && break; sleep 0.5; done
    su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='voiced'\"" | grep -q 1 ||
      su postgres -c "psql -qc \"CREATE ROLE voiced LOGIN PASSWORD 'voiced'\"" >&2
    su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname='voiced_test'\"" | grep -q 1 ||
      su postgres -c "createdb -O voiced voiced_test" >&2
    echo "export VOICED_TEST_POSTGRES_DSN='postgres://voiced:voiced@127.0.0.1:5432/voiced_test?sslmode=disable'"
  fi
fi
if command -v redis-server >/dev/null; then
  redis-cli -p 6379 ping >/dev/null 2>&1 || redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes >/dev/null
  for _ in $(seq 1 30); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 0.2; done
  echo "export VOICED_TEST_REDIS_URL='redis://127.0.0.1:6379/0'"
fi
