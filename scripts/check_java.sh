#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer. Stop at once, saying what to install, if it is missing or older.
set -u
fail() {
  echo "ERROR: $1" >&2
  echo "Install a Java 17+ runtime, e.g. 'sudo apt-get install openjdk-17-jre-headless' (Debian/Ubuntu)" >&2
  echo "or 'brew install openjdk@17' (macOS), and make sure 'java' is on PATH or JAVA_HOME is set." >&2
  exit 1
}
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
command -v "$JAVA" >/dev/null 2>&1 || fail "Java was not found (PySpark 4 needs Java 17 or newer)."
version=$("$JAVA" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
major=${version%%.*}
[ "$major" = "1" ] && major=$(echo "$version" | cut -d. -f2)
case "$major" in
  ''|*[!0-9]*) fail "could not read the Java version from '$JAVA -version'." ;;
esac
[ "$major" -ge 17 ] || fail "Java $version is too old: PySpark 4 needs Java 17 or newer."
