#!/usr/bin/env bash
# Install tox into .venv-tox and run every tox environment of tox.ini: lint, Python 3.10 to
# 3.13 on SQLite, PostgreSQL, and the reliability suite on both backends (docs/testing.md).
#
# With no argument the environments run in two lanes side by side (each lane one tox process
# with a work directory of its own); each environment's output goes to a log that is printed
# whole, in order, when its lane is done, then a table of wall times and the total.
# Arguments are passed to one plain tox run instead (e.g. `-e py311`, or `-e pg -- -k lists`).
# --result-json FILE (first argument) writes tox's JSON report of every environment there.
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
  # With the default server (no TESSERA_TEST_POSTGRES_URL given), the tests connect as a role
  # of their own, `tessera_ci` (a superuser, as `postgres` is), whose sessions commit without
  # waiting for the WAL to reach the disk (`synchronous_commit = off`): a commit is as visible,
  # isolated and locked as before, and only a crash of the PostgreSQL server itself, which no
  # test causes, could lose the last ones. Each commit waited about 2 ms for the disk, many
  # more when pg and reliability-pg share it (docs/testing.md, "What it costs"). Other users
  # of the server (benchmarks as `postgres`) keep its settings. When the role cannot be made
  # or cannot log in, the tests use `postgres` as before.
  if [ -z "${TESSERA_TEST_POSTGRES_URL:-}" ]; then
    ci_url="postgresql://tessera_ci@127.0.0.1:5432/$db"
    psql "${PG_URL%/*}/postgres" -qc "CREATE ROLE tessera_ci LOGIN SUPERUSER" >/dev/null 2>&1 || true
    psql "${PG_URL%/*}/postgres" -qc "ALTER ROLE tessera_ci SET synchronous_commit = off" >/dev/null 2>&1 || true
    if [ "$(psql "$ci_url" -Atqc 'SHOW synchronous_commit' 2>/dev/null)" = off ]; then
      export TESSERA_TEST_POSTGRES_URL=$ci_url
    else
      echo "scripts/test.sh: could not use the role tessera_ci (synchronous_commit = off): the PostgreSQL tests connect as postgres" >&2
    fi
  fi
fi

python3 -m venv .venv-tox
# tox-uv: uv makes the environments and installs into them (about 1 s an environment where
# pip took 35 to 40 s; docs/testing.md, "What it costs"); tox.ini seeds pip into each.
.venv-tox/bin/python -m pip install --quiet --upgrade pip 'tox>=4.11' 'tox-uv>=1.11'

result_json=""
if [ "${1:-}" = "--result-json" ]; then
  result_json=$2
  shift 2
fi
if (($#)); then
  exec .venv-tox/bin/tox ${result_json:+--result-json "$result_json"} "$@"
fi

# The lanes: each about half of the work measured on a 2-core machine (docs/testing.md). Every
# environment of tox.ini must be in exactly one lane (checked below). The two reliability
# environments load the machine on purpose: one starts its lane and the other ends the other
# lane, so they never run at the same time. (Lanes running pg and reliability-pg one after
# the other were tried: no faster in total, docs/testing.md.)
LANES=(
  "reliability-pg py312 py310 lint"
  "pg py313 py311 reliability"
)
listed=$(printf '%s\n' "${LANES[@]}" | tr ' ' '\n' | grep . | sort)
declared=$(.venv-tox/bin/tox config -k env_name -e ALL 2>/dev/null | sed -n 's/^env_name = //p' | grep -v '^\.' | sort)
if [ "$listed" != "$declared" ]; then
  echo "scripts/test.sh: the lanes ($(echo $listed)) are not the environments of tox.ini ($(echo $declared))" >&2
  exit 2
fi

logs=$(mktemp -d)
started=$(date +%s)
pids=()
for i in "${!LANES[@]}"; do
  (
    status=0
    for env in ${LANES[$i]}; do
      t0=$(date +%s)
      set +e
      .venv-tox/bin/tox run -e "$env" --workdir ".tox/lane$i" \
        --result-json "$logs/$env.json" >"$logs/$env.log" 2>&1
      rc=$?
      set -e
      echo "$env $rc $(($(date +%s) - t0))" >"$logs/$env.time"
      ((rc == 0)) || status=1
    done
    exit $status
  ) &
  pids+=($!)
done
failed=0
for i in "${!LANES[@]}"; do
  wait "${pids[$i]}" || failed=1
  for env in ${LANES[$i]}; do
    echo "=================================== $env (lane $i) ==================================="
    cat "$logs/$env.log"
  done
done
total=$(($(date +%s) - started))

# The failures once more, just above the table, so that the end of the output (all a CI page
# may keep) says what failed and why: for each failed or erroring test of a failed
# environment, its heading and its first lines of cause (at most 8, each cut at 200
# characters; at most 60 lines in all), then the short summary.
for lane in "${LANES[@]}"; do
  for env in $lane; do
    read -r _ rc _ <"$logs/$env.time"
    [ "$rc" = 0 ] && continue
    echo "----------------------------------- $env failed -----------------------------------"
    awk '/^=+ (FAILURES|ERRORS) =+$/ { on = 1; next }
         /^=+ .* =+$/ { on = 0 }
         !on { next }
         /^_{3,} .* _{3,}$/ { print; shown = 0; next }
         /^(E |[^ ].*:[0-9]+: )/ && shown < 8 { print substr($0, 1, 200); shown++ }' \
      "$logs/$env.log" | head -60 || true
    grep -E '^(FAILED|ERROR) ' "$logs/$env.log" | cut -c1-300 || tail -15 "$logs/$env.log"
  done
done

echo
echo "environment      result  wall time"
for lane in "${LANES[@]}"; do
  for env in $lane; do
    read -r name rc seconds <"$logs/$env.time"
    printf '%-16s %-7s %dm %02ds\n' "$name" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" \
      $((seconds / 60)) $((seconds % 60))
  done
done
printf '%-16s %-7s %dm %02ds\n' "total" "$([ $failed = 0 ] && echo ok || echo FAILED)" \
  $((total / 60)) $((total % 60))

if [ -n "$result_json" ]; then
  python3 - "$result_json" "$logs"/*.json <<'EOF'
import json
import os
import sys

# Each environment's report lists every environment of tox.ini, the ones it did not run
# without a result: take from each report only the environment it ran.
merged = {"testenvs": {}}
for path in sys.argv[2:]:
    env = os.path.basename(path)[: -len(".json")]
    with open(path) as handle:
        entry = json.load(handle).get("testenvs", {}).get(env)
    if entry is not None:
        merged["testenvs"][env] = entry
with open(sys.argv[1], "w") as handle:
    json.dump(merged, handle)
EOF
fi
exit $failed
