#!/usr/bin/env bash
# Debian/Ubuntu packages harnessrl needs beyond PyPI: a real browser for MiniWoB++ and the
# report test, bubblewrap for the agent sandbox, tmux for the Terminus harness, libqt5gui5
# for Procgen (envpool), strace for the MiniWoB network test, EGL + Mesa for MuJoCo offscreen
# rendering (the Meta-World drawer). Installs them when run as root;
# otherwise says what is missing.
set -euo pipefail
pkgs=(chromium chromium-driver bubblewrap tmux libqt5gui5 strace libegl1 libgl1-mesa-dri)
# podman, buildah, runc, debootstrap: task images (src/harnessrl/tasks/images/, docs/task-images.md):
# debootstrap builds stand-in base images from the Debian mirror, buildah builds a task's Dockerfile
# as written, podman mounts an image's root file system; runc because crun refuses hybrid cgroup
# layouts. Kernel overlayfs is used, so fuse-overlayfs is not needed when run as root.
pkgs+=(podman buildah runc debootstrap)
# python3-seccomp: libseccomp's own Python bindings, used once per process through /usr/bin/python3
# to compile the sandbox's syscall filter (src/harnessrl/tasks/seccomp.py, docs/security.md)
pkgs+=(python3-seccomp)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
else
  echo "WARNING: missing Debian packages: ${missing[*]}" >&2
  echo "         install them with: sudo apt-get install -y ${missing[*]}" >&2
  echo "         (without them the sandbox, MiniWoB++ and browser tests cannot run)" >&2
fi
