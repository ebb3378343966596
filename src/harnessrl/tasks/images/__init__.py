"""Task images: a Terminal-Bench/Harbor task's own Dockerfile built with buildah, on stand-in bases.

store.py (where images live, how podman/buildah are called), bases.py (stand-ins built from the
Debian mirror), registry.py (build-time registry mounts), build.py (a task's image, its grader
layer, the cache). docs/task-images.md is the user's guide.
"""
