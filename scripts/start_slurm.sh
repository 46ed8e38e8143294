#!/usr/bin/env bash
# Start a single-node Slurm cluster on this host (Debian's slurm-wlm) for the slurm launcher tests.
#
# Idempotent: when `sinfo` already answers and this host's node is usable, it does nothing.
# Works inside containers without systemd or cgroup delegation: proctrack/linuxproc,
# TaskPlugin=task/none, no accounting. Needs root (apt-get, daemons).
# Usage: scripts/start_slurm.sh            (env SLURM_START_TIMEOUT=60 to wait longer)
set -euo pipefail

TIMEOUT="${SLURM_START_TIMEOUT:-60}"
CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
MARK="# written by kimi-runbooks scripts/start_slurm.sh"

die() { echo "start_slurm.sh: ERROR: $*" >&2; exit 1; }
say() { echo "start_slurm.sh: $*"; }

node_state() { sinfo -h -N -o '%T' 2>/dev/null | head -n1; }

usable() {
    local state
    state="$(node_state)" || return 1
    case "$state" in
        idle*|mix*|alloc*|completing*) return 0 ;;
        *) return 1 ;;
    esac
}

if command -v sinfo >/dev/null 2>&1 && usable; then
    say "slurm already running: $(sinfo -h -N -o '%N %T %c CPUs' | head -n1)"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (installs slurm-wlm and starts its daemons); try: sudo $0"

start=$(date +%s)

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
    say "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed (no network to the Debian mirror?)"
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null \
        || die "apt-get install slurm-wlm munge failed"
fi

# ---------------------------------------------------------------- munge
if [ ! -s /etc/munge/munge.key ]; then
    say "creating /etc/munge/munge.key"
    mkdir -p /etc/munge
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge
chmod 0400 /etc/munge/munge.key
if ! munge -n </dev/null >/dev/null 2>&1; then
    say "starting munged"
    runuser -u munge -- /usr/sbin/munged --force \
        || die "munged did not start; see /var/log/munge/munged.log"
    for _ in $(seq 1 20); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.25; done
    munge -n </dev/null | unmunge >/dev/null 2>&1 || die "munge does not work; see /var/log/munge/munged.log"
fi

# ---------------------------------------------------------------- slurm.conf
HOST="$(hostname -s)"
mkdir -p "$CONF_DIR" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/slurm
if [ ! -f "$CONF" ] || grep -qF "$MARK" "$CONF"; then
    NODE_LINE="$(slurmd -C 2>/dev/null | head -n1)"
    [ -n "$NODE_LINE" ] || NODE_LINE="NodeName=$HOST CPUs=$(nproc)"
    # one CPU less than the machine is not needed; memory as reported, minus nothing (no mem limits).
    cat >"$CONF" <<EOF
$MARK
ClusterName=kimi
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=5
InactiveLimit=0
MinJobAge=30
$NODE_LINE State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    say "wrote $CONF for node $HOST"
else
    say "keeping existing $CONF (not written by this script)"
fi
# Some slurm builds look for cgroup.conf even with linuxproc; an empty autodetect one is harmless.
[ -f "$CONF_DIR/cgroup.conf" ] || echo "CgroupPlugin=autodetect" >"$CONF_DIR/cgroup.conf"

# ---------------------------------------------------------------- daemons
if ! pgrep -x slurmctld >/dev/null 2>&1; then
    say "starting slurmctld"
    slurmctld -c 2>/dev/null || slurmctld || die "slurmctld did not start; see /var/log/slurm/slurmctld.log"
fi
if ! pgrep -x slurmd >/dev/null 2>&1; then
    say "starting slurmd"
    slurmd || die "slurmd did not start; see /var/log/slurm/slurmd.log"
fi

deadline=$(( $(date +%s) + TIMEOUT ))
while [ "$(date +%s)" -lt "$deadline" ]; do
    state="$(node_state || true)"
    case "$state" in
        idle*|mix*|alloc*) break ;;
        down*|drain*|fail*)
            scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 1
done

if ! usable; then
    echo "--- sinfo"; sinfo -N -l 2>&1 || true
    echo "--- slurmctld.log (tail)"; tail -n 20 /var/log/slurm/slurmctld.log 2>/dev/null || true
    echo "--- slurmd.log (tail)"; tail -n 20 /var/log/slurm/slurmd.log 2>/dev/null || true
    die "slurm node $HOST is not usable after ${TIMEOUT}s (state: ${state:-none})"
fi
say "slurm ready in $(( $(date +%s) - start ))s: $(sinfo -h -N -o '%N %T %c CPUs' | head -n1)"
