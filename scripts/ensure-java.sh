#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer. Install Debian's OpenJDK 17 with apt where no
# suitable `java` is on the PATH; otherwise say which one is used.
set -euo pipefail

java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then
  echo "java: $(java -version 2>&1 | head -n 1)"
  exit 0
fi

echo "java 17 not found: installing openjdk-17-jre-headless with apt" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
echo "java: $(java -version 2>&1 | head -n 1)"
