#!/usr/bin/env bash
# Install tox into .venv-tox and run every tox environment: lint, Python 3.10 to 3.13 on
# SQLite, and the PostgreSQL backend. Extra arguments go to tox (e.g. -e py311).
set -euo pipefail
cd "$(dirname "$0")/.."

# Let tox find every installed Python 3.10-3.13 (pyenv puts only the default on PATH).
if command -v pyenv >/dev/null 2>&1; then
  d=$(pyenv version-name)
  others=$(pyenv versions --bare | grep -E '^3\.1[0-3]\.[0-9]+$' | grep -vx "$d" | paste -sd: - || true)
  export PYENV_VERSION="$d${others:+:$others}"
  # tox's interpreter discovery queries the shims without PYENV_VERSION: put the real
  # interpreters on PATH as well.
  for v in $(pyenv versions --bare | grep -E '^3\.1[0-3]\.[0-9]+$'); do
    PATH="$(pyenv root)/versions/$v/bin:$PATH"
  done
  export PATH
fi

# What the environments need, said in one line each instead of failing later.
missing=()
for v in 3.10 3.11 3.12 3.13; do
  command -v "python$v" >/dev/null 2>&1 || missing+=("python$v")
done
if ((${#missing[@]})); then
  echo "scripts/test.sh: missing interpreter(s) ${missing[*]} (their tox environments fail); install them (e.g. pyenv install 3.10) or pick environments with -e" >&2
fi

# The PostgreSQL environments need the local server (127.0.0.1:5432, user postgres, trust
# authentication) and its `test` database.
PG_URL=${TESSERA_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
fi
if ! command -v psql >/dev/null 2>&1; then
  echo "scripts/test.sh: psql/pg_isready not found: install PostgreSQL (client and server) for the pg and reliability-pg environments" >&2
elif ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "scripts/test.sh: no PostgreSQL server on 127.0.0.1:5432: start one (user postgres, trust auth on loopback) for the pg and reliability-pg environments" >&2
else
  db=${PG_URL##*/}
  if ! psql "${PG_URL%/*}/postgres" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
    psql "${PG_URL%/*}/postgres" -qc "CREATE DATABASE \"$db\"" \
      || echo "scripts/test.sh: could not create the PostgreSQL database '$db' (needs a role with CREATEDB; see README 'Running the tests')" >&2
  fi
fi

python3 -m venv .venv-tox
.venv-tox/bin/python -m pip install --quiet --upgrade pip 'tox>=4.11'
exec .venv-tox/bin/tox "$@"
