#!/usr/bin/env bash
# Normalization's PostgreSQL target and its tests need the PostgreSQL server binaries
# (initdb, pg_ctl, postgres, psql: the tests start a throwaway server) and the PostgreSQL
# JDBC driver jar (Spark writes through it). Install Debian's `postgresql` and
# `libpostgresql-jdbc-java` with apt where missing; otherwise say which ones are used.
set -euo pipefail

JAR=/usr/share/java/postgresql.jar

server_bin() {
  if [ -n "${POSTGRES_BIN:-}" ] && [ -x "$POSTGRES_BIN/initdb" ]; then
    echo "$POSTGRES_BIN"
    return
  fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | while read -r dir; do
    [ -x "$dir/initdb" ] && echo "$dir"
  done | tail -n 1
}

jdbc_jar() {
  if [ -n "${FRAMEWORK_JDBC_JARS:-}" ]; then
    echo "$FRAMEWORK_JDBC_JARS"
  elif [ -f "$JAR" ]; then
    echo "$JAR"
  fi
}

missing=()
[ -n "$(server_bin)" ] || missing+=(postgresql)
[ -n "$(jdbc_jar)" ] || missing+=(libpostgresql-jdbc-java)

if [ "${#missing[@]}" -gt 0 ]; then
  echo "postgres: installing ${missing[*]} with apt" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

bin="$(server_bin)"
if [ -z "$bin" ]; then
  echo "postgres: server binaries still not found under /usr/lib/postgresql/*/bin: set POSTGRES_BIN" >&2
  exit 1
fi
echo "postgres: $("$bin/postgres" --version) ($bin); jdbc driver: $(jdbc_jar)"
