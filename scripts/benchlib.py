"""What the benchmarks that start servers share: a free port on 127.0.0.1, waiting until a server listens, stopping
it, and the Python client pointed at it."""
import os
import socket
import subprocess
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


def stop_server(process, log):
    """Stops a server started by a benchmark (killed if it does not end within 30 s), and closes its log."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


def client_for(url):
    """google-cloud-storage's client, anonymous, pointed at the server at `url`."""
    os.environ["STORAGE_EMULATOR_HOST"] = url
    os.environ["DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA"] = "true"
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    return storage.Client(project="bench", credentials=AnonymousCredentials())
