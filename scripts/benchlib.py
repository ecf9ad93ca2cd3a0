"""What the benchmarks that start servers share: a free port on 127.0.0.1, and waiting until a server listens."""
import socket
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(port, process):
    for _ in range(500):  # bounded: 10 s
        if process.poll() is not None:
            raise SystemExit("the server ended before it listened")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise SystemExit("the server did not start listening within 10 s")
