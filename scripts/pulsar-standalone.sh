#!/usr/bin/env bash
# A real Apache Pulsar standalone (4.0.7, jars from Maven Central), for the cluster tests
# and benchmarks:  scripts/pulsar-standalone.sh [--dir DIR] [--address IP] \
#                      fetch|start|stop|status|url|admin-url|log
# `start` prints the service URL; `url` and `admin-url` print them again later (exit 3
# when not running). Needs Java 17+, Maven, Python 3. See scripts/pulsar-standalone/.
set -euo pipefail
exec python3 "$(dirname "$0")/pulsar-standalone/standalone.py" "$@"
