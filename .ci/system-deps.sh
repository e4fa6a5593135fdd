#!/usr/bin/env bash
# Debian tools the workflow calls: ffmpeg/ffprobe (media) and espeak-ng (demo voices).
set -euo pipefail
missing=()
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
command -v ffprobe >/dev/null 2>&1 || missing+=(ffmpeg)
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
[ ${#missing[@]} -eq 0 ] && exit 0
packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: $packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null
else
    echo "omnisocial needs these programs on PATH: $packages" >&2
    echo "install them with your package manager (Debian/Ubuntu: sudo apt-get install $packages)," >&2
    echo "or use 'snakemake --use-conda', whose envs bring ffmpeg." >&2
    exit 1
fi
