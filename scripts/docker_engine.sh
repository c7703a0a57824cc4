#!/usr/bin/env bash
# Start a Docker engine for the test suite when none answers, and stop only what it
# started: `docker_engine.sh start` (prints what it did), `docker_engine.sh stop`.
#
# Started as `dockerd --iptables=false`: Docker's iptables rules would set the FORWARD
# policy to DROP and cut the network-namespace hosts the several-hosts tests build; the
# databases run on the host's network (docker-compose.yml), which needs no NAT rule. Its
# pid and log go to ${XDG_CACHE_HOME:-~/.cache}/webbench/dockerd.{pid,log}; `stop` ends that
# process only, waits for it, and removes the docker0 bridge it made.
set -uo pipefail
state="${XDG_CACHE_HOME:-$HOME/.cache}/webbench"
pidfile="$state/dockerd.pid"
mkdir -p "$state"

answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

case "${1:-}" in
  start)
    if answers; then
        echo "docker engine: one answers already ($(docker version --format '{{.Server.Version}}')), left alone"
        exit 0
    fi
    dockerd=$(command -v dockerd || echo /usr/sbin/dockerd)
    if [ ! -x "$dockerd" ]; then
        echo "docker engine: dockerd is not installed (Debian: docker.io, in setup/packages.txt)" >&2
        exit 1
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "docker engine: none answers and starting one needs root" >&2
        exit 1
    fi
    # what dockerd leaves behind when it stops, removed by `stop` if it was not there
    ip link show docker0 >/dev/null 2>&1 || touch "$state/dockerd.made-bridge"
    setsid "$dockerd" --iptables=false >"$state/dockerd.log" 2>&1 < /dev/null &
    echo $! > "$pidfile"
    for _ in $(seq 1 120); do          # its socket answers within seconds; a minute at most
        if answers; then
            echo "docker engine: started dockerd --iptables=false (pid $(cat "$pidfile"))"
            exit 0
        fi
        if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then break; fi
        sleep 0.5
    done
    echo "docker engine: dockerd did not answer; its log:" >&2
    tail -n 20 "$state/dockerd.log" >&2
    kill "$(cat "$pidfile")" 2>/dev/null; rm -f "$pidfile"
    exit 1 ;;
  stop)
    [ -f "$pidfile" ] || exit 0
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        echo "docker engine: stopped the dockerd this suite started (pid $pid)"
    fi
    if [ -f "$state/dockerd.made-bridge" ]; then
        ip link delete docker0 2>/dev/null
        umount /run/docker/netns/default 2>/dev/null
        rm -f "$state/dockerd.made-bridge"
    fi
    rm -f "$pidfile" ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
