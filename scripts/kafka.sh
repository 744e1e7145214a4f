#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft, combined broker+controller) from Maven Central
# jars, for tests and for trying ragstream by hand. Needs Java 17+ and Maven.
#
#   scripts/kafka.sh fetch                 resolve and cache the broker's jars; prints the libs dir
#   scripts/kafka.sh start [options]       format storage (once) and run the broker
#       --port N             client port (default 9092); the controller listens on N+1
#       --controller-port N  controller port (default: --port + 1)
#       --dir D              broker directory: config, data, logs (default $TMPDIR/ragstream-kafka)
#       --background         start in the background, write D/broker.pid and return once
#                            the broker accepts connections (default: foreground, Ctrl-C stops)
#       --heap SIZE          JVM maximum heap (default 512m)
#   scripts/kafka.sh stop [--dir D]        stop a background broker started with --background
#
# Environment:
#   RAGSTREAM_KAFKA_VERSION  Kafka version (default: kafka.version in deploy/kafka/pom.xml)
#   RAGSTREAM_KAFKA_LIBS     use this directory of jars instead of the cache (fetch is skipped)
#   XDG_CACHE_HOME           cache root (default ~/.cache); jars go to
#                            $XDG_CACHE_HOME/ragstream/kafka/<version>/libs
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
pom="$root/deploy/kafka/pom.xml"

die() { echo "kafka.sh: $*" >&2; exit 1; }

kafka_version() {
  if [ -n "${RAGSTREAM_KAFKA_VERSION:-}" ]; then
    echo "$RAGSTREAM_KAFKA_VERSION"
  else
    sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -n 1
  fi
}

libs_dir() {
  if [ -n "${RAGSTREAM_KAFKA_LIBS:-}" ]; then
    echo "$RAGSTREAM_KAFKA_LIBS"
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/ragstream/kafka/$(kafka_version)/libs"
  fi
}

# Resolves the jars into a scratch dir next to the cache and renames it into place, so a
# cache dir that exists is always complete (an interrupted fetch leaves nothing behind).
cmd_fetch() {
  local version libs tmp
  version="$(kafka_version)"
  libs="$(libs_dir)"
  if [ -f "$libs/kafka_2.13-$version.jar" ]; then
    echo "$libs"
    return
  fi
  [ -n "${RAGSTREAM_KAFKA_LIBS:-}" ] && die "RAGSTREAM_KAFKA_LIBS=$libs has no kafka_2.13-$version.jar"
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch the broker's jars)"
  mkdir -p "$(dirname "$libs")"
  tmp="$(mktemp -d "$(dirname "$libs")/libs.tmp.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  echo "kafka.sh: fetching Apache Kafka $version jars into $libs" >&2
  if ! mvn -B -f "$pom" dependency:copy-dependencies -Dkafka.version="$version" \
      -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
    tail -n 40 "$tmp/mvn.log" >&2
    die "mvn could not resolve org.apache.kafka:kafka_2.13:$version"
  fi
  rm "$tmp/mvn.log"
  mv "$tmp/libs"/* "$tmp/" && rmdir "$tmp/libs"
  [ -f "$tmp/kafka_2.13-$version.jar" ] || die "mvn finished without kafka_2.13-$version.jar"
  if ! mv -T "$tmp" "$libs" 2>/dev/null; then
    # Another fetch won the race; its complete copy is as good as ours.
    [ -f "$libs/kafka_2.13-$version.jar" ] || die "could not move the jars into $libs"
    rm -rf "$tmp"
  fi
  trap - EXIT
  echo "$libs"
}

# Writes D/server.properties and D/log4j2.properties; the broker logs to D/broker.log.
write_config() {
  local dir="$1" port="$2" cport="$3"
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
auto.create.topics.enable=false
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
  cat >"$dir/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/broker.log
appender.file.append = false
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.raft.name = org.apache.kafka.raft
logger.raft.level = WARN
EOF
}

# A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting with '-'.
new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [ "${id:0:1}" != "-" ] && { echo "$id"; return; }
  done
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cmd_start() {
  local port=9092 cport="" dir="${TMPDIR:-/tmp}/ragstream-kafka" background=0 heap=512m
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) port="$2"; shift 2 ;;
      --controller-port) cport="$2"; shift 2 ;;
      --dir) dir="$2"; shift 2 ;;
      --background) background=1; shift ;;
      --heap) heap="$2"; shift 2 ;;
      *) die "unknown option for start: $1" ;;
    esac
  done
  cport="${cport:-$((port + 1))}"
  command -v java >/dev/null || die "java not found (Kafka 4 needs Java 17+)"
  port_open "$port" && die "127.0.0.1:$port is already in use"
  local libs
  libs="$(cmd_fetch)"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  write_config "$dir" "$port" "$cport"
  local java=(java "-Xmx$heap" -Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Djava.awt.headless=true "-Dlog4j2.configurationFile=$dir/log4j2.properties"
    -cp "$libs/*")
  if [ ! -f "$dir/data/meta.properties" ]; then
    "${java[@]}" kafka.tools.StorageTool format -t "$(new_cluster_id)" \
      -c "$dir/server.properties" >"$dir/format.log" 2>&1 \
      || { cat "$dir/format.log" >&2; die "storage format failed"; }
  fi
  if [ "$background" = 0 ]; then
    echo "kafka.sh: broker on 127.0.0.1:$port (logs: $dir/broker.log); Ctrl-C stops it" >&2
    echo "127.0.0.1:$port"
    exec "${java[@]}" kafka.Kafka "$dir/server.properties"
  fi
  rm -f "$dir/broker.log"  # readiness is read from the new log only
  nohup "${java[@]}" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
  echo $! >"$dir/broker.pid"
  local i
  for i in $(seq 1 600); do
    kill -0 "$(cat "$dir/broker.pid")" 2>/dev/null \
      || { tail -n 30 "$dir/broker.log" "$dir/stdout.log" >&2 || true; die "broker exited"; }
    if port_open "$port" && grep -q "Kafka Server started" "$dir/broker.log" 2>/dev/null; then
      echo "127.0.0.1:$port"
      return
    fi
    sleep 0.1
  done
  die "broker did not start within 60 s; see $dir/broker.log"
}

cmd_stop() {
  local dir="${TMPDIR:-/tmp}/ragstream-kafka"
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir="$2"; shift 2 ;;
      *) die "unknown option for stop: $1" ;;
    esac
  done
  [ -f "$dir/broker.pid" ] || die "no $dir/broker.pid: nothing to stop"
  local pid i
  pid="$(cat "$dir/broker.pid")"
  if ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $dir/"; then
    rm -f "$dir/broker.pid"  # the broker is gone (and its pid may belong to another process)
    return
  fi
  kill -TERM "$pid" 2>/dev/null || { rm -f "$dir/broker.pid"; return; }
  for i in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$dir/broker.pid"; return; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/broker.pid"
  echo "kafka.sh: broker did not stop within 15 s; killed" >&2
}

case "${1:-}" in
  fetch) shift; cmd_fetch "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
