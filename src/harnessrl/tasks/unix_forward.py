"""The in-sandbox forwarder of the rootless episode network (unix_net.py). Standard library only.

    python3 forward.py PORT SOCKET -- PROGRAM ARGS...

Runs inside the episode's sandbox, in the sandbox's own fresh network namespace (only `lo`):
listens on 127.0.0.1:PORT there, starts PROGRAM as its child, and relays every connection to
SOCKET, the Unix socket the host's gateway serves (bound read-only into the sandbox). It exits
with the program's exit code (128 + N for a signal), and passes SIGTERM/SIGINT/SIGHUP on.

This file is copied into the episode's gateway folder and run from there: the harnessrl package
itself is hidden from the sandbox.
"""

import os
import signal
import socket
import subprocess
import sys
import threading


def _pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _relay(conn, path):
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:  # the gateway is gone (the episode ended): the program sees a dropped connection
        conn.close()
        up.close()
        return
    back = threading.Thread(target=_pump, args=(up, conn), daemon=True)
    back.start()
    _pump(conn, up)
    back.join()
    conn.close()
    up.close()


def _serve(listener, path):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        # the gateway writes headers and body separately: no Nagle delay on this leg either
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_relay, args=(conn, path), daemon=True).start()


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        print("usage: forward.py PORT SOCKET -- PROGRAM ARGS...", file=sys.stderr)
        return 2
    port, path, command = int(argv[0]), argv[1], argv[3:]
    listener = socket.create_server(("127.0.0.1", port), backlog=64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    child = subprocess.Popen(command)  # stdin, stdout and stderr are the forwarder's own
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _frame: child.send_signal(n))
    code = child.wait()
    listener.close()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
