#!/usr/bin/env bash
# A single-node SLURM cluster on this host for CI: `slurm-cluster.sh start` installs the Debian
# packages when missing (root), writes /etc/slurm/slurm.conf for the host's real CPUs and
# memory (no accounting database), starts munged, slurmctld and slurmd in the background and
# waits for the node to be idle; `slurm-cluster.sh stop` stops exactly the daemons it started.
# The plugin's job step drops every SLURM_* variable, so SLURM_CONF alone is not enough: the
# configuration has to be at the default path.
set -euo pipefail
STATE=${SLURM_CI_STATE:-/tmp/omnisocial-slurm-ci}
CONF=/etc/slurm/slurm.conf

start() {
    if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
        || ! command -v sinfo >/dev/null; then
        [ "$(id -u)" = 0 ] || { echo "slurm-cluster: need root to install slurmctld slurmd munge" >&2; exit 1; }
        echo "slurm-cluster: installing slurmctld slurmd munge"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            slurmctld slurmd slurm-client munge >/dev/null
    fi
    mkdir -p "$STATE" /etc/slurm /var/spool/slurmctld /var/spool/slurmd /run/munge /var/log/slurm
    if [ -e "$CONF" ] && ! grep -q '^# omnisocial CI' "$CONF"; then
        echo "slurm-cluster: $CONF exists and was not written by this script; not touching it" >&2
        exit 1
    fi
    local host node_line
    host=$(hostname -s)
    # the node exactly as slurmd sees it (CPUs, sockets, cores, memory), less a little memory
    node_line=$(slurmd -C | head -1)
    local mem
    mem=$(sed -nE 's/.*RealMemory=([0-9]+).*/\1/p' <<<"$node_line")
    node_line=$(sed -E "s/RealMemory=[0-9]+/RealMemory=$((mem * 9 / 10))/" <<<"$node_line")
    cat >"$CONF" <<EOF
# omnisocial CI: single-node cluster written by .ci/slurm-cluster.sh (removed by 'stop')
ClusterName=omnisocial-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
# squeue status checks see a finished job only this long after it ends: at least the plugin's
# longest status interval (180 s) plus a margin, or a job ending between two checks is never
# seen and the run hangs (omnisocial.slurm checks it at start-up). 300 is SLURM's default.
MinJobAge=300
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
$node_line State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    # munge: key from the package (create one if absent), daemon as the munge user
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
        chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    fi
    chown munge:munge /run/munge
    if ! munge -n >/dev/null 2>&1; then
        runuser -u munge -- munged
        # munged writes its pid to /run/munge/munged.pid whatever it is told; keep a copy
        for _ in $(seq 1 20); do [ -s /run/munge/munged.pid ] && break; sleep 0.2; done
        cp /run/munge/munged.pid "$STATE/munged.pid"
        echo munged >>"$STATE/started"
    fi
    slurmctld -f "$CONF"
    echo slurmctld >>"$STATE/started"
    slurmd -f "$CONF"
    echo slurmd >>"$STATE/started"
    local i
    for i in $(seq 1 60); do
        if sinfo -h -N -o '%t' 2>/dev/null | grep -q '^idle'; then
            sinfo
            return 0
        fi
        sleep 1
    done
    echo "slurm-cluster: node not idle after 60 s" >&2
    sinfo -N -l >&2 || true
    tail -20 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true
    exit 1
}

stop() {
    local d pid
    [ -f "$STATE/started" ] || return 0
    # reverse start order: slurmd, slurmctld, munged
    for d in $(tac "$STATE/started"); do
        pid=$(cat "$STATE/$d.pid" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        fi
    done
    rm -f "$STATE/started"
    if grep -q '^# omnisocial CI' "$CONF" 2>/dev/null; then rm -f "$CONF"; fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
