"""Task images: a Terminal-Bench/Harbor task's own Dockerfile built with buildah, on stand-in bases,
and episodes run in that image under the existing jail.

store.py (where images live, how podman/buildah are called), bases.py (stand-ins built from the
Debian mirror), registry.py (build-time registry mounts), build.py (a task's image, its grader
layer, the cache), grader_layer.py (the tests' runner, installed packages), check.py (`tasks check
--runtime image` rows), rootfs.py (an episode's idmapped layers + overlay), grading.py (the grader
in the image, tamper checks), runtime.py (ImageTaskRuntime), tasks.py (task folders as image Tasks).
docs/task-images.md is the user's guide.
"""
