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

# The PostgreSQL environment needs the local server.
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
fi

python3 -m venv .venv-tox
.venv-tox/bin/python -m pip install --quiet --upgrade pip 'tox>=4.11'
exec .venv-tox/bin/tox "$@"
