#!/usr/bin/env bash
# Debian tools the workflow calls: ffmpeg/ffprobe (media), espeak-ng (demo voices), node/npm (jsPsych
# for the rating experiment) and chromium with its driver (headless, for the tests that open the HTML
# report and run the rating experiment; --no-install-recommends keeps it small), and pdflatex
# (texlive-latex-base: tests/test_paper.py compiles every paper macro).
set -euo pipefail
missing=()
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
command -v ffprobe >/dev/null 2>&1 || missing+=(ffmpeg)
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
# node and npm: make web-deps installs jsPsych (package-lock.json) for the rating experiment
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# chromium is optional: installed where apt-get can (CI runs as root), else the report test skips
# chromium-driver: the rating experiment's browser tests drive chromium through it (Selenium)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
    # pdflatex, optional as chromium: the paper numbers' test compiles every macro (else it skips)
    command -v pdflatex >/dev/null 2>&1 || missing+=(texlive-latex-base)
fi
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
